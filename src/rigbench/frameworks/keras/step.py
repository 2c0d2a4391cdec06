"""The framework-neutral half of a Keras training step, driven by the workload's declared facts
(rigbench.workloads): synthetic batches, losses and predictions in keras.ops, the optimisers
and the precision policies. Each backend's step (tensorflow/step.py, keras_jax/step.py,
keras_torch/step.py) and the shared loops use these tables, so the three Keras adapters train
the same thing. Nothing here knows a workload by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import numpy as np
from keras import ops

from rigbench.errors import UnsupportedError
from rigbench.workloads import Workload

# --------------------------------------------------------------------------- data


def latent_noise(workload: Workload, batch_size: int, rng: np.random.Generator) -> np.ndarray:
    """z ~ N(0, 1) [B, latent_size, 1, 1] (float32)."""
    assert workload.latent_size is not None, f"{workload.name} declares no latent size"
    return rng.standard_normal((batch_size, workload.latent_size, 1, 1), dtype=np.float32)


#: targets kind -> (images, batch size, workload, rng) -> synthetic targets
_SYNTHETIC_TARGETS: dict[str, Callable[[np.ndarray, int, Workload, np.random.Generator], np.ndarray]] = {
    "class_index": lambda x, b, w, rng: rng.integers(0, w.num_classes or 2, b, dtype=np.int32),
    "binary": lambda x, b, w, rng: rng.integers(0, 2, b).astype(np.float32),
    "input": lambda x, b, w, rng: x,
    "latent_noise": lambda x, b, w, rng: latent_noise(w, b, rng),
}


def synthetic_batch(workload: Workload, batch_size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A fixed host batch with the workload's real shapes (images NCHW), as torch's
    synthetic_batch: token ids with the next tokens as targets, or images ~ N(0, 1) (U(0, 1) for
    a unit input range) with targets of the declared kind."""
    rng = np.random.default_rng(seed)
    if workload.layout == "tokens":
        assert workload.vocab is not None, f"{workload.name} declares no vocabulary"
        tokens = rng.integers(0, workload.vocab, (batch_size, workload.input_shape[0] + 1), dtype=np.int32)
        return tokens[:, :-1].copy(), tokens[:, 1:].copy()
    shape = (batch_size, *workload.input_shape)
    x = (rng.random(shape, dtype=np.float32) if workload.input_range == "unit"
         else rng.standard_normal(shape, dtype=np.float32))
    return x, _SYNTHETIC_TARGETS[workload.targets](x, batch_size, workload, rng)


def scale(workload: Workload, images: Any) -> Any:
    """uint8 images -> float32 in the workload's input range: [0, 1] (unit) or [-1, 1]; uint8
    tokens -> int32 ids."""
    if workload.layout == "tokens":
        return ops.cast(images, "int32")
    x = ops.cast(images, "float32") / 255.0
    return x if workload.input_range == "unit" else (x - 0.5) / 0.5


#: targets kind -> (workload, scaled images, labels, rng) -> targets of a real-data batch
REAL_TARGETS: dict[str, Callable[[Workload, Any, Any, np.random.Generator], Any]] = {
    "class_index": lambda w, images, labels, rng: ops.cast(labels, "int32"),
    "binary": lambda w, images, labels, rng: ops.cast(labels, "float32"),
    "input": lambda w, images, labels, rng: images,
    "latent_noise": lambda w, images, labels, rng: ops.convert_to_tensor(latent_noise(w, images.shape[0], rng)),
    "next_tokens": lambda w, tokens, labels, rng: ops.cast(labels, "int32"),
}


# --------------------------------------------------------------------------- loss


def _cross_entropy(out: Any, targets: Any) -> Any:
    logits = ops.reshape(ops.cast(out, "float32"), (-1, out.shape[-1]))
    labels = ops.reshape(ops.cast(targets, "int32"), (-1,))
    return ops.mean(ops.sparse_categorical_crossentropy(labels, logits, from_logits=True))


