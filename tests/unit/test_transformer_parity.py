"""The transformer workloads (gpt, vit) are one network in every framework: on torch's weights,
copied in by attribute name, the same logits at float32 within TOLERANCE (max absolute
difference; the logits are O(1)), and the same parameter count, which also equals the analytic
one. Equal FLOPs per framework are the contract suite's check (each adapter's counter equals
workloads/flops.py's figure, tests/contract/). Skipped without torch or the other framework.

JAX is checked here. Keras fixes its backend at import, so its half (keras_case, check_keras_case)
runs in the Keras-family contract child of each backend, the one tests/contract/keras_child.py
starts anyway (tensorflow, keras-jax, keras-torch), and is asserted by
tests/contract/keras_family.py's test_transformers_on_torch_weights_agree."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rigbench.frameworks.torch import models as torch_models  # noqa: E402
from rigbench.workloads import WORKLOADS, resolved_options, shaped  # noqa: E402
from rigbench.workloads.flops import trainable_params  # noqa: E402
from tests.keras_parity import TRANSFORMER_CASES as CASES  # noqa: E402
from tests.keras_parity import TRANSFORMER_IDS as IDS  # noqa: E402

#: Max absolute difference of the logits on shared weights at float32: the attention and
#: LayerNorm reductions run in another order in each framework (about 1e-6 seen).
TOLERANCE = 1e-4


def _torch(name: str, options: dict[str, Any]) -> tuple[torch.nn.Module, np.ndarray, dict[str, Any]]:
    """torch's model at seed 0, its inputs (3 samples) and the resolved options."""
    resolved = resolved_options(WORKLOADS[name], options)
    torch.manual_seed(0)
    model = torch_models.build_model(name, resolved).eval()
    workload = shaped(WORKLOADS[name], options)
    generator = torch.Generator().manual_seed(1)
    if workload.layout == "tokens":
        x = torch.randint(0, workload.vocab or 2, (3, workload.input_shape[0]), generator=generator)
    else:
        x = torch.randn((3, *workload.input_shape), generator=generator)
    return model, x.numpy(), resolved


def _path(root: Any, name: str) -> Any:
    """`blocks.0.qkv` -> root.blocks[0].qkv."""
    for part in name.split("."):
        root = root[int(part)] if part.isdigit() else getattr(root, part)
    return root


def _layout(array: np.ndarray) -> np.ndarray:
    """A torch weight in the other frameworks' layout: Linear (out, in) -> (in, out), Conv2d
    OIHW -> HWIO; a bias as it is."""
    if array.ndim == 2:
        return array.T
    if array.ndim == 4:
        return np.transpose(array, (2, 3, 1, 0))
    return array


def _torch_weights(model: Any, root: Any, embedding: str, norm: tuple[str, str]) -> Iterator[tuple[str, Any, np.ndarray]]:
    """(torch key, the other framework's variable, torch's array in its layout) for every weight
    of `model`, the variable found under the same attribute path in `root`: a Linear/Conv
    weight is its `kernel`, an Embedding's table is `embedding`, a LayerNorm's weight and bias
    are `norm`, a bare parameter (the ViT's class token and position embedding) is itself."""
    for key, value in model.state_dict().items():
        owner, _, leaf = key.rpartition(".")
        module = _path(model, owner) if owner else model
        target = _path(root, owner) if owner else root
        array = value.numpy()
        if isinstance(module, torch.nn.Embedding):
            variable = getattr(target, embedding)
        elif isinstance(module, torch.nn.LayerNorm):
            variable = getattr(target, norm[0] if leaf == "weight" else norm[1])
        elif isinstance(module, torch.nn.Linear | torch.nn.Conv2d):
            variable, array = getattr(target, "kernel" if leaf == "weight" else "bias"), _layout(array)
        else:
            variable = getattr(target, leaf)
        yield key, variable, array


