"""The transformer workloads' shape (gpt, vit), analytic training FLOPs and parameters, and the
activation memory a sequence keeps for its backward pass (max-batch's check on its fitted model).

Stated once here for workloads/flops.py (the figures of record) and the builders of every
framework (frameworks/*/transformers.py), under flops.py's convention: matmuls only, 2 FLOPs
per multiply-add, forward + weight gradients + input gradients.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rigbench.errors import UsageError


@dataclass(frozen=True)
class Transformer:
    """The shape of a stack of pre-norm transformer blocks (GPT, ViT): `layers` blocks of
    width `width` with `heads` heads and an MLP of `mlp` units, on sequences of `tokens`,
    attending to earlier tokens only if `causal`."""

    layers: int
    heads: int
    width: int
    mlp: int
    tokens: int
    causal: bool = False

    def __post_init__(self) -> None:
        if min(self.layers, self.heads, self.width, self.mlp, self.tokens) < 1 or self.width % self.heads:
            raise UsageError(f"a transformer needs positive sizes and a width ({self.width}) that its "
                             f"heads ({self.heads}) divide")

    def block_params(self) -> int:
        """One block: LayerNorm (2d), qkv (3d^2 + 3d), projection (d^2 + d), LayerNorm (2d), MLP
        (d m + m, m d + d): 12 d^2 + 13 d for m = 4d."""
        d, m = self.width, self.mlp
        return 2 * d + 3 * d * d + 3 * d + d * d + d + 2 * d + d * m + m + m * d + d

    def matmul_weights(self) -> int:
        """The weights that multiply every token (qkv, projection, MLP): PaLM's N for the blocks."""
        return self.layers * (4 * self.width * self.width + 2 * self.width * self.mlp)

    def activation_values(self) -> tuple[int, int]:
        """(values every layer stack keeps per sequence for the backward pass, of which the
        attention scores): Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
        Transformer Models", section 4.1) without dropout, per layer: both LayerNorms' inputs
        (2 T d), the qkv input (T d), q and k (2 T d), v (T d), the projection's input (T d),
        the MLP's input (T d), GELU's input and output (2 T m), and the softmax's output
        (H T^2), which a fused kernel does not keep (it keeps H T log-sum-exps instead): their
        34 T d + 5 H T^2 bytes in 16 bits less dropout's 2 T d + 3 H T^2, for m = 4d. Linear
        in T, and quadratic through the scores: why a gpt's memory per sample depends on its
        context."""
        t, d = self.tokens, self.width
        per_layer = 8 * t * d + 2 * t * self.mlp
        scores = self.heads * t * t
        return self.layers * (per_layer + scores), self.layers * scores

    def attention_train_flops(self) -> int:
        """Per sequence, fwd + bwd: q k^T and a v are 2 T^2 d multiply-adds a layer, over the
        whole T x T score matrix (a causal mask saves none of it in the count, as in PaLM's
        12 L H d_head T per token), each backward twice the forward: 12 L T^2 d."""
        return 12 * self.layers * self.tokens * self.tokens * self.width


