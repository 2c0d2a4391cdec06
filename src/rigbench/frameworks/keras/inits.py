"""Keras initialisers drawn on the host by numpy, for the builders in models.py and
transformers.py.

Why: on the jax backend every Keras random initialiser is an eager `jax.random` call, which
compiles an XLA program per new shape (about 0.3 s each on a 2-core CPU): building the DCGAN
took 5.6 s of its 6 s there. numpy draws the same distributions with no compilation, and on
every backend alike. The draws come from numpy's global stream, which the trainer seeds with
`set_random_seed(spec.seed)` (Keras' own, below) before building, so a seed still fixes every value.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import keras
import numpy as np


class HostDraw(keras.initializers.Initializer):
    """One of three distributions, drawn by numpy: `uniform` on [a, b), `normal` with mean a and
    standard deviation b, or `kaiming_fan_out`: torch's kaiming_normal_(mode="fan_out") for a
    kernel whose last axis is the output, N(0, 2 / fan_out) with fan_out = prod(kernel window) * out."""

    def __init__(self, kind: str, a: float = 0.0, b: float = 0.0) -> None:
        if kind not in ("uniform", "normal", "kaiming_fan_out"):
            raise ValueError(f"unknown distribution {kind!r}")
        self.kind, self.a, self.b = kind, a, b

    def __call__(self, shape: Any, dtype: Any = None) -> Any:
        shape = tuple(int(n) for n in shape)
        if self.kind == "uniform":
            values = np.random.uniform(self.a, self.b, shape)
        elif self.kind == "normal":
            values = np.random.normal(self.a, self.b, shape)
        else:
            values = np.random.normal(0.0, math.sqrt(2.0 / (math.prod(shape[:-2]) * shape[-1])), shape)
        dtype = keras.backend.standardize_dtype(dtype or keras.config.floatx())
        return keras.ops.convert_to_tensor(values.astype(dtype), dtype=dtype)

    def get_config(self) -> dict[str, Any]:
        return {"kind": self.kind, "a": self.a, "b": self.b}


def uniform(bound: float) -> HostDraw:
    """U(-bound, bound), torch's default for weights and biases (bound = 1/sqrt(fan_in))."""
    return HostDraw("uniform", -bound, bound)


def normal(mean: float, std: float) -> HostDraw:
    """N(mean, std^2)."""
    return HostDraw("normal", mean, std)


def kaiming_normal_fan_out() -> HostDraw:
    """torch's kaiming_normal_(mode="fan_out", nonlinearity="relu")."""
    return HostDraw("kaiming_fan_out")


def set_random_seed(seed: int) -> None:
    """keras.utils.set_random_seed(seed) without importing TensorFlow into a process on another
    backend. Keras seeds TensorFlow too wherever it is installed (for tf.data pipelines, which
    rigbench does not use), and importing it for that took 2-5 s of every keras-torch and
    keras-jax process on a 2-core VM. For that call an import of TensorFlow fails, so Keras takes
    it as absent (and keeps taking it so: on these backends it uses TensorFlow only for tf.data,
    text preprocessing layers and SavedModel export, none of them ours); Python's, numpy's and
    Keras' own seeds are set as ever."""
    if keras.backend.backend() == "tensorflow" or "tensorflow" in sys.modules:
        keras.utils.set_random_seed(seed)
        return
    sys.modules["tensorflow"] = None  # type: ignore[assignment]  # `import tensorflow` raises ImportError
    try:
        keras.utils.set_random_seed(seed)
    finally:
        del sys.modules["tensorflow"]