def bce_logits(out: Any, targets: Any) -> Any:
    """Mean binary cross-entropy of logits against 0/1 targets of the same number of elements."""
    logits = ops.reshape(ops.cast(out, "float32"), (-1,))
    return ops.mean(ops.binary_crossentropy(ops.reshape(ops.cast(targets, "float32"), (-1,)), logits, from_logits=True))


def _mse(out: Any, targets: Any) -> Any:
    return ops.mean(ops.square(ops.cast(out, "float32") - ops.reshape(ops.cast(targets, "float32"), out.shape)))


#: loss kind -> (model output, targets) -> loss, for the single-update kinds. Targets may arrive
#: with a trailing axis of 1 (Keras' compiled loss aligns ranks), hence the reshapes.
LOSSES: dict[str, Callable[[Any, Any], Any]] = {
    "cross_entropy": _cross_entropy,
    "bce_logits": bce_logits,
    "mse": _mse,
    "next_token_ce": _cross_entropy,
}

#: loss kind -> model output -> predicted class, for the accuracy metric
PREDICTIONS: dict[str, Callable[[Any], Any]] = {
    "cross_entropy": lambda out: ops.argmax(out, axis=1),
    "bce_logits": lambda out: ops.cast(out[:, 0] > 0, "int32"),  # one logit: positive means class 1
}


def output_loss(workload: Workload, out: Any, targets: Any) -> Any:
    """The loss of a single-update workload from the model's output (also used to evaluate)."""
    return LOSSES[workload.loss](out, targets)


def keras_loss(workload: Workload) -> Callable[[Any, Any], Any]:
    """The loss as Keras' `compile(loss=...)` calls it: (y_true, y_pred)."""
    fn = LOSSES[workload.loss]
    return lambda y_true, y_pred: fn(y_pred, y_true)


# --------------------------------------------------------------------------- optimiser


#: Workload.optimizer -> Keras optimiser from (lr, the workload's optimizer_args). Keras' SGD
#: with momentum (v = m v - lr g) equals torch's (v = m v + g, w -= lr v) at a constant rate;
#: its Adam takes torch's eps of 1e-8 (Keras' default is 1e-7) but adds it to sqrt(v_hat)
#: scaled by the bias correction (Kingma & Ba's "epsilon hat" form), a negligible difference.
OPTIMIZERS: dict[str, Callable[[float, dict[str, Any]], keras.optimizers.Optimizer]] = {
    "sgd": lambda lr, args: keras.optimizers.SGD(learning_rate=lr, momentum=args["momentum"]),
    "adam": lambda lr, args: keras.optimizers.Adam(learning_rate=lr, beta_1=args["betas"][0],
                                                   beta_2=args["betas"][1], epsilon=1e-8),
}


def make_optimizer(workload: Workload, lr: float, precision: str = "fp32") -> keras.optimizers.Optimizer:
    """The workload's optimiser; under fp16 wrapped in Keras' dynamic loss scaling."""
    optimizer = OPTIMIZERS[workload.optimizer](lr, workload.optimizer_args)
    return keras.optimizers.LossScaleOptimizer(optimizer) if precision == "fp16" else optimizer


# --------------------------------------------------------------------------- precision

#: precision -> Keras dtype policy (tf32 is fp32 with TF32 matmuls, set by the backend)
POLICIES = {"fp32": "float32", "tf32": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}


def set_policy(precision: str, accelerator: bool, device: str) -> None:
    """Keras' global dtype policy for `precision`, set before the model is built. Mixed fp16
    runs on an accelerator only (a CPU's fp16 is mostly emulated by XLA, and its loss scaling is
    only worth measuring where fp16 is fast; torch's CPU fp16 runs, and calibrate measures a CPU
    fp16 matmul peak in any framework); bf16 runs everywhere
    (on a CPU without bf16 units it is emulated, slowly, and measured as such)."""
    if precision not in POLICIES:
        raise UnsupportedError(f"unknown precision {precision!r} for Keras")
    if precision == "fp16" and not accelerator:
        raise UnsupportedError(f"rigbench runs Keras' fp16 mixed precision (with its loss scaling) on GPUs only: on "
                               f"{device} XLA emulates fp16; try --precision bf16 there")
    keras.mixed_precision.set_global_policy(POLICIES[precision])
