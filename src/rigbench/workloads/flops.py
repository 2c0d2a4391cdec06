"""Analytic training FLOPs and parameter counts of every workload, from its layer shapes.

Framework-free: these figures are the same for every adapter, so MFU and the roofline compare
across frameworks. They are the figure of record (ChildReport.flops_per_sample, `rigbench
workloads`); each adapter's own counter cross-checks them in tests/contract/.

The convention is what torch's FlopCounterMode counts on the meta device
(frameworks/torch/flops.py), so the two agree within a few percent:
- Only matrix multiplies and convolutions count, at 2 FLOPs per multiply-add. Bias adds,
  element-wise ops, normalisation, pooling, the embedding lookup, the loss and the optimiser
  update are not counted (a few percent of the total for these networks, at most).
- Forward, then backward: every weighted layer computes its weight gradient (= its forward
  FLOPs) and its input gradient (= its forward FLOPs again), except a layer whose input needs
  no gradient (the data, the GAN's noise, a detached tensor, the LSTM's zero initial state),
  which computes no input gradient, and a layer whose weights the update does not train (the
  GAN's discriminator in the generator's update), which computes no weight gradient. Plain
  networks therefore cost 3x forward less the first layer's forward. The figure is the work the
  training step needs: work a framework does and throws away (torch's autograd computes the
  discriminator's weight gradients in the generator's update) is not counted, so it shows as a
  lower MFU.
- A transposed convolution counts its multiply-adds per *input* position
  (c_in x c_out x k x k x h_in x w_in), which is what it computes.
- Per sample = one training step's FLOPs / batch size (every counted op is linear in it).

Layer plans that both the builders and these formulas need are stated here once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from rigbench.workloads import Workload, resolved_options
from rigbench.workloads.transformers import (
    Transformer,
    gpt_params,
    gpt_train_flops,
    shape_of,
    vit_params,
    vit_train_flops,
)

#: Hidden widths of the fully connected net (Shi et al. 2016's FCN-S).
MLP_HIDDEN = (2048, 2048, 2048)
#: Encoder widths of the autoencoder (Hinton & Salakhutdinov 2006); the decoder mirrors them.
AUTOENCODER_SIZES = (784, 1000, 500, 250, 30)
#: The TensorFlow-tutorial CIFAR CNN: conv widths (3x3 'valid') and the dense width.
CNN_CONVS = (32, 64, 64)
CNN_DENSE = 64
#: Seed 001's cats-vs-dogs notebook (its Keras model.summary()): conv widths per block, all 3x3
#: 'same' + ReLU without batch norm, and the max pool after each block (window = stride; Keras'
#: 'valid' pooling floors, so 256 -> 128 -> 64 -> 32 -> 10 -> 3 and the flatten has 3*3*512 = 4608).
CATSDOGS_BLOCKS = ((32, 32), (64, 64), (128, 128, 128), (256, 256, 256), (512, 512, 512))
CATSDOGS_POOLS = (2, 2, 2, 3, 3)
#: Its dense layers: width and dropout of each, in the order Dense(ReLU), Dropout, BatchNormalization;
#: then Dense(1) (a sigmoid there, a logit here: see the workload's origin).
CATSDOGS_DENSE = ((2048, 0.5), (2048, 0.4))
#: Base filters of the DCGAN generator and discriminator (ngf = ndf = 64).
DCGAN_FILTERS = 64
#: LSTM layers of the language model.
LSTM_LAYERS = 2


@dataclass(frozen=True)
class Layer:
    """One layer's forward multiply-adds per sample, its trainable parameters and its
    non-trainable state (batch norm's running mean and variance)."""

    macs: int
    params: int
    input_grad: bool = True  # False when its input needs no gradient (see the module docstring)
    stats: int = 0


def dense(n_in: int, n_out: int, bias: bool = True, input_grad: bool = True) -> Layer:
    return Layer(n_in * n_out, n_in * n_out + (n_out if bias else 0), input_grad)


def conv(c_in: int, c_out: int, k: int, out_hw: int, bias: bool = True, input_grad: bool = True) -> Layer:
    """A k x k convolution producing an out_hw x out_hw map."""
    weights = c_in * c_out * k * k
    return Layer(weights * out_hw * out_hw, weights + (c_out if bias else 0), input_grad)


def conv_t(c_in: int, c_out: int, k: int, in_hw: int, input_grad: bool = True) -> Layer:
    """A k x k transposed convolution (no bias) on an in_hw x in_hw map."""
    weights = c_in * c_out * k * k
    return Layer(weights * in_hw * in_hw, weights, input_grad)


def norm(channels: int) -> Layer:
    """Batch norm: a scale and a shift per channel (trainable), a running mean and variance per
    channel (not trainable), no counted FLOPs."""
    return Layer(0, 2 * channels, stats=2 * channels)


def forward_flops(layers: list[Layer]) -> int:
    return sum(2 * layer.macs for layer in layers)


def train_flops(layers: list[Layer]) -> int:
    """Forward + weight gradients + input gradients (where needed) of one sample."""
    return sum(2 * layer.macs * (3 if layer.input_grad else 2) for layer in layers)


def param_count(layers: list[Layer]) -> int:
    return sum(layer.params for layer in layers)


# --------------------------------------------------------------------------- layer plans


def mlp_layers(options: dict[str, Any]) -> list[Layer]:
    widths = (784, *MLP_HIDDEN, 10)
    return [dense(a, b, input_grad=i > 0) for i, (a, b) in enumerate(pairwise(widths))]


def autoencoder_layers(options: dict[str, Any]) -> list[Layer]:
    encoder = list(pairwise(AUTOENCODER_SIZES))
    decoder = [(b, a) for a, b in reversed(encoder)]
    return [dense(a, b, input_grad=i > 0) for i, (a, b) in enumerate(encoder + decoder)]


def cnn_layers(options: dict[str, Any]) -> list[Layer]:
    c1, c2, c3 = CNN_CONVS
    return [conv(3, c1, 3, 30, input_grad=False),  # 32 -> 30, pool -> 15
            conv(c1, c2, 3, 13),                   # 15 -> 13, pool -> 6
            conv(c2, c3, 3, 4),                    # 6 -> 4
            dense(c3 * 4 * 4, CNN_DENSE), dense(CNN_DENSE, 10)]


def rcnn_layers(options: dict[str, Any]) -> list[Layer]:
    """Conv 5x5 + BN, four RCLs (feed-forward conv once, recurrent conv `steps` times, a BN
    per unrolled step; the first two at 32x32, the last two at 16x16 after the pool), fc."""
    k, steps = int(options["width"]), int(options["steps"])
    layers = [conv(3, k, 5, 32, bias=False, input_grad=False), norm(k)]
    for hw in (32, 32, 16, 16):
        recurrent = conv(k, k, 3, hw, bias=False)  # w_r: one weight, applied `steps` times
        layers += [conv(k, k, 3, hw, bias=False),  # feed-forward w_f * u, once
                   Layer(recurrent.macs * steps, recurrent.params)]
        layers += [norm(k)] * (steps + 1)
    return layers + [dense(k, 10)]


def resnet_layers(options: dict[str, Any]) -> list[Layer]:
    """3x3 conv 16 + BN, 3 stages of n BasicBlocks (two 3x3 conv + BN each; option-A
    shortcuts without parameters or counted FLOPs) on 32/16/8 maps, fc 64 -> 10."""
    depth = int(options["depth"])
    n = (depth - 2) // 6
    layers = [conv(3, 16, 3, 32, bias=False, input_grad=False), norm(16)]
    c_in = 16
    for planes, hw in ((16, 32), (32, 16), (64, 8)):
        for _ in range(n):
            layers += [conv(c_in, planes, 3, hw, bias=False), norm(planes),
                       conv(planes, planes, 3, hw, bias=False), norm(planes)]
            c_in = planes
    return layers + [dense(64, 10)]


def catsdogs_flat_features(input_hw: int = 256) -> int:
    """Width of the flatten after the last pool: 3 * 3 * 512 = 4608 on 256x256 images."""
    hw = input_hw
    for pool in CATSDOGS_POOLS:
        hw //= pool
    return CATSDOGS_BLOCKS[-1][-1] * hw * hw


def catsdogs_layers(options: dict[str, Any]) -> list[Layer]:
    """13 convs on 256/128/64/32/10 maps, then dense 4608 -> 2048 -> 2048 (batch norm after
    each) -> 1: 21,455,521 trainable parameters and 8,192 batch-norm statistics, as published."""
    layers: list[Layer] = []
    c_in, hw = 3, 256
    for block, pool in zip(CATSDOGS_BLOCKS, CATSDOGS_POOLS, strict=True):
        for c_out in block:
            layers.append(conv(c_in, c_out, 3, hw, input_grad=bool(layers)))
            c_in = c_out
        hw //= pool
    n_in = catsdogs_flat_features(256)
    for width, _dropout in CATSDOGS_DENSE:
        layers += [dense(n_in, width), norm(width)]
        n_in = width
    return layers + [dense(n_in, 1)]


def dcgan_generator(latent_size: int) -> list[Layer]:
    f = DCGAN_FILTERS
    return [conv_t(latent_size, f * 8, 4, 1, input_grad=False), norm(f * 8),  # 1 -> 4
            conv_t(f * 8, f * 4, 4, 4), norm(f * 4),                            # -> 8
            conv_t(f * 4, f * 2, 4, 8), norm(f * 2),                            # -> 16
            conv_t(f * 2, f, 4, 16), norm(f),                                   # -> 32
            conv_t(f, 3, 4, 32)]                                                # -> 64


def dcgan_discriminator() -> list[Layer]:
    f = DCGAN_FILTERS
    return [conv(3, f, 4, 32, bias=False),                      # 64 -> 32, no batch norm
            conv(f, f * 2, 4, 16, bias=False), norm(f * 2),
            conv(f * 2, f * 4, 4, 8, bias=False), norm(f * 4),
            conv(f * 4, f * 8, 4, 4, bias=False), norm(f * 8),
            conv(f * 8, 1, 4, 1, bias=False)]                   # one logit


# --------------------------------------------------------------------------- FLOPs


def _plain(plan: Callable[[dict[str, Any]], list[Layer]]) -> Callable[[Workload, dict[str, Any]], float]:
    return lambda workload, options: float(train_flops(plan(options)))


def lstm_analytic_train_flops(seq: int, hidden: int, layers: int, vocab: int, batch: int) -> int:
    """Matmul FLOPs of one training step of the LSTM language model, for `batch` sequences.

    Forward, per token: each layer computes its four gates from its input and its previous
    hidden state, 2*4*(in+H)*H FLOPs (in = H here: the embedding has width H), and the
    decoder 2*H*vocab. The embedding lookup is indexing, not a matmul.
    Backward: every matmul needs its weight gradient (= forward FLOPs) and, with one
    exception, its input gradient (= forward FLOPs again). Layer 0's input gradient *is*
    computed, because the embedding weights require grad. The exception: the initial
    hidden state h(0) is a constant zero tensor, so no layer computes the gradient w.r.t.
    it -- 2*4*H*H FLOPs per sequence and layer fewer than 3x forward.
    """
    forward_per_token = layers * 2 * 4 * (hidden + hidden) * hidden + 2 * hidden * vocab
    forward = forward_per_token * seq * batch
    skipped_h0_grads = layers * 2 * 4 * hidden * hidden * batch
    return 3 * forward - skipped_h0_grads


def _lstm(workload: Workload, options: dict[str, Any]) -> float:
    return float(lstm_analytic_train_flops(workload.input_shape[0], int(options["hidden"]),
                                           LSTM_LAYERS, int(options["vocab"]), batch=1))


def dcgan_discarded_d_weight_grad_flops(latent_size: int) -> int:
    """What a step that computes D's weight gradients in the G update does beyond
    dcgan_train_flops (Df): torch's autograd computes them and the step throws them away; JAX,
    TensorFlow and the Keras family ask for G's gradients only (frameworks/jax/step.py)."""
    return forward_flops(dcgan_discriminator())


def dcgan_train_flops(latent_size: int) -> int:
    """One DCGAN step per real image: G(z) once; D on the real batch and on G(z) detached,
    backward through D only (the D update); D on G(z) again and backward through D and G
    (the G update, which needs D's input gradients but not its weight gradients: see
    dcgan_discarded_d_weight_grad_flops). With Gf, Df the forward FLOPs and G1, D1 those of
    each first layer: forward Gf + 3 Df; D update 2 Df (weights) + 2 (Df - D1) (inputs:
    neither the data nor the detached G(z) needs one); G update Df (D's inputs), Gf + Gf - G1
    (G, weights and inputs but not z's): 3 Gf - G1 + 8 Df - 2 D1. (Until 2026-11-28 the figure
    counted D's weight gradients in the G update too, 9 Df: torch's step, not the model's.)
    """
    gen, disc = dcgan_generator(latent_size), dcgan_discriminator()
    g_f, d_f = forward_flops(gen), forward_flops(disc)
    g_1, d_1 = forward_flops(gen[:1]), forward_flops(disc[:1])
    return 3 * g_f - g_1 + 8 * d_f - 2 * d_1


def _dcgan(workload: Workload, options: dict[str, Any]) -> float:
    assert workload.latent_size is not None
    return float(dcgan_train_flops(workload.latent_size))


_FLOPS: dict[str, Callable[[Workload, dict[str, Any]], float]] = {
    "mlp": _plain(mlp_layers), "autoencoder": _plain(autoencoder_layers), "cnn": _plain(cnn_layers),
    "rcnn": _plain(rcnn_layers), "resnet": _plain(resnet_layers), "catsdogs": _plain(catsdogs_layers),
    "lstm": _lstm, "dcgan": _dcgan,
    "gpt": lambda workload, options: float(gpt_train_flops(options)),
    "vit": lambda workload, options: float(vit_train_flops(options)),
}


def train_flops_per_sample(workload: Workload, options: dict[str, Any] | None = None) -> float:
    """Training FLOPs of one sample in one step, under the convention above: the figure of
    record for MFU and the roofline, the same in every framework. `options` are resolved
    against the workload's defaults."""
    return _FLOPS[workload.name](workload, resolved_options(workload, options or {}))


# --------------------------------------------------------------------------- parameters


def _lstm_params(workload: Workload, options: dict[str, Any]) -> int:
    hidden, vocab = int(options["hidden"]), int(options["vocab"])
    gates = LSTM_LAYERS * (4 * hidden * (hidden + hidden) + 2 * 4 * hidden)  # torch has two bias vectors
    return vocab * hidden + gates + hidden * vocab + vocab


_PLANS: dict[str, Callable[[dict[str, Any]], list[Layer]]] = {
    "mlp": mlp_layers, "autoencoder": autoencoder_layers, "cnn": cnn_layers, "rcnn": rcnn_layers,
    "resnet": resnet_layers, "catsdogs": catsdogs_layers,
}


def trainable_params(workload: Workload, options: dict[str, Any]) -> int:
    """Trainable parameters from the layer plan (resolved options); batch-norm running
    statistics are not parameters. The LSTM counts torch's two gate bias vectors per layer
    (cuDNN's layout; Keras has one), so a framework with one may differ by 2 x 4H."""
    if workload.name == "lstm":
        return _lstm_params(workload, options)
    if workload.name in ("gpt", "vit"):
        return gpt_params(options) if workload.name == "gpt" else vit_params(options)
    if workload.name == "dcgan":
        assert workload.latent_size is not None
        return param_count(dcgan_generator(workload.latent_size) + dcgan_discriminator())
    return param_count(_PLANS[workload.name](options))


def nontrainable_params(workload: Workload, options: dict[str, Any]) -> int:
    """Non-trainable state from the layer plan (resolved options): the running mean and
    variance of every batch norm, which Keras' summary counts as "Non-trainable params"."""
    if workload.name in ("lstm", "gpt", "vit"):
        return 0
    if workload.name == "dcgan":
        assert workload.latent_size is not None
        layers = dcgan_generator(workload.latent_size) + dcgan_discriminator()
    else:
        layers = _PLANS[workload.name](options)
    return sum(layer.stats for layer in layers)


def transformer_shape(workload: Workload, options: dict[str, Any]) -> Transformer | None:
    """The attention stack of a transformer workload (options resolved here), None for any
    other: what an adapter needs to name its attention kernel without naming the workload."""
    return shape_of(workload.name, resolved_options(workload, options))
