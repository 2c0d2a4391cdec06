"""A training step in PyTorch, driven by the workload's declared facts (rigbench.workloads).

`synthetic_batch` makes the resident batch a trial trains on, and `training_step` is the one
definition of "a training step" shared by the trainer (which times it), the training and
lr-find loops, and the FLOP and traffic counters (which count it), so none can drift apart.
Nothing here knows a workload by name: the loss kind, targets, input layout and parts map
to torch through the tables below.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from rigbench.workloads import Workload

#: `update(loss, part)` runs the backward pass of `loss` and, in the trainer, the optimiser
#: step of `part` (a Part.name of the workload: "model", or e.g. "discriminator").
Update = Callable[[Tensor, str], None]
Autocast = Callable[[], AbstractContextManager[Any]]


# --------------------------------------------------------------------------- data


def latent_noise(workload: Workload, batch_size: int, device: torch.device | str) -> Tensor:
    """z ~ N(0, 1) [B, latent_size, 1, 1], from torch's default generator."""
    assert workload.latent_size is not None, f"{workload.name} declares no latent size"
    return torch.randn(batch_size, workload.latent_size, 1, 1, device=device)


def _synthetic_images(workload: Workload, batch_size: int, device: torch.device | str) -> Tensor:
    shape = (batch_size, *workload.input_shape)
    if workload.input_range == "unit":
        return torch.rand(shape, device=device)  # pixel intensities, a sigmoid output's range
    return torch.randn(shape, device=device)


#: targets kind -> (images, batch size, workload, device) -> synthetic targets
_SYNTHETIC_TARGETS: dict[str, Callable[[Tensor, int, Workload, Any], Tensor]] = {
    "class_index": lambda x, b, w, dev: torch.randint(0, w.num_classes or 2, (b,), device=dev),
    "binary": lambda x, b, w, dev: torch.randint(0, 2, (b,), device=dev).float(),
    "input": lambda x, b, w, dev: x,
    "latent_noise": lambda x, b, w, dev: latent_noise(w, b, dev),
}


def synthetic_batch(workload: Workload, batch_size: int, device: torch.device | str = "cpu") -> tuple[Tensor, Tensor]:
    """A fixed batch with the workload's real shapes, drawn from torch's default generator.

    Returns (inputs, targets): token ids in [0, vocab) with the next tokens as targets; else
    images ~ N(0, 1) (U(0, 1) for a unit input range) with targets of the declared kind:
    random class indices, random 0/1 floats, the images themselves, or latent noise.
    """
    if workload.layout == "tokens":
        assert workload.vocab is not None, f"{workload.name} declares no vocabulary"
        tokens = torch.randint(0, workload.vocab, (batch_size, workload.input_shape[0] + 1), device=device)
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    x = _synthetic_images(workload, batch_size, device)
    return x, _SYNTHETIC_TARGETS[workload.targets](x, batch_size, workload, device)


def scale(workload: Workload, images: Tensor) -> Tensor:
    """uint8 images -> float32 in the workload's input range: "unit" (the autoencoder, whose
    sigmoid output is in [0, 1]) sees x/255; "symmetric" (classifiers and the GAN, whose
    generator ends in tanh) sees (x/255 - 0.5) / 0.5 in [-1, 1]. Tokens (uint8 bytes of a text
    corpus) become the int64 ids an embedding takes."""
    if workload.layout == "tokens":
        return images.long()
    x = images.float().div_(255.0)
    if workload.input_range == "unit":
        return x
    return x.sub_(0.5).div_(0.5)


#: targets kind -> (workload, scaled images, labels) -> targets of a real-data batch. Latent
#: noise is drawn fresh each step from torch's seeded default generator (TorchTrainer seeds it).
REAL_TARGETS: dict[str, Callable[[Workload, Tensor, Tensor], Tensor]] = {
    "class_index": lambda w, images, labels: labels,
    "binary": lambda w, images, labels: labels.float(),  # binary cross-entropy on one logit
    "input": lambda w, images, labels: images,
    "latent_noise": lambda w, images, labels: latent_noise(w, len(images), images.device),
    "next_tokens": lambda w, tokens, labels: labels.long(),  # the data set's next-byte windows
}


