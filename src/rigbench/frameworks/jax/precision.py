"""Training precision in the JAX adapter.

fp32 and tf32 set XLA's default matmul precision ("highest" is true fp32: XLA on an NVIDIA GPU
otherwise multiplies fp32 in TF32). bf16 is mixed precision, what torch's autocast amounts to
for these networks: the parameters, their gradients, the optimiser state and the update stay
float32; the forward and backward passes compute in bfloat16 (matmuls and convolutions
accumulating in float32). Two Flax mechanisms together give that:
- every layer that has a computation dtype (`dtype`: Linear, Conv, Embed, the norms) gets
  bfloat16, so it casts its input and parameters and returns bfloat16 (a batch norm's output
  too, which float32 running statistics would otherwise promote back to float32); Flax computes
  normalisation statistics in float32 whatever the dtype;
- the step casts the float32 parameters to bfloat16 as it applies the model (`cast`), which
  reaches the layers written here with raw parameters (the LSTM, the transposed convolution,
  the ViT's class token and positions); the cast is differentiated, so the gradients arrive
  float32.
The loss is taken in float32 on the model's output (step.output_loss). fp16 would need loss
scaling as well: not implemented.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from rigbench.errors import UnsupportedError
from rigbench.frameworks.jax.devices import device_name

#: precision -> XLA's default matmul precision for float32 operands.
_MATMUL_PRECISION = {"fp32": "highest", "tf32": "tensorfloat32", "bf16": "highest"}
#: precision -> the dtype the forward and backward passes compute in, where not float32.
COMPUTE_DTYPES: dict[str, Any] = {"bf16": jnp.bfloat16}


def set_precision(device: jax.Device, precision: str) -> None:
    """Set the matmul precision of `precision`; UnsupportedError for one this adapter or the
    device lacks (TF32 needs an NVIDIA GPU of compute capability 8.0 or later)."""
    if precision not in _MATMUL_PRECISION:
        raise UnsupportedError(f"{precision} training is not implemented in the JAX adapter "
                               f"({', '.join(_MATMUL_PRECISION)} are)")
    if precision == "tf32":
        capability = float(getattr(device, "compute_capability", 0) or 0)
        if device.platform != "gpu" or capability < 8.0:
            raise UnsupportedError(f"tf32 is an NVIDIA GPU format (Ampere and later); not on {device_name(device)}")
    jax.config.update("jax_default_matmul_precision", _MATMUL_PRECISION[precision])


def compute_dtype(precision: str) -> Any | None:
    """The dtype a trial at `precision` computes in; None for float32."""
    return COMPUTE_DTYPES.get(precision)


def set_layer_dtypes(model: nnx.Module, dtype: Any | None) -> None:
    """Every layer with a computation dtype computes in `dtype` (None: leave them float32);
    its parameters stay float32 (their `param_dtype`)."""
    if dtype is None:
        return
    for _, module in nnx.iter_modules(model):
        if hasattr(module, "dtype") and hasattr(module, "param_dtype"):
            module.dtype = dtype


def cast(tree: Any, dtype: Any | None) -> Any:
    """`tree` with its floating arrays in `dtype` (None: unchanged); integers (token ids,
    labels) and RNG keys as they were."""
    if dtype is None:
        return tree
    return jax.tree.map(lambda a: a.astype(dtype) if jnp.issubdtype(a.dtype, jnp.floating) else a, tree)


def like(tree: Any, reference: Any) -> Any:
    """`tree` with every floating array in the dtype of its counterpart in `reference`: the
    non-parameter state (batch-norm statistics) keeps its dtypes from step to step."""
    return jax.tree.map(lambda a, r: a.astype(r.dtype) if jnp.issubdtype(a.dtype, jnp.floating) else a,
                        tree, reference)
