"""Parameter and training-FLOP counts, from the real model, without real memory.

The model and a batch of 2 are built on torch's "meta" device (shapes only, no storage),
and one training step -- the same `step.training_step` the trainer times, so both
updates for a GAN -- runs its forward and backward passes under
`torch.utils.flop_counter.FlopCounterMode`. That counts matrix multiplies and
convolutions (2 FLOPs per multiply-add, forward and the backward passes autograd actually
runs) and nothing else: element-wise ops, normalisation, pooling and the optimiser update
are not counted; for these networks they are a few percent at most. This is the adapter's
own counter; the figure of record is the workload's analytic one (rigbench.workloads.flops,
which states the same convention), and tests/contract/ checks that the two agree.

Counting on "meta" also sidesteps a pitfall: on CPU, nn.LSTM runs through a fused oneDNN
kernel that FlopCounterMode scores as 0, while on meta it decomposes into countable matmuls.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from rigbench.frameworks.torch import models, step
from rigbench.workloads import Workload, resolved_options

#: Batch size of the counting step; per-sample FLOPs are the total divided by it.
COUNT_BATCH = 2


def _backward_only(loss: torch.Tensor, part: str) -> None:
    """The counting stand-in for an update: backward, no optimiser (its FLOPs are not counted)."""
    loss.backward()


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample) of one training step at fp32."""
    with torch.device("meta"):
        model = models.build_model(workload.name, resolved_options(workload, options))
        batch = step.synthetic_batch(workload, COUNT_BATCH, "meta")
    model.train()
    with FlopCounterMode(display=False) as counter:
        step.training_step(workload, model, batch, _backward_only, nullcontext)
    return models.trainable_params(model), counter.get_total_flops() / COUNT_BATCH

