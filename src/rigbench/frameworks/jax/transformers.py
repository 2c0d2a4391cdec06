"""The transformer workloads in Flax NNX, module for module as frameworks/torch/transformers.py
(see it for the papers and the shared conventions: LayerNorm eps 1e-5, exact GELU, biases,
the GPT head tied to the token embedding, N(0, 0.02) weights). Attribute names are torch's, so
torch weights copy in by name (tests/unit/test_transformer_parity.py).

Attention is `jax.nn.dot_product_attention`, which takes [B, T, heads, d_head] as the qkv
projection lays it out; with no implementation named, XLA's fused attention is used where the
backend has one (cuDNN's on NVIDIA GPUs for fp16/bf16) and the plain XLA softmax(q k^T) v
otherwise. `ATTENTION` names it for the result (software key "attention").
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from rigbench.frameworks.jax import inits
from rigbench.workloads.transformers import VIT_CLASSES, Transformer, gpt_shape, vit_shape

#: What the result records as the attention kernel (software key "attention"): with no
#: implementation named, jax.nn.dot_product_attention runs XLA's softmax(q k^T) v (jax 0.10); its
#: fused cuDNN kernel takes fp16/bf16 only, which this adapter does not train (fp32, tf32).
ATTENTION = "jax.nn.dot_product_attention: xla"
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
        self.ln_1 = _norm(d, rngs)
        self.qkv = _linear(d, 3 * d, rngs)
        self.proj = _linear(d, d, rngs)
        self.ln_2 = _norm(d, rngs)
        self.fc = _linear(d, shape.mlp, rngs)
        self.out = _linear(shape.mlp, d, rngs)

    def attention(self, x: jax.Array) -> jax.Array:
        b, t, d = x.shape
        qkv = self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads)  # torch's split of the 3d
        y = jax.nn.dot_product_attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], is_causal=self.causal)
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

