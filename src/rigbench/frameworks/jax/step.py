"""A training step in JAX, driven by the workload's declared facts (rigbench.workloads).

The model is split into its parts (one, or the GAN's discriminator and generator); each part is
an NNX graph definition (static) plus its state: trainable parameters, the rest (batch-norm
statistics, dropout RNG counters) and its optax state. `make_step` returns the pure function
(state, batch) -> (state, loss) that the trainer jits and times, the training loop runs and the
FLOP counter traces (it returns the new state, the loss and, for a GAN, each part's loss):
one definition of "a training step". At a compute dtype (bf16: precision.py), the step applies
the model on its parameters cast to it and takes the loss in float32. Nothing here knows a workload by
name: loss kind, targets and optimiser map to JAX through the tables below.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from rigbench.frameworks.jax import precision
from rigbench.workloads import Workload

#: part name -> PartState; a pytree, so it passes through jit whole
State = dict[str, "PartState"]
#: (state, (inputs, targets)) -> (new state, loss, {part name: its loss} for multi-part workloads)
Step = Callable[[State, tuple[jax.Array, jax.Array]], tuple[State, jax.Array, dict[str, jax.Array]]]


class PartState(NamedTuple):
    params: Any  # nnx.State of the nnx.Param variables
    rest: Any  # every other variable: batch-norm statistics, RNG counters
    opt: Any  # the optax state


# --------------------------------------------------------------------------- data


def latent_noise(workload: Workload, batch_size: int, key: jax.Array) -> jax.Array:
    """z ~ N(0, 1) [B, latent_size, 1, 1]."""
    assert workload.latent_size is not None, f"{workload.name} declares no latent size"
    return jax.random.normal(key, (batch_size, workload.latent_size, 1, 1))


#: targets kind -> (images, batch size, workload, numpy generator) -> synthetic targets
_SYNTHETIC_TARGETS: dict[str, Callable[[np.ndarray, int, Workload, np.random.Generator], np.ndarray]] = {
    "class_index": lambda x, b, w, rng: rng.integers(0, w.num_classes or 2, b).astype(np.int32),
    "binary": lambda x, b, w, rng: rng.integers(0, 2, b).astype(np.float32),
    "input": lambda x, b, w, rng: x,
    "latent_noise": lambda x, b, w, rng: rng.standard_normal((b, w.latent_size or 0, 1, 1), np.float32),
}


def synthetic_batch(workload: Workload, batch_size: int, seed: int = 0) -> tuple[jax.Array, jax.Array]:
    """A fixed batch with the workload's real shapes (images NCHW), as torch's synthetic_batch:
    token ids with the next tokens as targets, or images ~ N(0, 1) (U(0, 1) for a unit input
    range) with targets of the declared kind. Drawn by numpy on the host: an eager jax.random
    draw compiles a program per shape (about 0.9 s of every trial's start-up on 2 CPU cores)."""
    rng = np.random.default_rng(seed)
    if workload.layout == "tokens":
        assert workload.vocab is not None, f"{workload.name} declares no vocabulary"
        tokens = rng.integers(0, workload.vocab, (batch_size, workload.input_shape[0] + 1)).astype(np.int32)
        return jnp.asarray(tokens[:, :-1]), jnp.asarray(tokens[:, 1:])
    shape = (batch_size, *workload.input_shape)
    x = rng.random(shape, np.float32) if workload.input_range == "unit" else rng.standard_normal(shape, np.float32)
    return jnp.asarray(x), jnp.asarray(_SYNTHETIC_TARGETS[workload.targets](x, batch_size, workload, rng))


def scale(workload: Workload, images: jax.Array) -> jax.Array:
    """uint8 images -> float32 in the workload's input range: [0, 1] (unit) or [-1, 1]; uint8
    tokens -> int32 ids."""
    if workload.layout == "tokens":
        return images.astype(jnp.int32)
    x = images.astype(jnp.float32) / 255.0
    return x if workload.input_range == "unit" else (x - 0.5) / 0.5


#: targets kind -> (workload, scaled images, labels, key) -> targets of a real-data batch
REAL_TARGETS: dict[str, Callable[[Workload, jax.Array, jax.Array, jax.Array], jax.Array]] = {
    "class_index": lambda w, images, labels, key: labels,
    "binary": lambda w, images, labels, key: labels.astype(jnp.float32),
    "input": lambda w, images, labels, key: images,
    "latent_noise": lambda w, images, labels, key: latent_noise(w, images.shape[0], key),
    "next_tokens": lambda w, tokens, labels, key: labels.astype(jnp.int32),
}


def model_batch(workload: Workload, images: jax.Array, labels: jax.Array,
                key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(inputs, targets) as the step expects them, from uint8 images and labels."""
    x = scale(workload, images)
    return x, REAL_TARGETS[workload.targets](workload, x, labels, key)


# --------------------------------------------------------------------------- loss


def _cross_entropy(out: jax.Array, targets: jax.Array) -> jax.Array:
    return optax.softmax_cross_entropy_with_integer_labels(out.reshape(-1, out.shape[-1]), targets.reshape(-1)).mean()


def bce_logits(out: jax.Array, targets: jax.Array) -> jax.Array:
    return optax.sigmoid_binary_cross_entropy(out.astype(jnp.float32), targets).mean()


#: loss kind -> (model output, targets) -> loss, for the single-update kinds
LOSSES: dict[str, Callable[[jax.Array, jax.Array], jax.Array]] = {
    "cross_entropy": _cross_entropy,
    "bce_logits": lambda out, targets: bce_logits(out[:, 0], targets),
    "mse": lambda out, targets: jnp.mean((out - targets) ** 2),
    "next_token_ce": _cross_entropy,
}

#: loss kind -> model output -> predicted class, for the accuracy metric
PREDICTIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "cross_entropy": lambda out: out.argmax(1),
    "bce_logits": lambda out: out[:, 0] > 0,  # one logit: positive means class 1
}


def output_loss(workload: Workload, out: jax.Array, targets: jax.Array) -> jax.Array:
    """The loss of a single-update workload from the model's output (also used to evaluate),
    in float32 whatever the output's dtype (as torch's autocast takes losses)."""
    return LOSSES[workload.loss](out.astype(jnp.float32), targets)


# --------------------------------------------------------------------------- optimiser


#: Workload.optimizer -> optax optimiser from (lr, the workload's optimizer_args). The rate is
#: an injected hyperparameter, so the lr range test can change it inside the optimiser state.
OPTIMIZERS: dict[str, Callable[[float, dict[str, Any]], optax.GradientTransformation]] = {
    "sgd": lambda lr, args: optax.inject_hyperparams(optax.sgd)(learning_rate=lr, momentum=args["momentum"]),
    "adam": lambda lr, args: optax.inject_hyperparams(optax.adam)(
        learning_rate=lr, b1=args["betas"][0], b2=args["betas"][1]),
}


def make_optimizer(workload: Workload, lr: float) -> optax.GradientTransformation:
    """torch's SGD (momentum, no dampening) and Adam (eps 1e-8) are optax's sgd and adam."""
    return OPTIMIZERS[workload.optimizer](lr, workload.optimizer_args)


def set_lr(state: State, lr: float) -> State:
    """The state with every part's learning rate set to `lr`."""
    for part in state.values():
        part.opt.hyperparams["learning_rate"] = jnp.asarray(lr, jnp.float32)
    return state


# --------------------------------------------------------------------------- parts


def part_modules(workload: Workload, model: nnx.Module) -> dict[str, nnx.Module]:
    """The separately optimised parts, in update order (the builder's attributes of the
    declared part names, or the whole model for one part)."""
    if len(workload.parts) == 1:
        return {workload.parts[0].name: model}
    return {part.name: getattr(model, part.name) for part in workload.parts}


def split(workload: Workload, model: nnx.Module, tx: optax.GradientTransformation) -> tuple[dict[str, Any], State]:
    """(graph definitions, state) of every part, each with a fresh optimiser state."""
    graphdefs, state = {}, {}
    for name, module in part_modules(workload, model).items():
        graphdef, params, *rest = nnx.split(module, nnx.Param, ...)  # rest: one State, the others
        graphdefs[name], state[name] = graphdef, PartState(params, rest[0], tx.init(params))
    return graphdefs, state


def apply(graphdef: Any, params: Any, rest: Any, x: jax.Array, compute: Any = None) -> tuple[jax.Array, Any]:
    """The part's output on `x` and its updated non-parameter state; at a `compute` dtype, on
    the parameters and `x` cast to it, the state keeping its own dtypes (precision.py)."""
    module = nnx.merge(graphdef, precision.cast(params, compute), rest, copy=True)
    out = module(precision.cast(x, compute))
    _, _, *new_rest = nnx.split(module, nnx.Param, ...)
    return out, precision.like(new_rest[0], rest)


def _update(tx: optax.GradientTransformation, part: PartState, grads: Any, rest: Any) -> PartState:
    updates, opt = tx.update(grads, part.opt, part.params)
    return PartState(optax.apply_updates(part.params, updates), rest, opt)


# --------------------------------------------------------------------------- step


def _single_step(workload: Workload, tx: Any, graphdefs: dict[str, Any], compute: Any, state: State,
                 batch: tuple[jax.Array, jax.Array]) -> tuple[State, jax.Array, dict[str, jax.Array]]:
    name = workload.parts[0].name
    part, (inputs, targets) = state[name], batch

    def loss_fn(params: Any) -> tuple[jax.Array, Any]:
        out, rest = apply(graphdefs[name], params, part.rest, inputs, compute)
        return output_loss(workload, out, targets), rest

    (loss, rest), grads = jax.value_and_grad(loss_fn, has_aux=True)(part.params)
    return {name: _update(tx, part, grads, rest)}, loss, {}


def _adversarial_step(workload: Workload, tx: Any, graphdefs: dict[str, Any], compute: Any, state: State,
                      batch: tuple[jax.Array, jax.Array]) -> tuple[State, jax.Array, dict[str, jax.Array]]:
    """One GAN iteration as torch's step: G(z) once; D on the real batch (1) and on G(z) held
    constant (0), D updated; then G updated to make the *updated* D call the same G(z) real.
    The G update back-propagates through D to G(z) and through G (one vjp of the forward
    already taken); D's weight gradients there are not computed (torch computes and discards
    them). Returns D loss + G loss."""
    d_name, g_name = (p.name for p in workload.parts)
    real, noise = batch
    d, g = state[d_name], state[g_name]
    fake, g_vjp, g_rest = jax.vjp(lambda p: apply(graphdefs[g_name], p, g.rest, noise, compute), g.params,
                                  has_aux=True)

    def loss_d(params: Any) -> tuple[jax.Array, Any]:
        d_real, rest = apply(graphdefs[d_name], params, d.rest, real, compute)
        d_fake, rest = apply(graphdefs[d_name], params, rest, jax.lax.stop_gradient(fake), compute)
        return bce_logits(d_real, jnp.ones_like(d_real)) + bce_logits(d_fake, jnp.zeros_like(d_fake)), rest

    (value_d, d_rest), d_grads = jax.value_and_grad(loss_d, has_aux=True)(d.params)
    d = _update(tx, d, d_grads, d_rest)

    def loss_g(image: jax.Array) -> tuple[jax.Array, Any]:
        d_fake, rest = apply(graphdefs[d_name], d.params, d.rest, image, compute)
        return bce_logits(d_fake, jnp.ones_like(d_fake)), rest

    (value_g, d_rest), fake_grad = jax.value_and_grad(loss_g, has_aux=True)(fake)
    (g_grads,) = g_vjp(fake_grad)
    state = {d_name: d._replace(rest=d_rest), g_name: _update(tx, g, g_grads, g_rest)}
    return state, value_d + value_g, {d_name: value_d, g_name: value_g}


#: loss kind -> step; the single-update step serves every kind in LOSSES
_STEPS: dict[str, Callable[..., tuple[State, jax.Array, dict[str, jax.Array]]]] = {"adversarial_bce": _adversarial_step}


def make_step(workload: Workload, tx: optax.GradientTransformation, graphdefs: dict[str, Any],
              compute: Any = None) -> Step:
    """The pure training step of every part (see Step), computing in `compute` (None: float32)."""
    step = _STEPS.get(workload.loss, _single_step)
    return lambda state, batch: step(workload, tx, graphdefs, compute, state, batch)


def eval_apply(graphdef: Any, state: PartState, x: jax.Array, compute: Any = None) -> jax.Array:
    """The part's output in evaluation mode (running statistics, no dropout) computed in
    `compute` as the step does; state unchanged."""
    module = nnx.merge(graphdef, precision.cast(state.params, compute), state.rest, copy=True)
    module.eval()
    return module(precision.cast(x, compute))
