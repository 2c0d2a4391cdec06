"""The reference networks in Keras 3, one short builder per workload, layer for layer as
frameworks/torch/models.py (see its docstrings for the papers), written with keras.layers and
keras.ops only: the same code builds the `tensorflow`, `keras-jax` and `keras-torch` models.

Layout as the JAX models: inputs follow the workload's facts (images NCHW); each
convolutional network permutes to NHWC (Keras' default, channels_last) as its first layer and
back to NCHW before a flatten, so a flattened feature has torch's index and torch's weights
copy in unchanged (tests/keras_parity.py, checked by tests/contract/keras_networks.py). Kernels are
HWIO, dense kernels (in, out).

Initialisation is torch's default, as Keras initialisers: Dense/Conv weights and biases
uniform(+-1/sqrt(fan_in)), LSTM weights uniform(+-1/sqrt(hidden)), embeddings N(0, 1), batch
norm scale 1 and shift 0; the DCGAN's N(0, 0.02) (scale N(1, 0.02)) and the ResNet's
kaiming-normal(fan_out); the random ones are drawn on the host (inits.py says why). Batch norm
momentum is converted (Keras' is the decay: 1 - torch's). A workload's parts are separate
keras.Models by the part names (`build_parts`). This is the only place in the Keras adapters
that knows a workload by name.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import keras
from keras import layers, ops

from rigbench.frameworks.keras import transformers
from rigbench.frameworks.keras.inits import kaiming_normal_fan_out, normal, uniform
from rigbench.workloads import WORKLOADS, Workload
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


def dense(n_in: int, n_out: int) -> layers.Dense:
    bound = 1 / math.sqrt(n_in)
    return layers.Dense(n_out, kernel_initializer=uniform(bound), bias_initializer=uniform(bound))


def conv(c_in: int, c_out: int, k: int, stride: int = 1, padding: int = 0, bias: bool = True,
         kernel_init: Any = None) -> list[layers.Layer]:
    """torch's Conv2d(c_in, c_out, k, stride, padding) on NHWC: explicit zero padding, then a
    'valid' convolution (Keras' 'same' pads asymmetrically for even strides)."""
    bound = 1 / math.sqrt(c_in * k * k)
    padded: list[layers.Layer] = [layers.ZeroPadding2D(padding)] if padding else []
    return [*padded, layers.Conv2D(c_out, k, stride, use_bias=bias, kernel_initializer=kernel_init or uniform(bound),
                                   bias_initializer=uniform(bound))]


def batch_norm(momentum: float = 0.1, eps: float = 1e-5, scale_init: Any = "ones") -> layers.BatchNormalization:
    """torch's BatchNorm (momentum = the new batch's weight) as Keras' (momentum = the decay)."""
    return layers.BatchNormalization(momentum=1 - momentum, epsilon=eps, gamma_initializer=scale_init)


def to_nhwc() -> layers.Layer:
    return layers.Permute((2, 3, 1))


def flatten_nchw() -> list[layers.Layer]:
    """Flatten a feature map in torch's (C, H, W) order."""
    return [layers.Permute((3, 1, 2)), layers.Flatten()]


def sequential(stack: list[Any], input_shape: tuple[int, ...], dtype: str = "float32") -> keras.Model:
    """A built Sequential model on inputs of one sample's `input_shape`."""
    return keras.Sequential([keras.Input(input_shape, dtype=dtype), *stack])


# --------------------------------------------------------------------------- dense nets


def mlp(options: dict[str, Any]) -> keras.Model:
    """Shi et al. 2016's FCN-S shape: 784-2048-2048-2048-10."""
    widths = (784, *MLP_HIDDEN)
    stack: list[Any] = [layers.Flatten()]
    for n_in, n_out in pairwise(widths):
        stack += [dense(n_in, n_out), layers.ReLU()]
    return sequential([*stack, dense(widths[-1], 10)], (1, 28, 28))


def autoencoder(options: dict[str, Any]) -> keras.Model:
    """Hinton & Salakhutdinov 2006: 784-1000-500-250-30 (linear code) and the mirror, sigmoid out."""
    encoder = list(pairwise(AUTOENCODER_SIZES))
    decoder = [(b, a) for a, b in reversed(encoder)]
    stack: list[Any] = [layers.Flatten()]
    for i, (n_in, n_out) in enumerate(encoder + decoder):
        stack.append(dense(n_in, n_out))
        if i != len(encoder) - 1:  # the code layer is linear
            stack.append(layers.ReLU() if i < len(encoder) + len(decoder) - 1 else layers.Activation("sigmoid"))
    return sequential([*stack, layers.Reshape((1, 28, 28))], (1, 28, 28))


# --------------------------------------------------------------------------- cnn, rcnn


def cnn(options: dict[str, Any]) -> keras.Model:
    """The TensorFlow-tutorial CIFAR CNN: conv32-pool-conv64-pool-conv64-dense64-dense10."""
    c1, c2, c3 = CNN_CONVS
    return sequential([
        to_nhwc(),
        *conv(3, c1, 3), layers.ReLU(), layers.MaxPooling2D(2),
        *conv(c1, c2, 3), layers.ReLU(), layers.MaxPooling2D(2),
        *conv(c2, c3, 3), layers.ReLU(),
        *flatten_nchw(),
        dense(c3 * 4 * 4, CNN_DENSE), layers.ReLU(),
        dense(CNN_DENSE, 10),
    ], (3, 32, 32))


class RCL(layers.Layer):
    """Liang & Hu 2015's recurrent convolutional layer, unrolled `steps` times (as torch's RCL)."""

    def __init__(self, channels: int, steps: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.steps = steps
        self.feedforward = keras.Sequential(conv(channels, channels, 3, padding=1, bias=False))
        self.recurrent = keras.Sequential(conv(channels, channels, 3, padding=1, bias=False))
        self.bn = [batch_norm() for _ in range(steps + 1)]

    def call(self, u: Any, training: bool | None = None) -> Any:
        ff = self.feedforward(u)  # w_f * u is the same at every step: computed once
        x = ops.relu(self.bn[0](ff, training=training))
        for t in range(1, self.steps + 1):
            x = ops.relu(self.bn[t](ff + self.recurrent(x), training=training))
        return x


def rcnn(options: dict[str, Any]) -> keras.Model:
    """RCNN-K (Liang & Hu 2015): conv 5x5, RCL x2, max pool 3/2, dropout, RCL x2, global max, dense."""
    k, steps = int(options["width"]), int(options["steps"])
    return sequential([
        to_nhwc(),
        *conv(3, k, 5, padding=2, bias=False), batch_norm(), layers.ReLU(),
        RCL(k, steps), RCL(k, steps),
        layers.ZeroPadding2D(1), layers.MaxPooling2D(3, 2),  # zeros never win after a ReLU
        layers.Dropout(0.5),
        RCL(k, steps), RCL(k, steps),
        layers.GlobalMaxPooling2D(),
        dense(k, 10),
    ], (3, 32, 32))


# --------------------------------------------------------------------------- lstm


class LSTMLayer(layers.Layer):
    """One LSTM layer with torch's parameters (w_ih, w_hh, b_ih, b_hh; gates i, f, g, o),
    stored transposed (in, 4H). Keras' own LSTM has one bias and gate order i, f, c, o, so it
    would not have torch's parameter count. The input projection of every time step is one
    matmul; the recurrence is unrolled over the (fixed, short) sequence from a zero state, so
    every backend traces it the same way and every matmul is visible to the FLOP counters."""

    def __init__(self, n_in: int, hidden: int, **kwargs: Any):
        super().__init__(**kwargs)
        init = uniform(1 / math.sqrt(hidden))
        self.hidden = hidden
        self.w_ih = self.add_weight((n_in, 4 * hidden), initializer=init, name="w_ih")
        self.w_hh = self.add_weight((hidden, 4 * hidden), initializer=init, name="w_hh")
        self.b_ih = self.add_weight((4 * hidden,), initializer=init, name="b_ih")
        self.b_hh = self.add_weight((4 * hidden,), initializer=init, name="b_hh")

    def call(self, x: Any) -> Any:  # [B, T, in] -> [B, T, H]
        pre = ops.matmul(x, self.w_ih) + self.b_ih
        h = c = None
        outputs = []
        for t in range(x.shape[1]):
            gates = pre[:, t] + self.b_hh if h is None else pre[:, t] + ops.matmul(h, self.w_hh) + self.b_hh
            i, f, g, o = ops.split(gates, 4, axis=-1)
            c = ops.sigmoid(i) * ops.tanh(g) if c is None else ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
            h = ops.sigmoid(o) * ops.tanh(c)
            outputs.append(h)
        return ops.stack(outputs, axis=1)


def lstm(options: dict[str, Any]) -> keras.Model:
    """Embedding(vocab, H) -> 2-layer LSTM(H) -> Linear(H, vocab), as torch's LSTMLanguageModel.
    The zero initial state's h @ w_hh is skipped (it is zero; torch's counter sees no input
    gradient there either)."""
    hidden, vocab = int(options["hidden"]), int(options["vocab"])
    return sequential([
        layers.Embedding(vocab, hidden, embeddings_initializer=normal(0.0, 1.0)),
        *(LSTMLayer(hidden, hidden) for _ in range(LSTM_LAYERS)),
        dense(hidden, vocab),
    ], WORKLOADS["lstm"].input_shape, dtype="int32")


# --------------------------------------------------------------------------- dcgan


def dcgan(options: dict[str, Any]) -> dict[str, keras.Model]:
    """Radford et al. 2016's 64x64 DCGAN (nz=100, ngf=ndf=64), N(0, 0.02) weights, BN scale N(1, 0.02)."""
    f, nz = DCGAN_FILTERS, WORKLOADS["dcgan"].latent_size
    assert nz is not None
    weights, bn_scale = normal(0.0, 0.02), normal(1.0, 0.02)

    def up(c_out: int, stride: int) -> list[Any]:
        # torch's ConvTranspose2d(k=4, stride 1, padding 0) is 'valid'; (k=4, stride 2, padding 1) is 'same'
        return [layers.Conv2DTranspose(c_out, 4, stride, padding="valid" if stride == 1 else "same", use_bias=False,
                                       kernel_initializer=weights)]

    def down(c_in: int, c_out: int, norm: bool = True) -> list[Any]:
        stack = conv(c_in, c_out, 4, 2, 1, bias=False, kernel_init=weights)
        return [*stack, *([batch_norm(scale_init=bn_scale)] if norm else []), layers.LeakyReLU(0.2)]

    g_stack: list[Any] = [to_nhwc()]
    for c_out, stride in ((f * 8, 1), (f * 4, 2), (f * 2, 2), (f, 2)):
        g_stack += [*up(c_out, stride), batch_norm(scale_init=bn_scale), layers.ReLU()]
    generator = sequential([*g_stack, *up(3, 2), layers.Activation("tanh"), layers.Permute((3, 1, 2))], (nz, 1, 1))
    discriminator = sequential([
        to_nhwc(), *down(3, f, norm=False), *down(f, f * 2), *down(f * 2, f * 4), *down(f * 4, f * 8),
        *conv(f * 8, 1, 4, bias=False, kernel_init=weights), layers.Flatten(),
    ], WORKLOADS["dcgan"].input_shape)
    return {"discriminator": discriminator, "generator": generator}


# --------------------------------------------------------------------------- resnet


class BasicBlock(layers.Layer):
    """Two 3x3 conv-BN layers with an option-A shortcut (He et al. 2016), as torch's BasicBlock."""

    def __init__(self, in_planes: int, planes: int, stride: int, init: Any, **kwargs: Any):
        super().__init__(**kwargs)
        self.conv1 = keras.Sequential(conv(in_planes, planes, 3, stride, 1, bias=False, kernel_init=init))
        self.bn1 = batch_norm()
        self.conv2 = keras.Sequential(conv(planes, planes, 3, 1, 1, bias=False, kernel_init=init))
        self.bn2 = batch_norm()
        self.stride, self.extra = stride, planes - in_planes

    def shortcut(self, x: Any) -> Any:
        if self.stride == 1 and self.extra == 0:
            return x
        x = x[:, :: self.stride, :: self.stride, :]
        half = self.extra // 2
        return ops.pad(x, ((0, 0), (0, 0), (0, 0), (half, self.extra - half)))

    def call(self, x: Any, training: bool | None = None) -> Any:
        out = ops.relu(self.bn1(self.conv1(x), training=training))
        return ops.relu(self.bn2(self.conv2(out), training=training) + self.shortcut(x))


def resnet(options: dict[str, Any]) -> keras.Model:
    """He et al. 2016's CIFAR ResNet (depth 6n+2), convolutions kaiming-normal(fan_out, ReLU)."""
    depth = int(options["depth"])
    if (depth - 2) % 6:
        raise ValueError(f"CIFAR ResNet depth must be 6n+2, got {depth}")
    n = (depth - 2) // 6
    init = kaiming_normal_fan_out()
    stack: list[Any] = [to_nhwc(), *conv(3, 16, 3, 1, 1, bias=False, kernel_init=init), batch_norm(), layers.ReLU()]
    in_planes = 16
    for planes, stride in ((16, 1), (32, 2), (64, 2)):
        for i in range(n):
            stack.append(BasicBlock(in_planes, planes, stride if i == 0 else 1, init))
            in_planes = planes
    return sequential([*stack, layers.GlobalAveragePooling2D(), dense(64, 10)], (3, 32, 32))


# --------------------------------------------------------------------------- catsdogs


def catsdogs(options: dict[str, Any]) -> keras.Model:
    """Seed 001's Keras cats-vs-dogs CNN (see torch's builder): 13 conv 3x3 'same' + ReLU in five
    blocks with flooring max pools, dense 2048 / dropout / batch norm (Keras' own defaults: eps
    1e-3, moving averages at 0.99) twice, one logit. A batch of one normalises to beta."""
    stack: list[Any] = [to_nhwc()]
    c_in = 3
    for block, pool in zip(CATSDOGS_BLOCKS, CATSDOGS_POOLS, strict=True):
        for c_out in block:
            stack += [*conv(c_in, c_out, 3, padding=1), layers.ReLU()]
            c_in = c_out
        stack.append(layers.MaxPooling2D(pool))
    stack += flatten_nchw()
    n_in = catsdogs_flat_features(WORKLOADS["catsdogs"].input_shape[-1])
    for width, dropout in CATSDOGS_DENSE:
        stack += [dense(n_in, width), layers.ReLU(), layers.Dropout(dropout), batch_norm(momentum=0.01, eps=1e-3)]
        n_in = width
    return sequential([*stack, dense(n_in, 1)], WORKLOADS["catsdogs"].input_shape)


# --------------------------------------------------------------------------- registry

BUILDERS: dict[str, Callable[[dict[str, Any]], keras.Model | dict[str, keras.Model]]] = {
    "mlp": mlp, "autoencoder": autoencoder, "cnn": cnn, "rcnn": rcnn,
    "lstm": lstm, "dcgan": dcgan, "resnet": resnet, "catsdogs": catsdogs,
    "gpt": transformers.gpt, "vit": transformers.vit,
}


def build_parts(workload: Workload, options: dict[str, Any]) -> dict[str, keras.Model]:
    """The workload's separately optimised parts, in update order, each a built keras.Model
    (with resolved `options`); a one-part workload is its whole model."""
    built = BUILDERS[workload.name](options)
    if isinstance(built, dict):
        return {part.name: built[part.name] for part in workload.parts}
    return {workload.parts[0].name: built}


def trainable_params(parts: dict[str, keras.Model]) -> int:
    """Elements of every trainable weight (batch norm's moving statistics are not trainable)."""
    return sum(math.prod(w.shape) for model in parts.values() for w in model.trainable_weights)
