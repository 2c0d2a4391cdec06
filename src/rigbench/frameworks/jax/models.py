"""The reference networks in Flax NNX, one short builder per workload, layer for layer as
frameworks/torch/models.py (see its docstrings for the papers): the same layers, sizes and
order, so the trainable parameters equal torch's and workloads/flops.py's analytic count.

Layout: inputs follow the workload's facts (images NCHW, as every adapter receives them);
each convolutional network transposes to NHWC (XLA's native convolution layout) as its first
operation, and back to NCHW before a flatten, so a flattened feature has torch's index and
torch weights can be copied in unchanged (tests/unit/test_jax_parity.py). Kernels are HWIO.

Initialisation is torch's default, written as Flax initialisers: weights and biases of
Linear/Conv uniform(+-1/sqrt(fan_in)) (kaiming-uniform with a = sqrt(5) reduces to that),
LSTM weights uniform(+-1/sqrt(hidden)), embeddings N(0, 1), batch norm scale 1 and shift 0;
the DCGAN's N(0, 0.02) and the ResNet's kaiming-normal(fan_out) where torch's builders set
them; numpy draws them on the host (inits.py says why). Batch norm momentum is converted
(Flax's is the decay: 1 - torch's). This is the only place in the adapter that knows a
workload by name.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx

from rigbench.frameworks.jax import transformers
from rigbench.frameworks.jax.inits import Init, kaiming_normal_fan_out, normal, ones, uniform, zeros
from rigbench.workloads import WORKLOADS
from rigbench.workloads.flops import (
    AUTOENCODER_SIZES,
    CATSDOGS_BLOCKS,
    CATSDOGS_DENSE,
    CATSDOGS_POOLS,
    CNN_CONVS,
    CNN_DENSE,
    DCGAN_FILTERS,
    LSTM_LAYERS,
    MLP_HIDDEN,
    catsdogs_flat_features,
)


def linear(n_in: int, n_out: int, rngs: nnx.Rngs, bias: bool = True) -> nnx.Linear:
    bound = 1 / math.sqrt(n_in)
    return nnx.Linear(n_in, n_out, use_bias=bias, kernel_init=uniform(bound), bias_init=uniform(bound), rngs=rngs)


def conv(c_in: int, c_out: int, k: int, rngs: nnx.Rngs, stride: int = 1, padding: int = 0,
         bias: bool = True, kernel_init: Init | None = None) -> nnx.Conv:
    """torch's Conv2d(c_in, c_out, k, stride, padding) on NHWC."""
    bound = 1 / math.sqrt(c_in * k * k)
    return nnx.Conv(c_in, c_out, (k, k), strides=stride, padding=((padding, padding), (padding, padding)),
                    use_bias=bias, kernel_init=kernel_init or uniform(bound), bias_init=uniform(bound), rngs=rngs)


def batch_norm(channels: int, rngs: nnx.Rngs, momentum: float = 0.1, eps: float = 1e-5,
               scale_init: Init | None = None) -> nnx.BatchNorm:
    """torch's BatchNorm (momentum = the new batch's weight) as Flax's (momentum = the decay)."""
    return nnx.BatchNorm(channels, momentum=1 - momentum, epsilon=eps, rngs=rngs,
                         scale_init=scale_init or ones, bias_init=zeros)


def to_nhwc(x: jax.Array) -> jax.Array:
    return jnp.transpose(x, (0, 2, 3, 1))


def to_nchw(x: jax.Array) -> jax.Array:
    return jnp.transpose(x, (0, 3, 1, 2))


def flatten(x: jax.Array) -> jax.Array:
    return x.reshape(x.shape[0], -1)


def flatten_nhwc(x: jax.Array) -> jax.Array:
    """Flatten a feature map in torch's (C, H, W) order."""
    return flatten(to_nchw(x))


def max_pool(window: int, stride: int | None = None, padding: int = 0) -> Callable[[jax.Array], jax.Array]:
    stride = stride or window
    pad = ((padding, padding), (padding, padding))
    return lambda x: nnx.max_pool(x, (window, window), (stride, stride), pad)


def dense_stack(widths: tuple[int, ...], rngs: nnx.Rngs) -> list[Any]:
    layers: list[Any] = []
    for n_in, n_out in pairwise(widths):
        layers += [linear(n_in, n_out, rngs), nnx.relu]
    return layers


# --------------------------------------------------------------------------- dense nets


