"""Estimated memory traffic of a training step, counted on fake tensors (no real memory).

An ESTIMATE for the roofline (analysis/roofline.py), defined as follows. One training step
-- the same `step.training_step` the trainer times, with backward but no optimiser update,
as for the FLOP count -- runs on fake CPU tensors (shapes and dtypes, no data) under a
dispatch mode that sees every aten operation. Each operation is counted as reading every
tensor it is given and writing every tensor it returns, from and to device memory: eager
execution with no cache reuse between operations. View operations (reshape, transpose,
detach, ...) move no data and are skipped. A tensor's bytes are its elements times their
size, capped at its storage (a broadcast bias is read once, not once per row).

Element sizes are the ones the trial's precision moves: a bf16/fp16 step runs under torch's
autocast (CPU's casting rules, whatever the trial's device), so matmul and convolution inputs
and outputs are 2 bytes, the casts autocast makes are counted (fp32 weights to 2-byte copies
each forward, their 2-byte gradients back to fp32), and the fp32 weights and gradients stay 4
bytes. The kernels are the ones torch dispatches on a CPU: attention is
`scaled_dot_product_attention`'s fused kernel, which never writes the sequence x sequence
matrix (as flash, memory-efficient and cuDNN attention do on a GPU), and an LSTM's input
projection is one matmul per sequence (as cuDNN does); oneDNN is turned off, so the LSTM's
gates stay counted operation by operation whatever CPU makes the count.

Traffic is linear in the batch size, so the step is counted at two batch sizes and split
into a per-step part (weights read by the forward and backward passes, gradients written:
~3x the parameter bytes for plain networks at fp32; more where weights are read again, e.g.
every time step of an LSTM, and the autocast casts at bf16/fp16) and a per-sample part
(activations and their gradients). A trial's `bytes_per_sample` is then
(per_step + per_sample x batch) / batch (runner/child.py). The optimiser update's traffic
(fp32 master weights and state, whatever the precision) is added per step by roofline.py.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import partial
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from rigbench.frameworks.torch import models, step
from rigbench.workloads import Workload, resolved_options

#: The two batch sizes whose difference gives the per-sample traffic.
COUNT_BATCHES = (2, 4)
#: The precisions that run under autocast, and its dtype; any other (fp32, tf32: TF32 changes
#: the matmul's arithmetic, not what it stores) is counted as built, at fp32.
AUTOCAST_DTYPES: dict[str, torch.dtype] = {"bf16": torch.bfloat16, "fp16": torch.float16}


def tensor_bytes(t: torch.Tensor) -> int:
    """Bytes a kernel touches reading or writing `t`: elements x element size, at most the storage."""
    nbytes = t.numel() * t.element_size()
    try:
        return min(nbytes, t.untyped_storage().nbytes())
    except (RuntimeError, NotImplementedError):  # tensors without a storage (e.g. some subclasses)
        return nbytes


class TrafficCounter(TorchDispatchMode):
    """Sums the bytes every non-view aten op reads (tensor arguments) and writes (outputs)."""

    def __init__(self) -> None:
        super().__init__()
        self.read = 0
        self.written = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        # prim ops are fake tensors' metadata queries (prim.device): no kernel, no traffic
        if not getattr(func, "is_view", False) and func.namespace != "prim":
            inputs, _ = tree_flatten((args, kwargs or {}))
            outputs, _ = tree_flatten(out)
            self.read += sum(tensor_bytes(t) for t in inputs if isinstance(t, torch.Tensor))
            self.written += sum(tensor_bytes(t) for t in outputs if isinstance(t, torch.Tensor))
        return out

    @property
    def total(self) -> int:
        return self.read + self.written


def _backward_only(loss: torch.Tensor, part: str) -> None:
    loss.backward()


def autocast_factory(precision: str) -> Callable[[], AbstractContextManager[Any]]:
    """The autocast the counted step runs under at `precision` (none at fp32/tf32). CPU
    autocast only warns and turns itself off for a dtype it lacks: that would count fp32 bytes
    under a bf16 label, so this raises instead, and the trial stores no estimate."""
    dtype = AUTOCAST_DTYPES.get(precision)
    if dtype is None:
        return nullcontext
    with torch.autocast("cpu", dtype=dtype):
        if not torch.is_autocast_enabled("cpu"):
            raise RuntimeError(f"CPU autocast cannot count {precision} traffic in this torch build")
    return partial(torch.autocast, "cpu", dtype=dtype)


@contextmanager
def _no_onednn() -> Iterator[None]:
    """oneDNN off: its fused RNN would count an LSTM's gates as one opaque kernel, and only on
    CPUs it supports at the precision (bf16 needs AVX-512 BF16), so the count would depend on
    the machine that made it. (Not `torch.backends.mkldnn.flags`: it also sets oneDNN's TF32
    switch, which warns on every count without an Intel GPU.)"""
    enabled = torch._C._get_mkldnn_enabled()  # what torch.backends.mkldnn.enabled reads and sets
    torch._C._set_mkldnn_enabled(False)
    try:
        yield
    finally:
        torch._C._set_mkldnn_enabled(enabled)


def step_traffic(workload: Workload, options: dict[str, Any], batch_size: int,
                 precision: str = "fp32") -> TrafficCounter:
    """The counted traffic of one training step (forward, loss, backward) at `batch_size`
    and `precision`. Fake CPU tensors rather than the meta device: autocast acts only on a
    real device type's tensors, and a fake tensor is one without memory."""
    with FakeTensorMode(), _no_onednn():
        with torch.device("cpu"):
            model = models.build_model(workload.name, resolved_options(workload, options))
            batch = step.synthetic_batch(workload, batch_size, "cpu")
        model.train()
        with TrafficCounter() as counter:
            step.training_step(workload, model, batch, _backward_only, autocast_factory(precision))
    return counter


def count_traffic(workload: Workload, options: dict[str, Any], precision: str = "fp32") -> tuple[float, float]:
    """(bytes per step, bytes per sample) of a forward and backward pass at `precision`,
    fitted exactly from two batch sizes: traffic(b) = per_step + per_sample * b."""
    small, large = COUNT_BATCHES
    at_small = step_traffic(workload, options, small, precision).total
    per_sample = (step_traffic(workload, options, large, precision).total - at_small) / (large - small)
    return at_small - per_sample * small, per_sample