@pytest.mark.parametrize("name,options", CASES, ids=IDS)
def test_jax_matches_torch_on_torch_weights(name, options):
    pytest.importorskip("flax")
    import jax.numpy as jnp
    from flax import nnx

    from rigbench.frameworks.jax import models as jax_models

    model, x, resolved = _torch(name, options)
    jax_model = jax_models.build_model(name, resolved)
    # Flax names: an Embedding's table is `embedding`, a LayerNorm's weight its `scale`
    for key, variable, array in _torch_weights(model, jax_model, "embedding", ("scale", "bias")):
        assert variable[...].shape == array.shape, key
        variable[...] = jnp.asarray(array)
    assert jax_models.trainable_params(jax_model) == torch_models.trainable_params(model) \
        == trainable_params(WORKLOADS[name], resolved)
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
    got = np.asarray(nnx.jit(lambda m, x: m(x))(jax_model, jnp.asarray(x)))
    assert got.shape == expected.shape
    assert np.abs(got - expected).max() < TOLERANCE, np.abs(got - expected).max()


def test_the_attention_kernel_is_named_for_transformers_only():
    """What the child stores as software["attention"]: the op SDPA dispatched to on the CPU."""
    from rigbench.frameworks import load_adapter
    from rigbench.spec import TrialSpec

    adapter = load_adapter("torch")
    for name, kernel in (("gpt", "torch sdpa: flash (cpu)"), ("vit", "torch sdpa: flash (cpu)"), ("mlp", None)):
        spec = TrialSpec(workload=name, framework="torch", device="cpu", batch_size=2)
        assert adapter.attention(spec, WORKLOADS[name]) == kernel


# --------------------------------------------------------------------------- Keras
# Run by the Keras-family contract child (tests/keras_parity.py), checked by keras_family.py.


def keras_case(name: str, options: dict[str, Any]) -> dict[str, Any]:
    """In a child with KERAS_BACKEND set: the Keras model on torch's weights, its parameters
    (Keras', torch's, analytic) and the max absolute difference of its logits from torch's."""
    import keras

    from rigbench.frameworks.keras import models as keras_models

    model, x, resolved = _torch(name, options)
    keras_model = keras_models.BUILDERS[name](resolved)
    assert isinstance(keras_model, keras.Model)
    root = keras_model.layers[0]  # the GPT or ViT layer after the Input
    # Keras names: an Embedding's table is `embeddings`, a LayerNorm's are gamma and beta
    for key, variable, array in _torch_weights(model, root, "embeddings", ("gamma", "beta")):
        assert tuple(variable.shape) == array.shape, key
        variable.assign(array)
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
    def forward(inputs: Any) -> Any:
        return keras_model(inputs, training=False)

    if keras.backend.backend() == "jax":  # as one program, as its trainer runs it: eagerly, every op
        import jax  # compiles on its own, 2-3 s a case on a 2-core VM (0.8 s so)

        forward = jax.jit(forward)
    got = keras.ops.convert_to_numpy(forward(x.astype("int32") if name == "gpt" else x))
    from rigbench.frameworks.keras import backend_adapter
    from rigbench.spec import TrialSpec

    kernel = backend_adapter.attention(keras.backend.backend(), TrialSpec(
        workload=name, framework="keras-torch", device="cpu", batch_size=2, workload_options=options), WORKLOADS[name])
    return {"attention": kernel, "params": [keras_models.trainable_params({"model": keras_model}), torch_models.trainable_params(model),
                       trainable_params(WORKLOADS[name], resolved)],
            "shapes": [list(got.shape), list(expected.shape)], "max_diff": float(np.abs(got - expected).max())}


def keras_cases() -> dict[str, dict[str, Any]]:
    """keras_case for every case, in a child with KERAS_BACKEND set."""
    return {case: keras_case(name, options) for case, (name, options) in zip(IDS, CASES, strict=True)}


def check_keras_case(found: dict[str, Any]) -> None:
    """One keras_case: equal parameters (Keras', torch's, analytic), equal logits within
    TOLERANCE, and an attention kernel named."""
    keras_params, torch_params, analytic = found["params"]
    assert keras_params == torch_params == analytic
    assert found["shapes"][0] == found["shapes"][1]
    assert found["max_diff"] < TOLERANCE, found["max_diff"]
    assert found["attention"].endswith(("flash (cpu)", "xla", "no fused kernel")), found["attention"]

