"""A training step in TensorFlow on the shared Keras models: tf.GradientTape and each part's
Keras optimiser (`apply_gradients`) under tf.function, with XLA (jit_compile) for --compile.
The loss, targets and optimisers come from the shared tables (frameworks/keras/step.py);
nothing here knows a workload by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

from rigbench.frameworks.keras import step
from rigbench.workloads import Workload

Parts = dict[str, keras.Model]
Optimizers = dict[str, keras.optimizers.Optimizer]


def _objective(optimizer: keras.optimizers.Optimizer, loss: Any) -> Any:
    """What the tape differentiates for `loss`, computed inside the tape (an operation after it
    ends is not recorded, and its gradient would be None): the loss scaled under fp16 loss
    scaling, and divided by the replicas under a distribution strategy (data-parallel ranks,
    parallel.py), whose optimiser sums the replicas' gradients: the sum of the replicas' mean
    losses so divided is the global batch's mean loss (Keras' own fit divides the same way).
    One replica outside a strategy."""
    return optimizer.scale_loss(loss) / tf.distribute.get_strategy().num_replicas_in_sync


def _update(optimizer: keras.optimizers.Optimizer, tape: tf.GradientTape, objective: Any,
            variables: list[Any]) -> None:
    """Gradients of `objective` (_objective) and one optimiser update."""
    grads = tape.gradient(objective, variables)
    optimizer.apply_gradients(zip(grads, variables, strict=True))


def _single_step(workload: Workload, parts: Parts, optimizers: Optimizers, x: Any, y: Any) -> tuple[Any, dict]:
    (name, model), = parts.items()
    with tf.GradientTape() as tape:
        loss = step.output_loss(workload, model(x, training=True), y)
        objective = _objective(optimizers[name], loss)
    _update(optimizers[name], tape, objective, model.trainable_variables)
    return loss, {}


def _adversarial_step(workload: Workload, parts: Parts, optimizers: Optimizers, real: Any,
                      noise: Any) -> tuple[Any, dict]:
    """One GAN iteration as torch's step: G(z) once; D on the real batch (1) and on G(z) held
    constant (0), D updated; then G updated to make the *updated* D call the same G(z) real.
    The tape asks only for G's gradients there, so D's weight gradients are not computed (torch
    computes and discards them). Returns D loss + G loss."""
    d_name, g_name = (p.name for p in workload.parts)
    d, g = parts[d_name], parts[g_name]
    with tf.GradientTape(persistent=True) as tape:
        fake = g(noise, training=True)
        d_real, d_fake = d(real, training=True), d(tf.stop_gradient(fake), training=True)
        loss_d = step.bce_logits(d_real, tf.ones_like(d_real)) + step.bce_logits(d_fake, tf.zeros_like(d_fake))
        objective_d = _objective(optimizers[d_name], loss_d)
        with tape.stop_recording():
            _update(optimizers[d_name], tape, objective_d, d.trainable_variables)
        d_fake = d(fake, training=True)
        loss_g = step.bce_logits(d_fake, tf.ones_like(d_fake))
        objective_g = _objective(optimizers[g_name], loss_g)
    _update(optimizers[g_name], tape, objective_g, g.trainable_variables)
    return loss_d + loss_g, {d_name: loss_d, g_name: loss_g}


#: loss kind -> step; the single-update step serves every other kind
_STEPS: dict[str, Callable[..., tuple[Any, dict]]] = {"adversarial_bce": _adversarial_step}


def step_fn(workload: Workload, parts: Parts, optimizers: Optimizers) -> Callable[[Any, Any], tuple[Any, dict]]:
    """The training step as Python: (inputs, targets) -> (loss, {part: loss})."""
    fn = _STEPS.get(workload.loss, _single_step)
    return lambda x, y: fn(workload, parts, optimizers, x, y)


def make_step(workload: Workload, parts: Parts, optimizers: Optimizers,
              jit_compile: bool) -> Callable[[Any, Any], tuple[Any, dict]]:
    """The traced training step; XLA-compiled with `jit_compile`, otherwise a TensorFlow graph."""
    return tf.function(step_fn(workload, parts, optimizers), jit_compile=jit_compile)
