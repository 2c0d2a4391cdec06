"""Parameter and training-FLOP counts of the keras-torch step: the trainer's own step (Keras'
`train_on_batch`, or the GAN's autograd step) at a batch of 2 on the CPU, its second call run
under torch's FlopCounterMode (the first builds Keras' train function, tracing on the meta
device, which the counter would also see). Counted as frameworks/torch/flops.py counts:
matmuls and convolutions, forward and the backward passes autograd runs. Unlike torch's
counter this runs the step for real (Keras' torch backend does not build on the meta device),
so it needs the memory of a batch of 2.
"""

from __future__ import annotations

from typing import Any

from torch.utils.flop_counter import FlopCounterMode

from rigbench.frameworks.keras_torch.trainer import KerasTorchTrainer
from rigbench.frameworks.torch.flops import CPU_ATTENTION_FLOPS
from rigbench.spec import TrialSpec
from rigbench.workloads import Workload

#: Batch size of the counting step; per-sample FLOPs are the total divided by it.
COUNT_BATCH = 2


def step_flops(trainer: KerasTorchTrainer) -> float:
    """Training FLOPs per sample of one step of `trainer` (which has taken a step already)."""
    with FlopCounterMode(display=False, custom_mapping=CPU_ATTENTION_FLOPS) as counter:
        trainer.step()
    return counter.get_total_flops() / int(trainer.synthetic()[0].shape[0])


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample) of one fp32 training step."""
    spec = TrialSpec(workload=workload.name, framework="keras-torch", device="cpu", batch_size=COUNT_BATCH,
                     workload_options=options)
    trainer = KerasTorchTrainer(spec, workload)
    trainer.step()  # builds Keras' train function (traced on the meta device: not to be counted)
    return trainer.params, step_flops(trainer)
