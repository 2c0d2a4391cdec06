"""The reference networks in PyTorch, one short builder per workload.

Each builder follows the paper (or published model) named in its docstring and uses the
paper's names where it has them. `build_model` takes the workload's resolved options
(defaults merged). Layer plans that the analytic FLOP and parameter counts also need come
from rigbench.workloads.flops. This is the only place in the adapter that knows a workload
by name; the batch, loss and step are in step.py, driven by the workload's declared facts.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rigbench.frameworks.torch import transformers
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

# --------------------------------------------------------------------------- mlp


def mlp(options: dict[str, Any]) -> nn.Module:
    """Fully connected net in the shape of Shi et al. 2016's FCN-S.

    Shi, Wang, Xu & Chu, "Benchmarking State-of-the-Art Deep Learning Software Tools"
    (2016): three hidden layers of 2048 units; here on 28x28 inputs with 10 classes.
    """
    widths = (784, *MLP_HIDDEN)
    layers: list[nn.Module] = [nn.Flatten()]
    for n_in, n_out in pairwise(widths):
        layers += [nn.Linear(n_in, n_out), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(widths[-1], 10))


# --------------------------------------------------------------------------- autoencoder


def autoencoder(options: dict[str, Any]) -> nn.Module:
    """Deep autoencoder of Hinton & Salakhutdinov 2006 (Science 313:504).

    Encoder 784-1000-500-250-30, mirrored decoder 30-250-500-1000-784, logistic output
    for pixel intensities in [0, 1]. The paper's RBM pre-training is not reproduced
    (rigbench measures training speed, which the fine-tuning step represents); ReLU is
    used between layers and the 30-unit code layer is linear as in the paper.
    """
    layers: list[nn.Module] = [nn.Flatten()]
    encoder = list(pairwise(AUTOENCODER_SIZES))
    decoder = [(b, a) for a, b in reversed(encoder)]
    for i, (n_in, n_out) in enumerate(encoder + decoder):
        layers.append(nn.Linear(n_in, n_out))
        if i == len(encoder) - 1:
            continue  # linear code layer
        layers.append(nn.ReLU() if i < len(encoder) + len(decoder) - 1 else nn.Sigmoid())
    layers.append(nn.Unflatten(1, (1, 28, 28)))
    return nn.Sequential(*layers)


# --------------------------------------------------------------------------- cnn


def cnn(options: dict[str, Any]) -> nn.Module:
    """The CIFAR-10 CNN of the TensorFlow 2 tutorial "Convolutional Neural Network (CNN)".

    As used in Yin 2020 (seed 003): conv32-pool-conv64-pool-conv64-dense64-dense10 with
    3x3 'valid' convolutions; 122,570 parameters, the count the tutorial's summary prints.
    """
    c1, c2, c3 = CNN_CONVS
    return nn.Sequential(
        nn.Conv2d(3, c1, 3), nn.ReLU(), nn.MaxPool2d(2),    # 32 -> 30 -> 15
        nn.Conv2d(c1, c2, 3), nn.ReLU(), nn.MaxPool2d(2),   # 15 -> 13 -> 6
        nn.Conv2d(c2, c3, 3), nn.ReLU(),                    # 6 -> 4
        nn.Flatten(),
        nn.Linear(c3 * 4 * 4, CNN_DENSE), nn.ReLU(),
        nn.Linear(CNN_DENSE, 10),
    )


# --------------------------------------------------------------------------- rcnn


class RCL(nn.Module):
    """Recurrent convolutional layer of Liang & Hu 2015 (CVPR), eq. (1)-(2), unrolled T steps.

    x(0) = ReLU(BN_0(w_f * u)) and x(t) = ReLU(BN_t(w_f * u + w_r * x(t-1))), with the
    feed-forward kernel w_f and the recurrent kernel w_r shared across steps. The paper
    normalises with local response normalisation; like most re-implementations we use batch
    norm, one per unrolled step (statistics differ per step), which trains reliably.
    Convolutions carry no bias because the batch norm's shift replaces it.
    """

    def __init__(self, channels: int, steps: int):
        super().__init__()
        self.steps = steps
        self.feedforward = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.recurrent = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn = nn.ModuleList(nn.BatchNorm2d(channels) for _ in range(steps + 1))

    def forward(self, u: Tensor) -> Tensor:
        ff = self.feedforward(u)  # w_f * u is the same at every step: compute it once
        x = F.relu(self.bn[0](ff))
        for t in range(1, self.steps + 1):
            x = F.relu(self.bn[t](ff + self.recurrent(x)))
        return x


def rcnn(options: dict[str, Any]) -> nn.Module:
    """RCNN-K of Liang & Hu, "Recurrent Convolutional Neural Network for Object Recognition" (CVPR 2015).

    Layer 1 is a feed-forward 5x5 convolution with K filters; then RCL, RCL, 3x3/2 max
    pooling, dropout, RCL, RCL, global max pooling and a softmax classifier. Options:
    `width` = K (RCNN-96 by default, 0.67M parameters in the paper) and `steps` = T.
    Dropout rate 0.5 is our choice (the conventional rate; the paper does not fix it here).
    """
    k, steps = int(options["width"]), int(options["steps"])
    return nn.Sequential(
        nn.Conv2d(3, k, 5, padding=2, bias=False), nn.BatchNorm2d(k), nn.ReLU(),
        RCL(k, steps), RCL(k, steps),
        nn.MaxPool2d(3, stride=2, padding=1),
        nn.Dropout(0.5),
        RCL(k, steps), RCL(k, steps),
        nn.AdaptiveMaxPool2d(1), nn.Flatten(),
        nn.Linear(k, 10),
    )


# --------------------------------------------------------------------------- lstm


class LSTMLanguageModel(nn.Module):
    """Two-layer LSTM word model (Zaremba, Sutskever & Vinyals 2014 style, as benchmarked by Shi et al. 2016).

    Embedding(10000, H) -> 2-layer LSTM(H) -> Linear(H, 10000), next-token cross-entropy.
    Every step starts from a zero state (no truncated-BPTT carry-over between batches),
    which leaves the per-step work unchanged. No dropout: Shi et al. time the plain model.
    """

    def __init__(self, hidden: int, layers: int, vocab: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.lstm = nn.LSTM(hidden, hidden, layers, batch_first=True)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, tokens: Tensor) -> Tensor:
        h, _ = self.lstm(self.embedding(tokens))
        return self.decoder(h)


def lstm(options: dict[str, Any]) -> nn.Module:
    """LSTM language model with hidden size `hidden` (default 256) over `vocab` tokens."""
    return LSTMLanguageModel(int(options["hidden"]), LSTM_LAYERS, int(options["vocab"]))


# --------------------------------------------------------------------------- dcgan


def _dcgan_init(m: nn.Module) -> None:
    """Weight init of Radford et al. 2016: N(0, 0.02); batch-norm scale N(1, 0.02)."""
    if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif isinstance(m, nn.BatchNorm2d):
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


def dcgan(options: dict[str, Any]) -> nn.Module:
    """DCGAN of Radford, Metz & Chintala 2016 for 64x64x3 images, as in pytorch/examples.

    nz=100, ngf=ndf=64. The generator is a stack of strided transposed convolutions with
    batch norm and ReLU, ending in Tanh; the discriminator mirrors it with LeakyReLU(0.2)
    (no batch norm on its first layer) and ends in one logit (the sigmoid lives in
    BCEWithLogits, which is numerically safe under autocast).
    Returns a ModuleDict with `generator` and `discriminator`.
    """
    ngf = ndf = DCGAN_FILTERS
    nz = WORKLOADS["dcgan"].latent_size
    assert nz is not None
    generator = nn.Sequential(
        nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),       # 4x4
        nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),  # 8x8
        nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),  # 16x16
        nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),          # 32x32
        nn.ConvTranspose2d(ngf, 3, 4, 2, 1, bias=False), nn.Tanh(),                                         # 64x64
    )
    discriminator = nn.Sequential(
        nn.Conv2d(3, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, True),                                    # 32x32
        nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, True),     # 16x16
        nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2, True),  # 8x8
        nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 8), nn.LeakyReLU(0.2, True),  # 4x4
        nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False), nn.Flatten(),                                           # 1 logit
    )
    model = nn.ModuleDict({"generator": generator, "discriminator": discriminator})
    model.apply(_dcgan_init)
    return model


# --------------------------------------------------------------------------- resnet


class BasicBlock(nn.Module):
    """Two 3x3 conv-BN layers with an identity shortcut (He et al. 2016, fig. 2).

    When the shape changes, the shortcut is option A of section 3.3: stride-2 subsampling
    and zero-padded extra channels, so it adds no parameters (used for CIFAR, sec. 4.2).
    """

    def __init__(self, in_planes: int, planes: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.stride, self.extra = stride, planes - in_planes

    def shortcut(self, x: Tensor) -> Tensor:
        if self.stride == 1 and self.extra == 0:
            return x
        x = x[:, :, :: self.stride, :: self.stride]
        half = self.extra // 2
        return F.pad(x, (0, 0, 0, 0, half, self.extra - half))

    def forward(self, x: Tensor) -> Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


def resnet(options: dict[str, Any]) -> nn.Module:
    """CIFAR ResNet of He, Zhang, Ren & Sun 2016 (CVPR), section 4.2.

    3x3 conv with 16 filters, then 3 stages of n BasicBlocks with 16/32/64 filters on
    32/16/8 maps (depth = 6n+2), global average pooling and a 10-way fully connected layer.
    ResNet-20 has 269,722 parameters and ResNet-56 853,018 (Table 6: 0.27M and 0.85M).
    """
    depth = int(options["depth"])
    if (depth - 2) % 6:
        raise ValueError(f"CIFAR ResNet depth must be 6n+2, got {depth}")
    n = (depth - 2) // 6
    layers: list[nn.Module] = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
    in_planes = 16
    for planes, stride in ((16, 1), (32, 2), (64, 2)):
        for i in range(n):
            layers.append(BasicBlock(in_planes, planes, stride if i == 0 else 1))
            in_planes = planes
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
    model = nn.Sequential(*layers)
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")  # He et al. 2015 init
    return model


# --------------------------------------------------------------------------- catsdogs


class KerasBatchNorm1d(nn.BatchNorm1d):
    """Keras' BatchNormalization on dense features: epsilon 1e-3, moving averages at momentum
    0.99 (torch's momentum is the new batch's weight: 0.01), and a batch of one accepted in
    training, where torch refuses it. Keras normalises a single sample by its own statistics
    (mean = the sample, variance 0), which gives beta; so does this, and the running mean and
    variance move toward that sample and 0 as Keras' do. A batch of one is the smallest a batch
    sweep tries."""

    MOMENTUM = 0.01

    def __init__(self, features: int) -> None:
        super().__init__(features, eps=1e-3, momentum=self.MOMENTUM)

    def forward(self, x: Tensor) -> Tensor:
        if not (self.training and x.shape[0] == 1):
            return super().forward(x)
        mean, var, seen = self.running_mean, self.running_var, self.num_batches_tracked
        assert mean is not None and var is not None and seen is not None  # track_running_stats
        with torch.no_grad():
            mean.lerp_(x[0].detach().to(mean.dtype), self.MOMENTUM)
            var.mul_(1 - self.MOMENTUM)
            seen.add_(1)
        return self.weight * (x - x.mean(0)) / (x.var(0, unbiased=False) + self.eps).sqrt() + self.bias


def catsdogs(options: dict[str, Any]) -> nn.Module:
    """Seed 001's Keras cats-vs-dogs CNN, as its notebook (GitHub
    saranshagarwal202/Cats_versus_Dogs) prints it in model.summary().

    256x256x3 input; 13 Conv2D 3x3 'same' + ReLU (keeping their bias, Keras' default; no batch
    norm) in five blocks of 2, 2, 3, 3, 3 with 32/64/128/256/512 filters, MaxPooling2D after each
    (2, 2, 2, 3, 3: window = stride, flooring: 256 -> 128 -> 64 -> 32 -> 10 -> 3); flatten 4608;
    Dense 2048 ReLU, Dropout 0.5, BatchNormalization; Dense 2048 ReLU, Dropout 0.4,
    BatchNormalization; Dense 1. Published: 21,455,521 trainable and 8,192 non-trainable
    parameters (the two batch norms' moving means and variances), as this model has.
    Output: one logit (the sigmoid is in the loss, BCE with logits; see the workload's origin).
    Initialisation is torch's default, not Keras' Glorot-uniform.
    """
    layers: list[nn.Module] = []
    c_in = 3
    for block, pool in zip(CATSDOGS_BLOCKS, CATSDOGS_POOLS, strict=True):
        for c_out in block:
            layers += [nn.Conv2d(c_in, c_out, 3, padding=1), nn.ReLU()]
            c_in = c_out
        layers.append(nn.MaxPool2d(pool))
    layers.append(nn.Flatten())
    n_in = catsdogs_flat_features(WORKLOADS["catsdogs"].input_shape[-1])
    for width, dropout in CATSDOGS_DENSE:
        layers += [nn.Linear(n_in, width), nn.ReLU(), nn.Dropout(dropout), KerasBatchNorm1d(width)]
        n_in = width
    layers.append(nn.Linear(n_in, 1))
    return nn.Sequential(*layers)


# --------------------------------------------------------------------------- registry

BUILDERS: dict[str, Callable[[dict[str, Any]], nn.Module]] = {
    "mlp": mlp, "autoencoder": autoencoder, "cnn": cnn, "rcnn": rcnn,
    "lstm": lstm, "dcgan": dcgan, "resnet": resnet, "catsdogs": catsdogs,
    "gpt": transformers.gpt, "vit": transformers.vit,
}


def build_model(workload_name: str, options: dict[str, Any]) -> nn.Module:
    """The network of `workload_name`, built with resolved `options` on the current default device."""
    return BUILDERS[workload_name](options)


def trainable_params(model: nn.Module) -> int:
    """Number of trainable parameters (batch-norm running statistics are buffers, not counted)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