def mlp(options: dict[str, Any], rngs: nnx.Rngs) -> nnx.Module:
    """Shi et al. 2016's FCN-S shape: 784-2048-2048-2048-10."""
    widths = (784, *MLP_HIDDEN)
    return nnx.Sequential(flatten, *dense_stack(widths, rngs), linear(widths[-1], 10, rngs))


def autoencoder(options: dict[str, Any], rngs: nnx.Rngs) -> nnx.Module:
    """Hinton & Salakhutdinov 2006: 784-1000-500-250-30 (linear code) and the mirror, sigmoid out."""
    encoder = list(pairwise(AUTOENCODER_SIZES))
    decoder = [(b, a) for a, b in reversed(encoder)]
    layers: list[Any] = [flatten]
    for i, (n_in, n_out) in enumerate(encoder + decoder):
        layers.append(linear(n_in, n_out, rngs))
        if i != len(encoder) - 1:  # the code layer is linear
            layers.append(nnx.relu if i < len(encoder) + len(decoder) - 1 else nnx.sigmoid)
    layers.append(lambda x: x.reshape(x.shape[0], 1, 28, 28))
    return nnx.Sequential(*layers)


# --------------------------------------------------------------------------- cnn, rcnn


def cnn(options: dict[str, Any], rngs: nnx.Rngs) -> nnx.Module:
    """The TensorFlow-tutorial CIFAR CNN: conv32-pool-conv64-pool-conv64-dense64-dense10."""
    c1, c2, c3 = CNN_CONVS
    return nnx.Sequential(
        to_nhwc,
        conv(3, c1, 3, rngs), nnx.relu, max_pool(2),
        conv(c1, c2, 3, rngs), nnx.relu, max_pool(2),
        conv(c2, c3, 3, rngs), nnx.relu,
        flatten_nhwc,
        linear(c3 * 4 * 4, CNN_DENSE, rngs), nnx.relu,
        linear(CNN_DENSE, 10, rngs),
    )


class RCL(nnx.Module):
    """Liang & Hu 2015's recurrent convolutional layer, unrolled `steps` times (as torch's RCL)."""

    def __init__(self, channels: int, steps: int, rngs: nnx.Rngs):
        self.steps = steps
        self.feedforward = conv(channels, channels, 3, rngs, padding=1, bias=False)
        self.recurrent = conv(channels, channels, 3, rngs, padding=1, bias=False)
        self.bn = nnx.List([batch_norm(channels, rngs) for _ in range(steps + 1)])

    def __call__(self, u: jax.Array) -> jax.Array:
        ff = self.feedforward(u)
        x = nnx.relu(self.bn[0](ff))
        for t in range(1, self.steps + 1):
            x = nnx.relu(self.bn[t](ff + self.recurrent(x)))
        return x


def rcnn(options: dict[str, Any], rngs: nnx.Rngs) -> nnx.Module:
    """RCNN-K (Liang & Hu 2015): conv 5x5, RCL x2, max pool 3/2, dropout, RCL x2, global max, dense."""
    k, steps = int(options["width"]), int(options["steps"])
    return nnx.Sequential(
        to_nhwc,
        conv(3, k, 5, rngs, padding=2, bias=False), batch_norm(k, rngs), nnx.relu,
        RCL(k, steps, rngs), RCL(k, steps, rngs),
        max_pool(3, 2, 1),
        nnx.Dropout(0.5, rngs=rngs),
        RCL(k, steps, rngs), RCL(k, steps, rngs),
        lambda x: jnp.max(x, axis=(1, 2)),
        linear(k, 10, rngs),
    )


# --------------------------------------------------------------------------- lstm


