"""Parameter and training-FLOP counts of the keras-jax step: the stateless step (step.py) of
the real Keras models at a batch of 2, traced to a jaxpr (not run) and counted by the JAX
adapter's counter (frameworks/jax/flops.jaxpr_flops: matmuls and convolutions, its rule)."""

from __future__ import annotations

from typing import Any

import jax
import keras

from rigbench.frameworks.jax.flops import jaxpr_flops
from rigbench.frameworks.keras import models
from rigbench.frameworks.keras import step as keras_step
from rigbench.frameworks.keras.trainer import require_backend
from rigbench.frameworks.keras_jax import step
from rigbench.workloads import Workload, resolved_options

#: Batch size of the counting step; per-sample FLOPs are the total divided by it.
COUNT_BATCH = 2


def count(workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """(trainable parameters, training FLOPs per sample) of one fp32 training step."""
    require_backend("jax")
    keras.mixed_precision.set_global_policy("float32")
    parts = models.build_parts(workload, resolved_options(workload, options))
    optimizers = {name: keras_step.make_optimizer(workload, workload.default_lr) for name in parts}
    for name, model in parts.items():
        optimizers[name].build(model.trainable_variables)
    x, y = keras_step.synthetic_batch(workload, COUNT_BATCH)
    jaxpr = jax.make_jaxpr(step.make_step(workload, parts, optimizers))(step.state_of(parts, optimizers), x, y)
    return models.trainable_params(parts), jaxpr_flops(jaxpr.jaxpr) / COUNT_BATCH
