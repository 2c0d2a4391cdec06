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


def _update(optimizer: keras.optimizers.Optimizer, tape: tf.GradientTape, loss: Any,
            variables: list[Any]) -> None:
    """Gradients of `loss` (scaled under fp16 loss scaling) and one optimiser update. Under a
    distribution strategy (data-parallel ranks, parallel.py) the optimiser sums the replicas'
    gradients, so each replica's mean loss is divided by the replicas: the sum is then the
    gradient of the global batch's mean loss (Keras' own fit does the same). 1 otherwise."""
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    grads = tape.gradient(optimizer.scale_loss(loss) / replicas, variables)
    optimizer.apply_gradients(zip(grads, variables, strict=True))


def _single_step(workload: Workload, parts: Parts, optimizers: Optimizers, x: Any, y: Any) -> tuple[Any, dict]:
    (name, model), = parts.items()
    with tf.GradientTape() as tape:
        loss = step.output_loss(workload, model(x, training=True), y)
    _update(optimizers[name], tape, loss, model.trainable_variables)
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
        with tape.stop_recording():
            _update(optimizers[d_name], tape, loss_d, d.trainable_variables)
        d_fake = d(fake, training=True)
        loss_g = step.bce_logits(d_fake, tf.ones_like(d_fake))
    _update(optimizers[g_name], tape, loss_g, g.trainable_variables)
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
