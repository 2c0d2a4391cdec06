"""The stateless training step of the Keras models on the JAX backend: `stateless_call` of each
part and `stateless_apply` of its optimiser under jax.value_and_grad, the pattern Keras
documents for custom JAX training. It trains the GAN, whose two optimisers and order of
updates `train_on_batch` cannot express, and it is the step the FLOP counter traces for every
workload (flops.py); one-part workloads train with Keras' own `train_on_batch` (trainer.py),
which computes the same loss, gradients and update.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import keras

from rigbench.frameworks.keras import step
from rigbench.workloads import Workload

#: part name -> (trainable values, non-trainable values, optimiser variable values)
State = dict[str, tuple[list[Any], list[Any], list[Any]]]
Step = Callable[[State, Any, Any], tuple[State, Any, dict[str, Any]]]


def state_of(parts: dict[str, keras.Model], optimizers: dict[str, keras.optimizers.Optimizer]) -> State:
    """The current values of every part's variables and optimiser state."""
    return {name: ([v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables],
                   [v.value for v in optimizers[name].variables]) for name, model in parts.items()}


def _single(workload: Workload, parts: dict[str, keras.Model], optimizers: dict[str, Any], state: State,
            x: Any, y: Any) -> tuple[State, Any, dict[str, Any]]:
    (name, model), = parts.items()
    trainable, rest, opt = state[name]

    def loss_fn(values: list[Any]) -> tuple[Any, list[Any]]:
        out, new_rest = model.stateless_call(values, rest, x, training=True)
        return step.output_loss(workload, out, y), new_rest

    (loss, rest), grads = jax.value_and_grad(loss_fn, has_aux=True)(trainable)
    trainable, opt = optimizers[name].stateless_apply(opt, grads, trainable)
    return {name: (trainable, rest, opt)}, loss, {}


def _adversarial(workload: Workload, parts: dict[str, keras.Model], optimizers: dict[str, Any], state: State,
                 real: Any, noise: Any) -> tuple[State, Any, dict[str, Any]]:
    """One GAN iteration as torch's step (see frameworks/jax/step.py's _adversarial_step): G(z)
    once; D on real (1) and on G(z) held constant (0), D updated; G updated to make the updated
    D call the same G(z) real, back-propagated through D to G(z) and through G by one vjp of the
    forward already taken (D's weight gradients there are not computed)."""
    d_name, g_name = (p.name for p in workload.parts)
    d, g = parts[d_name], parts[g_name]
    (d_tv, d_rest, d_opt), (g_tv, g_rest, g_opt) = state[d_name], state[g_name]
    fake, g_vjp, g_rest = jax.vjp(lambda tv: g.stateless_call(tv, g_rest, noise, training=True), g_tv, has_aux=True)

    def loss_d(tv: list[Any]) -> tuple[Any, list[Any]]:
        d_real, rest = d.stateless_call(tv, d_rest, real, training=True)
        d_fake, rest = d.stateless_call(tv, rest, jax.lax.stop_gradient(fake), training=True)
        return step.bce_logits(d_real, keras.ops.ones_like(d_real)) + step.bce_logits(
            d_fake, keras.ops.zeros_like(d_fake)), rest

    (value_d, d_rest), d_grads = jax.value_and_grad(loss_d, has_aux=True)(d_tv)
    d_tv, d_opt = optimizers[d_name].stateless_apply(d_opt, d_grads, d_tv)

    def loss_g(image: Any) -> tuple[Any, list[Any]]:
        d_fake, rest = d.stateless_call(d_tv, d_rest, image, training=True)
        return step.bce_logits(d_fake, keras.ops.ones_like(d_fake)), rest

    (value_g, d_rest), fake_grad = jax.value_and_grad(loss_g, has_aux=True)(fake)
    (g_grads,) = g_vjp(fake_grad)
    g_tv, g_opt = optimizers[g_name].stateless_apply(g_opt, g_grads, g_tv)
    new_state = {d_name: (d_tv, d_rest, d_opt), g_name: (g_tv, g_rest, g_opt)}
    return new_state, value_d + value_g, {d_name: value_d, g_name: value_g}


#: loss kind -> step; the single-update step serves every other kind
_STEPS: dict[str, Callable[..., tuple[State, Any, dict[str, Any]]]] = {"adversarial_bce": _adversarial}


def make_step(workload: Workload, parts: dict[str, keras.Model],
              optimizers: dict[str, keras.optimizers.Optimizer]) -> Step:
    """The pure step (state, inputs, targets) -> (state, loss, {part: loss})."""
    fn = _STEPS.get(workload.loss, _single)
    return lambda state, x, y: fn(workload, parts, optimizers, state, x, y)