def _checked(name: str, options: dict[str, Any], sizes: tuple[str, ...], parts: tuple[tuple[str, str], ...]) -> None:
    """Refuse, naming the option and what it may be, a size under 1 or a (`part`, `whole`) pair
    whose part does not divide the whole: `gpt:context=0` used to be told only that "a transformer
    needs positive sizes and a width (128) that its heads (4) divide", naming neither."""
    for key in sizes:
        if int(options[key]) < 1:
            raise UsageError(f"option {key}={options[key]} of {name!r} must be a whole number of at least 1")
    for part, whole in parts:
        total = int(options[whole])
        if total % int(options[part]):
            small = [k for k in range(1, math.isqrt(total) + 1) if total % k == 0]  # not a loop to a width of 10**9
            divisors = ", ".join(map(str, sorted({*small, *(total // k for k in small)})))
            raise UsageError(f"option {part}={options[part]} of {name!r} must divide {whole}={total}: "
                             f"one of {divisors}")


def gpt_shape(options: dict[str, Any]) -> Transformer:
    _checked("gpt", options, ("layers", "heads", "width", "context", "vocab"), (("heads", "width"),))
    width = int(options["width"])
    return Transformer(int(options["layers"]), int(options["heads"]), width, 4 * width, int(options["context"]),
                       causal=True)


def gpt_train_flops(options: dict[str, Any]) -> int:
    """PaLM's training FLOPs of one sequence (Chowdhery et al. 2022, appendix B): 6 N T + 12 L H
    d_head T^2, with N the matmul weights a token passes: the blocks' 12 L d^2 and the head's
    d V. The head is tied to the token embedding, so the embedding is counted once, as the head
    (its lookup is indexing); position embeddings, biases and LayerNorms are not counted
    (nanoGPT's estimate_mfu puts biases and LayerNorms in N: 6 (13 L + 2) d per token more,
    0.1% of GPT-2 small). 6 = forward 2 + weight gradients 2 + input gradients 2, all taken:
    the first block's input gradient feeds the embeddings, which train."""
    shape = gpt_shape(options)
    n = shape.matmul_weights() + shape.width * int(options["vocab"])
    return 6 * n * shape.tokens + shape.attention_train_flops()


def gpt_params(options: dict[str, Any]) -> int:
    """Token and position embeddings, the blocks, the final LayerNorm; the head is the token
    embedding (tied): 124,475,904 for GPT-2 small at vocabulary 50,304 (nanoGPT's 124M)."""
    shape = gpt_shape(options)
    d = shape.width
    return int(options["vocab"]) * d + shape.tokens * d + shape.layers * shape.block_params() + 2 * d


def vit_shape(options: dict[str, Any]) -> Transformer:
    _checked("vit", options, ("layers", "heads", "width", "mlp", "image", "patch"), (("heads", "width"), ("patch", "image")))
    image, patch = int(options["image"]), int(options["patch"])
    patches = (image // patch) ** 2
    return Transformer(int(options["layers"]), int(options["heads"]), int(options["width"]),
                       int(options["mlp"]), patches + 1)  # + the class token


#: Classes of the ViT's head (CIFAR-10's; the 224-pixel presets keep them: synthetic images).
VIT_CLASSES = 10


def vit_train_flops(options: dict[str, Any]) -> int:
    """One image: the patch embedding (a p x p convolution of stride p, no input gradient: its
    input is the data), the blocks on patches + 1 tokens (6 N T + 12 L T^2 d as for the GPT)
    and the head on the class token only."""
    shape, p = vit_shape(options), int(options["patch"])
    patch_embed = 3 * p * p * shape.width * (shape.tokens - 1)
    return 4 * patch_embed + 6 * shape.matmul_weights() * shape.tokens + shape.attention_train_flops() \
        + 6 * shape.width * VIT_CLASSES


def vit_params(options: dict[str, Any]) -> int:
    """Patch embedding (3 p^2 d + d), class token (d), position embedding ((patches + 1) d), the
    blocks, the final LayerNorm (2d), the head (d x 10 + 10)."""
    shape, p = vit_shape(options), int(options["patch"])
    d = shape.width
    return (3 * p * p * d + d + d + shape.tokens * d + shape.layers * shape.block_params() + 2 * d
            + d * VIT_CLASSES + VIT_CLASSES)


_SHAPES: dict[str, Callable[[dict[str, Any]], Transformer]] = {"gpt": gpt_shape, "vit": vit_shape}


def activation_bytes(name: str, resolved: dict[str, Any], value_bytes: int) -> tuple[float, float] | None:
    """(bytes one sample keeps for its backward pass, of which attention scores) for workload
    `name` with resolved options, at `value_bytes` per value (4 in fp32, 2 under bf16/fp16
    autocast); None for a workload that is no transformer. The blocks (Transformer.
    activation_values) plus, for the gpt, its logits and their softmax (2 T V values). An
    estimate: a framework's temporaries and allocator rounding come on top, and a fused
    attention kernel saves the scores part."""
    shape = shape_of(name, resolved)
    if shape is None:
        return None
    values, scores = shape.activation_values()
    if name == "gpt":
        values += 2 * shape.tokens * int(resolved["vocab"])
    return float(values * value_bytes), float(scores * value_bytes)


def shape_of(name: str, resolved: dict[str, Any]) -> Transformer | None:
    """The attention stack of workload `name` with its resolved options (UsageError for a shape
    they cannot build), None for a workload that is no transformer. Imports nothing of
    rigbench.workloads, which calls it when it parses a workload's options."""
    plan = _SHAPES.get(name)
    return plan(resolved) if plan else None
