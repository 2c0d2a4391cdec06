"""Parameter initialisers for the Flax builders, drawn on the host by numpy.

Why not jax.random: an eager `jax.random.normal(key, shape)` compiles an XLA program for every
new shape, about 0.5 s each on a 2-core CPU, so building the DCGAN (20 shapes) took 9 s of a
trial's start-up and the ResNet 4 s, before any step ran; jitting the whole constructor still
took 6 s. numpy draws the same distributions with no compilation. The stream is seeded from
the key nnx.Rngs hands the initialiser, so a seed still fixes every value.

While traced (nnx.eval_shape, which flops.py uses to count a model without building it) the
key has no value: the initialisers then return zeros of the shape, which is all tracing reads.

Each takes (key, shape, dtype) as Flax's initialisers do.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Init = Callable[..., jax.Array]


def _generator(key: jax.Array) -> np.random.Generator | None:
    """numpy's generator seeded by the key's bits; None while the key is traced."""
    if isinstance(key, jax.core.Tracer):
        return None
    bits = np.asarray(jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key)
    return np.random.default_rng([int(b) for b in bits.ravel()])


def _drawn(draw: Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]) -> Init:
    def init(key: jax.Array, shape: Any, dtype: Any = jnp.float32) -> jax.Array:
        rng, shape = _generator(key), tuple(int(n) for n in shape)
        if rng is None:
            return jnp.zeros(shape, dtype)
        return jnp.asarray(draw(rng, shape).astype(np.dtype(dtype)))
    return init


def uniform(bound: float) -> Init:
    """U(-bound, bound), torch's default for weights and biases (bound = 1/sqrt(fan_in))."""
    return _drawn(lambda rng, shape: rng.uniform(-bound, bound, shape))


def normal(mean: float, std: float) -> Init:
    """N(mean, std^2)."""
    return _drawn(lambda rng, shape: rng.normal(mean, std, shape))


def kaiming_normal_fan_out() -> Init:
    """torch's kaiming_normal_(mode="fan_out", nonlinearity="relu") for an HWIO kernel:
    N(0, 2 / fan_out) with fan_out = H * W * O."""
    return _drawn(lambda rng, shape: rng.normal(0.0, math.sqrt(2.0 / math.prod((*shape[:-2], shape[-1]))), shape))


def _filled(value: float) -> Init:
    """A constant, made on the host (jnp.zeros and jnp.ones compile a small program per shape)."""
    def init(key: jax.Array, shape: Any, dtype: Any = jnp.float32) -> jax.Array:
        return jnp.asarray(np.full(tuple(int(n) for n in shape), value, np.dtype(dtype)))
    return init


zeros = _filled(0.0)
ones = _filled(1.0)