class LSTMLayer(nnx.Module):
    """One LSTM layer with torch's parameters (w_ih, w_hh, b_ih, b_hh; gates i, f, g, o),
    stored transposed (in, 4H) for x @ w. The input projection of every time step is one
    matmul; the recurrence runs under lax.scan from a zero state."""

    def __init__(self, n_in: int, hidden: int, rngs: nnx.Rngs):
        init = uniform(1 / math.sqrt(hidden))
        self.hidden = hidden
        self.w_ih = nnx.Param(init(rngs.params(), (n_in, 4 * hidden)))
        self.w_hh = nnx.Param(init(rngs.params(), (hidden, 4 * hidden)))
        self.b_ih = nnx.Param(init(rngs.params(), (4 * hidden,)))
        self.b_hh = nnx.Param(init(rngs.params(), (4 * hidden,)))

    def __call__(self, x: jax.Array) -> jax.Array:  # [B, T, in] -> [B, T, H]
        pre = x @ self.w_ih[...] + self.b_ih[...]
        w_hh, b_hh = self.w_hh[...], self.b_hh[...]

        def cell(carry: tuple[jax.Array, jax.Array], gates_x: jax.Array) -> tuple[Any, jax.Array]:
            h, c = carry
            i, f, g, o = jnp.split(gates_x + h @ w_hh + b_hh, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h

        zeros = jnp.zeros((x.shape[0], self.hidden), x.dtype)
        _, hs = jax.lax.scan(cell, (zeros, zeros), jnp.swapaxes(pre, 0, 1))
        return jnp.swapaxes(hs, 0, 1)


def lstm(options: dict[str, Any], rngs: nnx.Rngs) -> nnx.Module:
    """Embedding(vocab, H) -> 2-layer LSTM(H) -> Linear(H, vocab), as torch's LSTMLanguageModel."""
    hidden, vocab = int(options["hidden"]), int(options["vocab"])
    return nnx.Sequential(
        nnx.Embed(vocab, hidden, embedding_init=normal(0.0, 1.0), rngs=rngs),
        *(LSTMLayer(hidden, hidden, rngs) for _ in range(LSTM_LAYERS)),
        linear(hidden, vocab, rngs),
    )


# --------------------------------------------------------------------------- dcgan


class ConvTranspose(nnx.Module):
    """torch's ConvTranspose2d(c_in, c_out, k, stride, padding, bias=False) on NHWC: a
    convolution of the input dilated by `stride`, padded by k - 1 - padding (kernel HWIO)."""

    def __init__(self, c_in: int, c_out: int, k: int, stride: int, padding: int, rngs: nnx.Rngs):
        self.kernel = nnx.Param(normal(0.0, 0.02)(rngs.params(), (k, k, c_in, c_out)))
        self.stride, self.pad = stride, k - 1 - padding

    def __call__(self, x: jax.Array) -> jax.Array:
        return jax.lax.conv_transpose(x, self.kernel[...], (self.stride, self.stride),
                                      ((self.pad, self.pad), (self.pad, self.pad)),
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))


class DCGAN(nnx.Module):
    """The generator and discriminator, the workload's two parts (by their declared names)."""

    def __init__(self, generator: nnx.Module, discriminator: nnx.Module):
        self.generator, self.discriminator = generator, discriminator


def dcgan(options: dict[str, Any], rngs: nnx.Rngs) -> nnx.Module:
    """Radford et al. 2016's 64x64 DCGAN (nz=100, ngf=ndf=64), N(0, 0.02) weights, BN scale N(1, 0.02)."""
    f, nz = DCGAN_FILTERS, WORKLOADS["dcgan"].latent_size
    assert nz is not None
    bn_scale = normal(1.0, 0.02)

    def up(c_in: int, c_out: int, stride: int, padding: int) -> list[Any]:
        return [ConvTranspose(c_in, c_out, 4, stride, padding, rngs), batch_norm(c_out, rngs, scale_init=bn_scale),
                nnx.relu]

    def down(c_in: int, c_out: int, norm: bool = True) -> list[Any]:
        layers: list[Any] = [conv(c_in, c_out, 4, rngs, 2, 1, bias=False, kernel_init=normal(0.0, 0.02))]
        layers += [batch_norm(c_out, rngs, scale_init=bn_scale)] if norm else []
        return [*layers, lambda x: jax.nn.leaky_relu(x, 0.2)]

    generator = nnx.Sequential(
        to_nhwc, *up(nz, f * 8, 1, 0), *up(f * 8, f * 4, 2, 1), *up(f * 4, f * 2, 2, 1), *up(f * 2, f, 2, 1),
        ConvTranspose(f, 3, 4, 2, 1, rngs), jnp.tanh, to_nchw,
    )
    discriminator = nnx.Sequential(
        to_nhwc, *down(3, f, norm=False), *down(f, f * 2), *down(f * 2, f * 4), *down(f * 4, f * 8),
        conv(f * 8, 1, 4, rngs, bias=False, kernel_init=normal(0.0, 0.02)), flatten,
    )
    return DCGAN(generator, discriminator)


# --------------------------------------------------------------------------- resnet