def model_batch(workload: Workload, images: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
    """(inputs, targets) as `training_step` expects them, from scaled images and labels."""
    return images, REAL_TARGETS[workload.targets](workload, images, labels)


# --------------------------------------------------------------------------- loss


def _next_token_ce(out: Tensor, targets: Tensor) -> Tensor:
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), targets.reshape(-1))


#: loss kind -> (model output, targets) -> loss, for the single-update kinds
LOSSES: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "cross_entropy": F.cross_entropy,
    "bce_logits": lambda out, targets: F.binary_cross_entropy_with_logits(out.squeeze(1), targets),
    "mse": F.mse_loss,
    "next_token_ce": _next_token_ce,
}

#: loss kind -> model output -> predicted class, for the accuracy metric
PREDICTIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "cross_entropy": lambda out: out.argmax(1),
    "bce_logits": lambda out: out.squeeze(1) > 0,  # one logit: positive means class 1
}


def output_loss(workload: Workload, out: Tensor, targets: Tensor) -> Tensor:
    """The loss of a single-update workload from the model's output (also used to evaluate)."""
    return LOSSES[workload.loss](out, targets)


# --------------------------------------------------------------------------- step


def _single_step(workload: Workload, model: nn.Module, inputs: Tensor, targets: Tensor,
                 update: Update, autocast: Autocast) -> Tensor:
    with autocast():
        value = output_loss(workload, model(inputs), targets)
    update(value, workload.parts[0].name)
    return value.detach()


def _adversarial_step(workload: Workload, model: nn.Module, real: Tensor, noise: Tensor,
                      update: Update, autocast: Autocast) -> Tensor:
    """One GAN iteration as in pytorch/examples' DCGAN: a D update, then a G update.

    D is trained on the real batch (label 1) and on G(z) detached (label 0); G is then
    trained to make the *updated* D call the same G(z) real. Returns D loss + G loss.
    The parts are the workload's, discriminator first (its declared update order).
    """
    d_part, g_part = (p.name for p in workload.parts)
    modules = cast(nn.ModuleDict, model)  # the builder's parts, by the declared names
    generator, discriminator = modules[g_part], modules[d_part]
    bce = F.binary_cross_entropy_with_logits
    with autocast():
        fake = generator(noise)
        d_real = discriminator(real)
        d_fake = discriminator(fake.detach())
        loss_d = bce(d_real, torch.ones_like(d_real)) + bce(d_fake, torch.zeros_like(d_fake))
    update(loss_d, d_part)
    with autocast():
        d_fake = discriminator(fake)
        loss_g = bce(d_fake, torch.ones_like(d_fake))
    update(loss_g, g_part)
    return loss_d.detach() + loss_g.detach()


#: loss kind -> step; the single-update step serves every kind in LOSSES
_STEPS: dict[str, Callable[..., Tensor]] = {"adversarial_bce": _adversarial_step}


def training_step(workload: Workload, model: nn.Module, batch: tuple[Tensor, ...],
                  update: Update, autocast: Autocast) -> Tensor:
    """Forward and loss under `autocast`, then `update(loss, part)` for each part of the step.

    Returns the detached loss without synchronising with the device.
    """
    inputs, targets = batch
    step = _STEPS.get(workload.loss, _single_step)
    return step(workload, model, inputs, targets, update, autocast)


def parts(workload: Workload, model: nn.Module) -> dict[str, nn.Module]:
    """The separately optimised parts, in update order: {"model": model} for one part, else
    the builder's sub-modules of the declared part names."""
    if len(workload.parts) == 1:
        return {workload.parts[0].name: model}
    modules = cast(nn.ModuleDict, model)
    return {part.name: modules[part.name] for part in workload.parts}
