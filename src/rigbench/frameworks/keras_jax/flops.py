"""Parameter and training-FLOP counts of the keras-jax step: the stateless step (step.py) of
the trainer's Keras models on its resident batch (a batch of 2 for `count`), traced to a jaxpr
(not run) and counted by the JAX adapter's counter (frameworks/jax/flops.jaxpr_flops: matmuls
and convolutions, its rule)."""

from __future__ import annotations

from typing import Any

import jax

from rigbench.frameworks.jax.flops import jaxpr_flops
from rigbench.frameworks.keras_jax import step
from rigbench.frameworks.keras_jax.trainer import KerasJaxTrainer
from rigbench.spec import TrialSpec
from rigbench.workloads import Workload

#: Batch size of the counting step; per-sample FLOPs are the total divided by it.
COUNT_BATCH = 2


def step_flops(trainer: KerasJaxTrainer) -> float:
    """Training FLOPs per sample of the stateless step on `trainer`'s models and batch."""
    fn = step.make_step(trainer.workload, trainer.parts, trainer.optimizers)
    jaxpr = jax.make_jaxpr(fn)(step.state_of(trainer.parts, trainer.optimizers), *trainer.synthetic())
    return jaxpr_flops(jaxpr.jaxpr) / int(trainer.synthetic()[0].shape[0])


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample) of one fp32 training step."""
    spec = TrialSpec(workload=workload.name, framework="keras-jax", device="cpu", batch_size=COUNT_BATCH,
                     workload_options=options)
    trainer = KerasJaxTrainer(spec, workload)
    return trainer.params, step_flops(trainer)
