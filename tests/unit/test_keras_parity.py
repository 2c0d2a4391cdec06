"""The Keras networks (frameworks/keras/models.py) are torch's networks: equal parameter counts
for every workload, initial weights drawn as torch draws them, and the same outputs when
torch's weights are copied in (float32 tolerance). Keras fixes its backend at import, so the
comparison runs in a child process per backend (`python -m tests.unit.test_keras_parity
BACKEND`), on TensorFlow and torch; the models are written in keras.layers/keras.ops only, so
keras-jax runs the same code (its parameter counts are checked by
tests/contract/keras_family.py). The same child runs the Keras half of
tests/unit/test_transformer_parity.py on its backend. Skipped without keras or torch."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.loss_curves import CURVE_LR, CURVE_WORKLOADS, LOSS_CURVE_RTOL, curve_batches, torch_curve
from tests.unit import test_transformer_parity as transformer_parity
from tests.weight_spreads import assert_same_spreads, spreads

ROOT = Path(__file__).resolve().parents[2]
#: Small options where a workload has them, to keep the test quick.
OPTIONS = {"resnet": {"depth": 20}, "lstm": {"hidden": 32}, "rcnn": {"width": 32, "steps": 2}}
FORWARD = ["mlp", "autoencoder", "cnn", "resnet", "rcnn", "lstm"]
BACKENDS = [b for b in ("tensorflow", "torch") if importlib.util.find_spec(b) is not None]

pytestmark = pytest.mark.skipif(importlib.util.find_spec("keras") is None or importlib.util.find_spec("torch") is None,
                                reason="needs keras and torch")


@pytest.fixture(scope="module", params=BACKENDS)
def found(request) -> dict[str, Any]:
    env = {**os.environ, "KERAS_BACKEND": request.param, "TF_CPP_MIN_LOG_LEVEL": "2"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "tests.unit.test_keras_parity"], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


def test_parameter_counts_equal_torch(found):
    assert set(found["params"]) == set(found["workloads"])
    for name, (keras_params, torch_params) in found["params"].items():
        assert keras_params == torch_params, name


def test_initial_weights_are_drawn_as_torch_draws_them(found):
    """The host-drawn initialisers (frameworks/keras/inits.py) give every large tensor of every
    workload the mean and spread torch's own initialisation gives it."""
    assert set(found["initial"]) == set(found["workloads"])
    for name, (ours, theirs) in found["initial"].items():
        try:
            assert_same_spreads(ours, theirs)
        except AssertionError as error:
            raise AssertionError(f"{name}: {error}") from None


@pytest.mark.parametrize("name", CURVE_WORKLOADS)
def test_ten_sgd_steps_give_torchs_loss_curve(found, name):
    """From torch's weights, ten steps of the adapter's own step (tensorflow: GradientTape under
    tf.function; keras-torch: Keras' train_on_batch) with SGD at CURVE_LR on the same ten
    batches: every step's loss within LOSS_CURVE_RTOL of torch's."""
    expected, got = found["curves"][name]
    assert expected[-1] != expected[0]  # the weights moved: the curve tests the updates too
    assert got == pytest.approx(expected, rel=LOSS_CURVE_RTOL)


@pytest.mark.parametrize("name", FORWARD)
def test_forward_on_torch_weights_agrees(found, name):
    result = found["forward"][name]
    assert result["shape"][0] == result["shape"][1]
    assert result["max_abs_diff"] < 1e-4 + 1e-4 * result["max_abs"], result


@pytest.mark.parametrize("case", transformer_parity.IDS)
def test_transformers_on_torch_weights_agree(found, case):
    """test_transformer_parity's Keras check (gpt and vit: parameters, logits, the attention
    kernel), run by this child so that a backend starts once for both."""
    transformer_parity.check_keras_case(found["transformers"][case])


# --------------------------------------------------------------------------- the child


