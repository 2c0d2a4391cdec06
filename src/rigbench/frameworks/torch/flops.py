"""Parameter and training-FLOP counts, from the real model, without real memory.

The model and a batch of 2 are built on torch's "meta" device (shapes only, no storage),
and one training step -- the same `models.training_step` the trainer times, so both
updates for dcgan -- runs its forward and backward passes under
`torch.utils.flop_counter.FlopCounterMode`. That counts matrix multiplies and
convolutions (2 FLOPs per multiply-add, forward and the backward passes autograd actually
runs) and nothing else: element-wise ops, normalisation, pooling and the optimiser update
are not counted; for these networks they are a few percent at most.

Counting on "meta" also sidesteps a pitfall: on CPU, nn.LSTM runs through a fused oneDNN
kernel that FlopCounterMode scores as 0, while on meta it decomposes into countable matmuls.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from rigbench.frameworks.torch import models
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
        batch = models.synthetic_batch(workload, COUNT_BATCH, "meta")
    model.train()
    with FlopCounterMode(display=False) as counter:
        models.training_step(workload.name, model, batch, _backward_only, nullcontext)
    return models.trainable_params(model), counter.get_total_flops() / COUNT_BATCH


def lstm_analytic_train_flops(seq: int, hidden: int, layers: int, vocab: int, batch: int) -> int:
    """Matmul FLOPs of one training step of the LSTM language model, for `batch` sequences.

    Forward, per token: each layer computes its four gates from its input and its previous
    hidden state, 2*4*(in+H)*H FLOPs (in = H here: the embedding has width H), and the
    decoder 2*H*vocab. The embedding lookup is indexing, not a matmul.
    Backward: every matmul needs its weight gradient (= forward FLOPs) and, with one
    exception, its input gradient (= forward FLOPs again). Layer 0's input gradient *is*
    computed, because the embedding weights require grad. The exception: the initial
    hidden state h(0) is a constant zero tensor, so no layer computes the gradient w.r.t.
    it -- 2*4*H*H FLOPs per sequence and layer fewer than 3x forward.
    """
    forward_per_token = layers * 2 * 4 * (hidden + hidden) * hidden + 2 * hidden * vocab
    forward = forward_per_token * seq * batch
    skipped_h0_grads = layers * 2 * 4 * hidden * hidden * batch
    return 3 * forward - skipped_h0_grads
