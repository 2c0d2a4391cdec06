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
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

from rigbench.frameworks.torch import models, step
from rigbench.workloads import Workload, resolved_options

#: Batch size of the counting step; per-sample FLOPs are the total divided by it.
COUNT_BATCH = 2


def _cpu_sdpa(query: Any, key: Any, value: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    return sdpa_flop_count(query, key, value)


def _cpu_sdpa_backward(grad_out: Any, query: Any, key: Any, value: Any, *args: Any, out_shape: Any = None,
                       **kwargs: Any) -> int:
    return sdpa_backward_flop_count(grad_out, query, key, value)


#: SDPA's CPU flash kernel, which FlopCounterMode (torch 2.13) scores as 0 (its CUDA kernels and
#: the meta device's math path it counts), with the formulas torch uses for the CUDA ones: the
#: full T x T score matrix, as workloads/flops.py counts attention. For counters that run on
#: the CPU (keras-torch's: Keras' torch backend calls SDPA there). torch's backward formula
#: also counts the recomputation of q k^T that a flash backward does (2.5x the forward, not
#: the analytic 2x), so that counter reads 2 L T^2 d per sequence above the analytic figure
#: (1.2% of gpt's tiny preset, well within the contract suite's 5%).
CPU_ATTENTION_FLOPS: dict[Any, Any] = {
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _cpu_sdpa,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward: _cpu_sdpa_backward,
}


def _backward_only(loss: torch.Tensor, part: str) -> None:
    """The counting stand-in for an update: backward, no optimiser (its FLOPs are not counted)."""
    loss.backward()


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample) of one training step at fp32."""
    with torch.device("meta"):
        model = models.build_model(workload.name, resolved_options(workload, options))
        batch = step.synthetic_batch(workload, COUNT_BATCH, "meta")
    model.train()
    with FlopCounterMode(display=False, custom_mapping=CPU_ATTENTION_FLOPS) as counter:
        step.training_step(workload, model, batch, _backward_only, nullcontext)
    return models.trainable_params(model), counter.get_total_flops() / COUNT_BATCH

