"""The transformer workloads in Keras 3 (tensorflow, keras-jax, keras-torch), layer for layer
as frameworks/torch/transformers.py (see it for the papers and the shared conventions:
LayerNorm eps 1e-5, exact GELU, biases, the GPT head tied to the token embedding, N(0, 0.02)
weights). Attribute names are torch's, so torch weights copy in by name
(tests/unit/test_transformer_parity.py).

Attention is `keras.ops.dot_product_attention` on [B, T, heads, d_head], which hands it to the
backend's own: torch's SDPA (keras-torch), `jax.nn.dot_product_attention` (keras-jax, flash
attention where cuDNN offers it), and on tensorflow, which has none, a plain softmax(q k^T) v.
`attention` names the kernel for the result (software key "attention"), by backend.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import layers, ops

from rigbench.frameworks.keras import inits
from rigbench.workloads.transformers import VIT_CLASSES, Transformer, gpt_shape, vit_shape

LN_EPS = 1e-5
_NORMAL = inits.normal(0.0, 0.02)


def _dense(n_out: int) -> layers.Dense:
    return layers.Dense(n_out, kernel_initializer=_NORMAL, bias_initializer="zeros")


def _norm() -> layers.LayerNormalization:
    return layers.LayerNormalization(epsilon=LN_EPS)


class Block(layers.Layer):
    """A pre-norm block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, shape: Transformer, **kwargs: Any):
        super().__init__(**kwargs)
        self.heads, self.causal, self.width = shape.heads, shape.causal, shape.width
        self.ln_1, self.qkv, self.proj = _norm(), _dense(3 * shape.width), _dense(shape.width)
        self.ln_2, self.fc, self.out = _norm(), _dense(shape.mlp), _dense(shape.width)

    def attention(self, x: Any) -> Any:
        t, d = ops.shape(x)[1], self.width
        qkv = ops.reshape(self.qkv(x), (-1, t, 3, self.heads, d // self.heads))  # torch's split of the 3d
        y = ops.dot_product_attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], is_causal=self.causal)
        return self.proj(ops.reshape(y, (-1, t, d)))

    def call(self, x: Any) -> Any:
        x = x + self.attention(self.ln_1(x))
        return x + self.out(ops.gelu(self.fc(self.ln_2(x)), approximate=False))


class GPT(layers.Layer):
    """GPT-2 as nanoGPT writes it: logits [B, T, vocab] of tokens [B, T]."""

    def __init__(self, options: dict[str, Any], **kwargs: Any):
        super().__init__(**kwargs)
        shape = gpt_shape(options)
        init = _NORMAL
        self.wte = layers.Embedding(int(options["vocab"]), shape.width, embeddings_initializer=init)
        self.wpe = layers.Embedding(shape.tokens, shape.width, embeddings_initializer=init)
        self.blocks = [Block(shape) for _ in range(shape.layers)]
        self.ln_f = _norm()

    def call(self, tokens: Any) -> Any:
        x = self.wte(tokens) + self.wpe(ops.arange(ops.shape(tokens)[1]))
        for block in self.blocks:
            x = block(x)
        return ops.matmul(self.ln_f(x), ops.transpose(self.wte.embeddings))  # the head is the token embedding


class ViT(layers.Layer):
    """The Vision Transformer on NCHW images: the patch convolution runs on NHWC (Keras'
    layout), whose row-major patches are torch's order."""

    def __init__(self, options: dict[str, Any], **kwargs: Any):
        super().__init__(**kwargs)
        self.shape_, p = vit_shape(options), int(options["patch"])
        self.patch = layers.Conv2D(self.shape_.width, p, p, kernel_initializer=_NORMAL)
        self.blocks = [Block(self.shape_) for _ in range(self.shape_.layers)]
        self.ln_f = _norm()
        self.head = _dense(VIT_CLASSES)

    def build(self, input_shape: Any) -> None:
        d = self.shape_.width
        self.cls = self.add_weight(shape=(1, 1, d), initializer="zeros", name="cls")
        self.pos = self.add_weight(shape=(1, self.shape_.tokens, d), initializer=_NORMAL,
                                   name="pos")

    def call(self, images: Any) -> Any:
        x = self.patch(ops.transpose(images, (0, 2, 3, 1)))
        x = ops.reshape(x, (-1, self.shape_.tokens - 1, self.shape_.width))  # [B, patches, d]
        cls = ops.broadcast_to(self.cls, (ops.shape(x)[0], 1, self.shape_.width))
        x = ops.concatenate([cls, x], axis=1) + self.pos
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x)[:, 0])


def gpt(options: dict[str, Any]) -> keras.Model:
    return keras.Sequential([keras.Input((int(options["context"]),), dtype="int32"), GPT(options)])


def vit(options: dict[str, Any]) -> keras.Model:
    image = int(options["image"])
    return keras.Sequential([keras.Input((3, image, image)), ViT(options)])


def attention(backend: str, device: str, precision: str, shape: Transformer) -> str:
    """The kernel keras.ops.dot_product_attention runs for a transformer of `shape` (heads,
    tokens, head width, mask, dtype; not the batch) on `device` at `precision`, by backend:
    torch's SDPA op seen by a dispatch mode; on jax, cuDNN's fused kernel when the lowered
    attention calls it, else XLA's; tensorflow has no fused kernel."""
    dims, dtype = (1, shape.tokens, shape.heads, shape.width // shape.heads), _DTYPES.get(precision, "float32")
    if backend == "torch":
        import torch

        from rigbench.frameworks.torch.transformers import DTYPES, sdpa_kernel

        q = torch.zeros(dims, dtype=DTYPES.get(precision, torch.float32), device=device)
        return f"torch sdpa (keras.ops): {sdpa_kernel(lambda: ops.dot_product_attention(q, q, q, is_causal=shape.causal))}"
    if backend == "jax":
        import jax

        index = int(device.partition(":")[2] or 0)
        chosen = jax.devices("cpu")[0] if device == "cpu" else jax.devices()[index]
        with jax.default_device(chosen):
            lowered = jax.jit(lambda q: ops.dot_product_attention(q, q, q, is_causal=shape.causal)).lower(
                jax.ShapeDtypeStruct(dims, dtype)).as_text()
        return "jax (keras.ops): " + ("cudnn flash" if "cudnn" in lowered.lower() else "xla")
    return "tensorflow (keras.ops): softmax(q k^T) v, no fused kernel"


#: TrialSpec.precision -> the dtype Keras' mixed policy computes attention in.
_DTYPES = {"fp32": "float32", "tf32": "float32", "bf16": "bfloat16", "fp16": "float16"}
