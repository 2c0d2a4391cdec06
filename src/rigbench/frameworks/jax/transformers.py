"""The transformer workloads in Flax NNX, module for module as frameworks/torch/transformers.py
(see it for the papers and the shared conventions: LayerNorm eps 1e-5, exact GELU, biases,
the GPT head tied to the token embedding, N(0, 0.02) weights). Attribute names are torch's, so
torch weights copy in by name (tests/unit/test_transformer_parity.py).

Attention is `jax.nn.dot_product_attention`, which takes [B, T, heads, d_head] as the qkv
projection lays it out. With no implementation named it runs XLA's softmax(q k^T) v (jax 0.10
picks nothing else); cuDNN's fused (flash) kernel must be asked for, and takes bf16/fp16 on an
NVIDIA GPU only: `attention_kernel` asks for it where a bf16 trial's attention compiles with it,
forward and backward, and the trainer sets that on every block (`set_attention`), so the kernel
the result records (software key "attention") is the one that ran.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

import jax
import jax.numpy as jnp
from flax import nnx

from rigbench.frameworks.jax import inits
from rigbench.frameworks.jax.precision import compute_dtype
from rigbench.workloads.transformers import VIT_CLASSES, Transformer, gpt_shape, vit_shape

#: What a result records as the attention kernel (software key "attention"), by implementation.
KERNEL_PREFIX = "jax.nn.dot_product_attention: "
LN_EPS = 1e-5
_NORMAL = inits.normal(0.0, 0.02)


def _linear(n_in: int, n_out: int, rngs: nnx.Rngs) -> nnx.Linear:
    return nnx.Linear(n_in, n_out, kernel_init=_NORMAL, bias_init=inits.zeros, rngs=rngs)


def _norm(width: int, rngs: nnx.Rngs) -> nnx.LayerNorm:
    return nnx.LayerNorm(width, epsilon=LN_EPS, scale_init=inits.ones, bias_init=inits.zeros, rngs=rngs)


class Block(nnx.Module):
    """A pre-norm block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, shape: Transformer, rngs: nnx.Rngs):
        d = shape.width
        self.heads, self.causal = shape.heads, shape.causal
        self.implementation: Literal["cudnn"] | None = None  # jax.nn.dot_product_attention's own choice: XLA
        self.ln_1 = _norm(d, rngs)
        self.qkv = _linear(d, 3 * d, rngs)
        self.proj = _linear(d, d, rngs)
        self.ln_2 = _norm(d, rngs)
        self.fc = _linear(d, shape.mlp, rngs)
        self.out = _linear(shape.mlp, d, rngs)

    def attention(self, x: jax.Array) -> jax.Array:
        b, t, d = x.shape
        qkv = self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads)  # torch's split of the 3d
        y = jax.nn.dot_product_attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], is_causal=self.causal,
                                         implementation=self.implementation)
        return self.proj(y.reshape(b, t, d))

    def __call__(self, x: jax.Array) -> jax.Array:
        x = x + self.attention(self.ln_1(x))
        return x + self.out(nnx.gelu(self.fc(self.ln_2(x)), approximate=False))


class GPT(nnx.Module):
    """GPT-2 as nanoGPT writes it: logits [B, T, vocab] of tokens [B, T]."""

    def __init__(self, options: dict[str, Any], rngs: nnx.Rngs):
        shape = gpt_shape(options)
        self.wte = nnx.Embed(int(options["vocab"]), shape.width, embedding_init=_NORMAL, rngs=rngs)
        self.wpe = nnx.Embed(shape.tokens, shape.width, embedding_init=_NORMAL, rngs=rngs)
        self.blocks = nnx.List([Block(shape, rngs) for _ in range(shape.layers)])
        self.ln_f = _norm(shape.width, rngs)

    def __call__(self, tokens: jax.Array) -> jax.Array:
        x = self.wte(tokens) + self.wpe(jnp.arange(tokens.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.wte.attend(self.ln_f(x))  # the head is the token embedding


class ViT(nnx.Module):
    """The Vision Transformer on NCHW images: the patch convolution runs on NHWC (XLA's
    layout), whose row-major patches are torch's order."""

    def __init__(self, options: dict[str, Any], rngs: nnx.Rngs):
        shape, p = vit_shape(options), int(options["patch"])
        self.patch = nnx.Conv(3, shape.width, (p, p), strides=p, padding="VALID",
                              kernel_init=_NORMAL, bias_init=inits.zeros, rngs=rngs)
        self.cls = nnx.Param(jnp.zeros((1, 1, shape.width)))
        self.pos = nnx.Param(_NORMAL(rngs.params(), (1, shape.tokens, shape.width)))
        self.blocks = nnx.List([Block(shape, rngs) for _ in range(shape.layers)])
        self.ln_f = _norm(shape.width, rngs)
        self.head = _linear(shape.width, VIT_CLASSES, rngs)

    def __call__(self, images: jax.Array) -> jax.Array:
        x = self.patch(jnp.transpose(images, (0, 2, 3, 1)))
        x = x.reshape(x.shape[0], -1, x.shape[-1])  # [B, patches, d]
        cls = jnp.broadcast_to(self.cls[...], (x.shape[0], 1, x.shape[-1]))
        x = jnp.concatenate([cls, x], axis=1) + self.pos[...]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x)[:, 0])


def gpt(options: dict[str, Any], rngs: nnx.Rngs) -> nnx.Module:
    return GPT(options, rngs)


def vit(options: dict[str, Any], rngs: nnx.Rngs) -> nnx.Module:
    return ViT(options, rngs)



def attention_kernel(device: jax.Device, precision: str, shape: Transformer | None) -> str | None:
    """The implementation a transformer of `shape` runs attention with on `device` at
    `precision` ("cudnn" or "xla"; None when there is no transformer)."""
    if shape is None:
        return None
    dtype = compute_dtype(precision)  # cuDNN's fused kernel takes bf16/fp16 only
    if device.platform != "gpu" or dtype is None:
        return "xla"
    dims = (1, shape.tokens, shape.heads, shape.width // shape.heads)  # heads, length, width decide; not the batch
    return "cudnn" if _compiles_fused(device, dims, jnp.dtype(dtype).name, shape.causal) else "xla"


@functools.cache
def _compiles_fused(device: jax.Device, dims: tuple[int, ...], dtype: str, causal: bool) -> bool:
    """Whether cuDNN's fused attention compiles for these dimensions, forward and backward
    (cuDNN's version and the head width decide; it raises where it cannot)."""
    def loss(q: jax.Array) -> jax.Array:
        out = jax.nn.dot_product_attention(q, q, q, is_causal=causal, implementation="cudnn")
        return out.astype(jnp.float32).sum()

    try:
        with jax.default_device(device):
            jax.jit(jax.grad(loss)).lower(jax.ShapeDtypeStruct(dims, dtype)).compile()
    except Exception:  # noqa: BLE001 - any refusal means XLA's kernel
        return False
    return True


def set_attention(model: nnx.Module, implementation: str | None) -> None:
    """Every block of `model` runs attention with `implementation` (no-op without blocks)."""
    if implementation is None:
        return
    for _, module in nnx.iter_modules(model):
        if isinstance(module, Block):
            module.implementation = "cudnn" if implementation == "cudnn" else None
