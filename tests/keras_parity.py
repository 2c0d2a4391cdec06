"""The Keras side of the parity checks against torch, computed by the Keras-family contract
child (tests/contract/keras_child.py calls `found`) and asserted by tests/contract/keras_family.py
on its report: Keras fixes its backend at its first import, so a backend's checks run in the one
child its framework's contract starts anyway, not in a child of their own.

- The Keras networks (frameworks/keras/models.py) are torch's networks: equal parameter counts
  for every workload, initial weights drawn as torch draws them, the same outputs when torch's
  weights are copied in (float32 tolerance), and torch's loss curve from ten steps of the
  adapter's own step. Under tensorflow and keras-torch (NETWORKS); the models are written in
  keras.layers/keras.ops only, so keras-jax runs the same code (its parameter counts are checked
  by the contract itself).
- gpt and vit on torch's weights (tests/unit/test_transformer_parity.py's Keras check, its
  keras_case), under all three.

Nothing heavy is imported at the top: the contract modules parametrize on TRANSFORMER_IDS
(and FORWARD) at collection, where torch may not be installed."""

from __future__ import annotations

import importlib.util
from typing import Any

from tests.loss_curves import CURVE_LR, CURVE_WORKLOADS, curve_batches, torch_curve
from tests.weight_spreads import spreads

#: Small options where a workload has them, to keep the test quick.
OPTIONS = {"resnet": {"depth": 20}, "lstm": {"hidden": 32}, "rcnn": {"width": 32, "steps": 2}}
FORWARD = ["mlp", "autoencoder", "cnn", "resnet", "rcnn", "lstm"]
#: The frameworks whose child compares the networks with torch's (KERAS_BACKEND tensorflow and
#: torch); every Keras-family child compares the transformers.
NETWORKS = ("tensorflow", "keras-torch")
#: The transformer cases of tests/unit/test_transformer_parity.py (two blocks on a short sequence,
#: small images, keep each well under a second), here so that they are known without torch.
TRANSFORMER_CASES = [("gpt", {"context": 16, "vocab": 64}), ("gpt", {"heads": 2}), ("vit", {"image": 16}),
                     ("vit", {"heads": 6, "patch": 8})]
TRANSFORMER_IDS = [f"{name}{options}" for name, options in TRANSFORMER_CASES]


def found(framework: str, adapter: Any, threads: int) -> dict[str, Any] | None:
    """In a Keras-family child: the transformers' keras_case for every case, and under NETWORKS
    what `networks` finds; None without torch (nothing to compare with)."""
    if importlib.util.find_spec("torch") is None:
        return None
    from tests.unit import test_transformer_parity as transformer_parity

    result: dict[str, Any] = {"transformers": transformer_parity.keras_cases()}
    if framework in NETWORKS:
        result.update(networks(adapter, threads))
    return result


def copy_weights(torch_model: Any, keras_model: Any) -> None:
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


def networks(adapter: Any, threads: int) -> dict[str, Any]:
    """Every workload's parameter counts and initial spreads (Keras', torch's), FORWARD's outputs
    on torch's weights, and CURVE_WORKLOADS' curves (`curve`). A curve's workload is built once:
    its trainer's parts (seeded and built as the others, below) are also the ones counted, drawn
    and run forward here, before `curve` copies torch's weights in again."""
    import keras
    import numpy as np
    import torch

    from rigbench.frameworks.keras import inits, models
    from rigbench.frameworks.torch import models as torch_models
    from rigbench.spec import TrialSpec
    from rigbench.workloads import WORKLOADS, resolved_options

    params, forward, initial, curves = {}, {}, {}, {}
    for name, workload in WORKLOADS.items():
        options = resolved_options(workload, OPTIONS.get(name, {}))
        torch.manual_seed(0)
        torch_model = torch_models.build_model(name, options)
        trainer = None
        if name in CURVE_WORKLOADS:  # the trainer seeds Keras with spec.seed and builds its parts as below
            spec = TrialSpec(workload=name, framework=adapter.NAME, device="cpu", batch_size=16, lr=CURVE_LR,
                             threads=threads, workload_options=OPTIONS.get(name, {}), seed=3)
            trainer = adapter.build(spec, workload)
            parts = trainer.parts
        else:
            inits.set_random_seed(3)  # as the trainer seeds it: the initialisers draw from numpy's stream
            parts = models.build_parts(workload, options)
        params[name] = [models.trainable_params(parts), torch_models.trainable_params(torch_model)]
        initial[name] = [spreads(keras.ops.convert_to_numpy(v.value) for part in parts.values()
                                 for v in part.trainable_weights),
                         spreads(p.detach().numpy() for p in torch_model.parameters())]
        if name in FORWARD:
            (keras_model,) = parts.values()
            for m in torch_model.modules():  # running statistics away from 0 and 1, so evaluation mode tests them
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.5, 0.5)
                    m.running_var.uniform_(0.5, 2.0)
            copy_weights(torch_model, keras_model)
            torch_model.eval()
            generator = torch.Generator().manual_seed(1)
            if workload.layout == "tokens":
                x = torch.randint(0, workload.vocab or 2, (3, workload.input_shape[0]), generator=generator)
            else:
                x = torch.randn((3, *workload.input_shape), generator=generator)
            with torch.no_grad():
                expected = torch_model(x).numpy()
            got = keras.ops.convert_to_numpy(keras_model(keras.ops.convert_to_tensor(x.numpy()), training=False))
            forward[name] = {"shape": [list(got.shape), list(expected.shape)],
                             "max_abs": float(np.abs(expected).max()), "max_abs_diff": float(np.abs(got - expected).max())}
        if trainer is not None:
            curves[name] = curve(trainer, name)
    return {"params": params, "forward": forward, "initial": initial, "workloads": list(WORKLOADS), "curves": curves}


def curve(trainer: Any, name: str) -> list[list[float]]:
    """[torch's curve, the Keras adapter's]: ten steps of each from torch's weights at seed 0
    (copied into `trainer`, a Keras adapter's trainer of `name` at CURVE_LR, on the child's
    threads) on the same batches."""
    import torch

    from rigbench.frameworks.torch import models as torch_models
    from rigbench.workloads import WORKLOADS, resolved_options

    torch.manual_seed(0)
    torch_model = torch_models.build_model(name, resolved_options(WORKLOADS[name], OPTIONS.get(name, {})))
    copy_weights(torch_model, trainer.parts["model"])
    batches = curve_batches(name)
    got = [trainer.run_step(trainer.to_device(x.numpy()), trainer.to_device(y.numpy()))[0] for x, y in batches]
    return [torch_curve(name, torch_model, batches), trainer.loss_values(got)]