def _copy_weights(torch_model: Any, keras_model: Any) -> None:
    """torch's weights into the Keras model, layer kind by layer kind in network order:
    Linear (out, in) -> kernel (in, out); Conv2d OIHW -> HWIO; batch norm scale, shift and
    running statistics; embedding as is; LSTM weights transposed."""
    import keras
    import numpy as np
    import torch

    from rigbench.frameworks.keras import models

    def set_(variable: Any, value: Any, *axes: int) -> None:
        array = value.detach().numpy()
        array = np.transpose(array, axes) if axes else array
        assert tuple(variable.shape) == array.shape, (variable.path, variable.shape, array.shape)
        variable.assign(array)

    def walk(layer: Any) -> Any:  # depth first, children in the order they were assigned
        for sub in layer._layers:
            yield sub
            yield from walk(sub)

    flat = list(walk(keras_model))

    def of(kind_torch: type, kind_keras: type) -> list[tuple[Any, Any]]:
        t = [m for m in torch_model.modules() if isinstance(m, kind_torch)]
        k = [m for m in flat if type(m) is kind_keras]
        assert len(t) == len(k), (kind_torch, len(t), len(k))
        return list(zip(t, k, strict=True))

    for t, k in of(torch.nn.Linear, keras.layers.Dense):
        set_(k.kernel, t.weight, 1, 0)
        set_(k.bias, t.bias)
    for t, k in of(torch.nn.Conv2d, keras.layers.Conv2D):
        set_(k.kernel, t.weight, 2, 3, 1, 0)
        if t.bias is not None:
            set_(k.bias, t.bias)
    for t, k in of(torch.nn.BatchNorm2d, keras.layers.BatchNormalization):
        for variable, value in ((k.gamma, t.weight), (k.beta, t.bias), (k.moving_mean, t.running_mean),
                                (k.moving_variance, t.running_var)):
            set_(variable, value)
    for t, k in of(torch.nn.Embedding, keras.layers.Embedding):
        set_(k.embeddings, t.weight)
    lstms = [m for m in torch_model.modules() if isinstance(m, torch.nn.LSTM)]
    for i, layer in enumerate(m for m in flat if isinstance(m, models.LSTMLayer)):
        for name in ("ih", "hh"):
            set_(getattr(layer, f"w_{name}"), getattr(lstms[0], f"weight_{name}_l{i}"), 1, 0)
            set_(getattr(layer, f"b_{name}"), getattr(lstms[0], f"bias_{name}_l{i}"))


def _child() -> dict[str, Any]:
    import keras
    import numpy as np
    import torch

    from rigbench.frameworks.keras import models
    from rigbench.frameworks.torch import models as torch_models
    from rigbench.workloads import WORKLOADS, resolved_options

    params, forward, initial = {}, {}, {}
    for name, workload in WORKLOADS.items():
        options = resolved_options(workload, OPTIONS.get(name, {}))
        torch.manual_seed(0)
        torch_model = torch_models.build_model(name, options)
        keras.utils.set_random_seed(3)  # as the trainer seeds it: the initialisers draw from numpy's stream
        parts = models.build_parts(workload, options)
        params[name] = [models.trainable_params(parts), torch_models.trainable_params(torch_model)]
        initial[name] = [spreads(keras.ops.convert_to_numpy(v.value) for part in parts.values()
                                 for v in part.trainable_weights),
                         spreads(p.detach().numpy() for p in torch_model.parameters())]
        if name not in FORWARD:
            continue
        (keras_model,) = parts.values()
        for m in torch_model.modules():  # running statistics away from 0 and 1, so evaluation mode tests them
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
        _copy_weights(torch_model, keras_model)
        torch_model.eval()
        generator = torch.Generator().manual_seed(1)
        if workload.layout == "tokens":
            x = torch.randint(0, workload.vocab or 2, (3, workload.input_shape[0]), generator=generator)
        else:
            x = torch.randn((3, *workload.input_shape), generator=generator)
        with torch.no_grad():
            expected = torch_model(x).numpy()
        got = keras.ops.convert_to_numpy(keras_model(keras.ops.convert_to_tensor(x.numpy()), training=False))
        forward[name] = {"shape": [list(got.shape), list(expected.shape)], "max_abs": float(np.abs(expected).max()),
                         "max_abs_diff": float(np.abs(got - expected).max())}
    return {"params": params, "forward": forward, "initial": initial, "workloads": list(WORKLOADS), "curves": _curves(),
            "transformers": transformer_parity.keras_cases()}


#: The adapter whose training step a backend's curve runs.
ADAPTERS = {"tensorflow": "tensorflow", "torch": "keras-torch"}


def _curves() -> dict[str, list[list[float]]]:
    """workload -> [torch's curve, the Keras adapter's], from the same weights and batches."""
    import keras
    import torch

    from rigbench.frameworks import load_adapter
    from rigbench.frameworks.torch import models as torch_models
    from rigbench.spec import TrialSpec
    from rigbench.workloads import WORKLOADS, resolved_options

    adapter = load_adapter(ADAPTERS[keras.backend.backend()])
    curves = {}
    for name in CURVE_WORKLOADS:
        workload = WORKLOADS[name]
        torch.manual_seed(0)
        torch_model = torch_models.build_model(name, resolved_options(workload, OPTIONS.get(name, {})))
        spec = TrialSpec(workload=name, framework=adapter.NAME, device="cpu", batch_size=16, lr=CURVE_LR,
                         threads=2, workload_options=OPTIONS.get(name, {}))
        trainer = adapter.build(spec, workload)
        _copy_weights(torch_model, trainer.parts["model"])
        batches = curve_batches(name)
        got = [trainer.run_step(trainer.to_device(x.numpy()), trainer.to_device(y.numpy()))[0] for x, y in batches]
        curves[name] = [torch_curve(name, torch_model, batches), trainer.loss_values(got)]
    return curves


if __name__ == "__main__":
    print("RESULT " + json.dumps(_child()))
