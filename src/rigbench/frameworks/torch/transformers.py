"""The transformer workloads in PyTorch: GPT (decoder-only, nanoGPT's layout) and ViT.

Attention runs through `F.scaled_dot_product_attention` (SDPA), which picks torch's fused
kernel (flash, memory-efficient, cuDNN, or the CPU's flash kernel) for the device and dtype;
`attention` names the one a trial runs, for its result (software key "attention"). Shapes
come from rigbench.workloads.transformers (gpt_shape, vit_shape), so the analytic counts and these
builders read one plan. Conventions every
framework's builder shares (the parity tests rely on them): LayerNorm eps 1e-5, exact (erf)
GELU, biases everywhere, the GPT head tied to the token embedding, N(0, 0.02) initial weights.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rigbench.workloads.transformers import VIT_CLASSES, Transformer, gpt_shape, vit_shape

LN_EPS = 1e-5


class Block(nn.Module):
    """A pre-norm block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, shape: Transformer):
        super().__init__()
        d = shape.width
        self.heads, self.causal = shape.heads, shape.causal
        self.ln_1 = nn.LayerNorm(d, eps=LN_EPS)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d, eps=LN_EPS)
        self.fc = nn.Linear(d, shape.mlp)
        self.out = nn.Linear(shape.mlp, d)

    def attention(self, x: Tensor) -> Tensor:
        b, t, d = x.shape
        # [B, T, 3d] -> three [B, heads, T, d_head]
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attention(self.ln_1(x))
        return x + self.out(F.gelu(self.fc(self.ln_2(x))))


def _init(module: nn.Module) -> None:
    """GPT-2's initialisation: N(0, 0.02) weights, zero biases (LayerNorm keeps 1 and 0)."""
    if isinstance(module, nn.Linear | nn.Embedding | nn.Conv2d):
        nn.init.normal_(module.weight, std=0.02)
        if not isinstance(module, nn.Embedding) and module.bias is not None:
            nn.init.zeros_(module.bias)


class GPT(nn.Module):
    """Radford et al. 2019's GPT-2 as nanoGPT writes it: logits [B, T, vocab] of tokens [B, T]."""

    def __init__(self, options: dict[str, Any]):
        super().__init__()
        shape = gpt_shape(options)
        self.wte = nn.Embedding(int(options["vocab"]), shape.width)
        self.wpe = nn.Embedding(shape.tokens, shape.width)
        self.blocks = nn.ModuleList(Block(shape) for _ in range(shape.layers))
        self.ln_f = nn.LayerNorm(shape.width, eps=LN_EPS)
        self.apply(_init)

    def forward(self, tokens: Tensor) -> Tensor:
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)  # the head is the token embedding


class ViT(nn.Module):
    """Dosovitskiy et al. 2021's Vision Transformer: p x p patches embedded by a stride-p
    convolution, a learned class token and position embedding, pre-norm blocks, a final
    LayerNorm and a linear head on the class token."""

    def __init__(self, options: dict[str, Any]):
        super().__init__()
        shape, p = vit_shape(options), int(options["patch"])
        self.patch = nn.Conv2d(3, shape.width, p, stride=p)
        self.cls = nn.Parameter(torch.zeros(1, 1, shape.width))
        self.pos = nn.Parameter(torch.zeros(1, shape.tokens, shape.width))
        self.blocks = nn.ModuleList(Block(shape) for _ in range(shape.layers))
        self.ln_f = nn.LayerNorm(shape.width, eps=LN_EPS)
        self.head = nn.Linear(shape.width, VIT_CLASSES)
        self.apply(_init)
        nn.init.normal_(self.pos, std=0.02)

    def forward(self, images: Tensor) -> Tensor:
        x = self.patch(images).flatten(2).transpose(1, 2)  # [B, patches, d], rows first
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x)[:, 0])


def gpt(options: dict[str, Any]) -> nn.Module:
    return GPT(options)


def vit(options: dict[str, Any]) -> nn.Module:
    return ViT(options)


#: SDPA's backend ops (what scaled_dot_product_attention dispatches to) -> the kernel's name.
_SDPA_KERNELS = {
    "_scaled_dot_product_flash_attention": "flash",
    "_scaled_dot_product_flash_attention_for_cpu": "flash (cpu)",
    "_scaled_dot_product_efficient_attention": "memory-efficient",
    "_scaled_dot_product_cudnn_attention": "cudnn",
    "_scaled_dot_product_fused_attention_overrideable": "fused (device's own)",
}
#: TrialSpec.precision -> the dtype attention runs at (autocast casts q, k, v to it).
DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def sdpa_kernel(call: Callable[[], Any]) -> str:
    """The kernel SDPA runs in `call`: the backend op it dispatches to, seen by a dispatch
    mode; "math" when it falls back to the unfused softmax(q k^T) v."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[str] = []

    class Spy(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            seen.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with Spy():
        call()
    return next((_SDPA_KERNELS[op] for op in seen if op in _SDPA_KERNELS), "math")


def attention(device: str, precision: str, shape: Transformer) -> str:
    """The attention kernel a transformer of `shape` runs on `device` at `precision`: SDPA
    probed on one sequence (heads, tokens, head width, mask and dtype decide the kernel, not
    the batch)."""
    q = torch.zeros(1, shape.heads, shape.tokens, shape.width // shape.heads, device=device,
                    dtype=DTYPES.get(precision, torch.float32), requires_grad=True)
    return f"torch sdpa: {sdpa_kernel(lambda: F.scaled_dot_product_attention(q, q, q, is_causal=shape.causal))}"