class BasicBlock(nnx.Module):
    """Two 3x3 conv-BN layers with an option-A shortcut (He et al. 2016), as torch's BasicBlock."""

    def __init__(self, in_planes: int, planes: int, stride: int, rngs: nnx.Rngs, init: Init):
        self.conv1 = conv(in_planes, planes, 3, rngs, stride, 1, bias=False, kernel_init=init)
        self.bn1 = batch_norm(planes, rngs)
        self.conv2 = conv(planes, planes, 3, rngs, 1, 1, bias=False, kernel_init=init)
        self.bn2 = batch_norm(planes, rngs)
        self.stride, self.extra = stride, planes - in_planes

    def shortcut(self, x: jax.Array) -> jax.Array:
        if self.stride == 1 and self.extra == 0:
            return x
        x = x[:, :: self.stride, :: self.stride, :]
        half = self.extra // 2
        return jnp.pad(x, ((0, 0), (0, 0), (0, 0), (half, self.extra - half)))

    def __call__(self, x: jax.Array) -> jax.Array:
        out = nnx.relu(self.bn1(self.conv1(x)))
        return nnx.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


def resnet(options: dict[str, Any], rngs: nnx.Rngs) -> nnx.Module:
    """He et al. 2016's CIFAR ResNet (depth 6n+2), convolutions kaiming-normal(fan_out, ReLU)."""
    depth = int(options["depth"])
    if (depth - 2) % 6:
        raise ValueError(f"CIFAR ResNet depth must be 6n+2, got {depth}")
    n = (depth - 2) // 6
    init = kaiming_normal_fan_out()
    layers: list[Any] = [to_nhwc, conv(3, 16, 3, rngs, 1, 1, bias=False, kernel_init=init),
                         batch_norm(16, rngs), nnx.relu]
    in_planes = 16
    for planes, stride in ((16, 1), (32, 2), (64, 2)):
        for i in range(n):
            layers.append(BasicBlock(in_planes, planes, stride if i == 0 else 1, rngs, init))
            in_planes = planes
    layers += [lambda x: jnp.mean(x, axis=(1, 2)), linear(64, 10, rngs)]
    return nnx.Sequential(*layers)


# --------------------------------------------------------------------------- catsdogs


def catsdogs(options: dict[str, Any], rngs: nnx.Rngs) -> nnx.Module:
    """Seed 001's Keras cats-vs-dogs CNN (see torch's builder): 13 conv 3x3 'same' + ReLU in five
    blocks with flooring max pools, dense 2048 / dropout / Keras batch norm (eps 1e-3, moving
    averages at 0.99) twice, one logit. A batch of one normalises to beta, as in Keras."""
    layers: list[Any] = [to_nhwc]
    c_in = 3
    for block, pool in zip(CATSDOGS_BLOCKS, CATSDOGS_POOLS, strict=True):
        for c_out in block:
            layers += [conv(c_in, c_out, 3, rngs, padding=1), nnx.relu]
            c_in = c_out
        layers.append(max_pool(pool))
    layers.append(flatten_nhwc)
    n_in = catsdogs_flat_features(WORKLOADS["catsdogs"].input_shape[-1])
    for width, dropout in CATSDOGS_DENSE:
        layers += [linear(n_in, width, rngs), nnx.relu, nnx.Dropout(dropout, rngs=rngs),
                   batch_norm(width, rngs, momentum=0.01, eps=1e-3)]
        n_in = width
    layers.append(linear(n_in, 1, rngs))
    return nnx.Sequential(*layers)


# --------------------------------------------------------------------------- registry

BUILDERS: dict[str, Callable[[dict[str, Any], nnx.Rngs], nnx.Module]] = {
    "mlp": mlp, "autoencoder": autoencoder, "cnn": cnn, "rcnn": rcnn,
    "lstm": lstm, "dcgan": dcgan, "resnet": resnet, "catsdogs": catsdogs,
    "gpt": transformers.gpt, "vit": transformers.vit,
}


def build_model(workload_name: str, options: dict[str, Any], seed: int = 0) -> nnx.Module:
    """The network of `workload_name` with resolved `options`, initialised from `seed`."""
    return BUILDERS[workload_name](options, nnx.Rngs(seed))


def trainable_params(model: nnx.Module) -> int:
    """Elements of every nnx.Param (batch-norm statistics and RNG state are not parameters)."""
    return sum(int(x.size) for x in jax.tree.leaves(nnx.state(model, nnx.Param)))
