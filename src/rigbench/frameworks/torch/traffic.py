"""Estimated memory traffic of a training step, counted on the meta device (no real memory).

An ESTIMATE for the roofline (analysis/roofline.py), defined as follows. One training step
-- the same `step.training_step` the trainer times, with backward but no optimiser update,
as for the FLOP count -- runs on the "meta" device under a dispatch mode that sees every
aten operation. Each operation is counted as reading every tensor it is given and writing
every tensor it returns, from and to device memory: eager execution with no kernel fusion
and no cache reuse between operations. View operations (reshape, transpose, detach, ...)
move no data and are skipped. A tensor's bytes are its elements times their size, capped at
its storage (a broadcast bias is read once, not once per row).

Traffic is linear in the batch size, so the step is counted at two batch sizes and split
into a per-step part (weights read by the forward and backward passes, gradients written:
~3x the parameter bytes for plain networks; more where weights are read again, e.g. every
time step of an LSTM) and a per-sample part (activations and their gradients). A trial's
`bytes_per_sample` is then (per_step + per_sample x batch) / batch (runner/child.py).
The optimiser update's traffic is added per step by roofline.py. Everything is counted at
fp32, whatever the trial's precision.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from rigbench.frameworks.torch import models, step
from rigbench.workloads import Workload, resolved_options

#: The two batch sizes whose difference gives the per-sample traffic.
COUNT_BATCHES = (2, 4)


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
        if not getattr(func, "is_view", False):
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


def step_traffic(workload: Workload, options: dict[str, Any], batch_size: int) -> TrafficCounter:
    """The counted traffic of one training step (forward, loss, backward) at `batch_size`."""
    with torch.device("meta"):
        model = models.build_model(workload.name, resolved_options(workload, options))
        batch = step.synthetic_batch(workload, batch_size, "meta")
    model.train()
    with TrafficCounter() as counter:
        step.training_step(workload, model, batch, _backward_only, nullcontext)
    return counter


def count_traffic(workload: Workload, options: dict[str, Any]) -> tuple[float, float]:
    """(bytes per step, bytes per sample) of a forward and backward pass, fitted exactly from
    two batch sizes: traffic(b) = per_step + per_sample * b."""
    small, large = COUNT_BATCHES
    at_small = step_traffic(workload, options, small).total
    per_sample = (step_traffic(workload, options, large).total - at_small) / (large - small)
    return at_small - per_sample * small, per_sample

