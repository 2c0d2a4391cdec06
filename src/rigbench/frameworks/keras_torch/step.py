"""The two-part (GAN) training step of the Keras models on Keras' torch backend, with torch's
autograd and each part's Keras optimiser (`apply`), the pattern Keras documents for custom
torch training: `train_on_batch` has one optimiser and one loss, so it cannot express the
GAN's two updates in torch's order. One-part workloads train with `train_on_batch`
(trainer.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import torch

from rigbench.frameworks.keras import step
from rigbench.workloads import Workload


def _update(optimizer: keras.optimizers.Optimizer, loss: torch.Tensor, model: keras.Model) -> None:
    """Gradients of `loss` (scaled under fp16 loss scaling) for the part's weights only, and one update."""
    variables = model.trainable_variables
    grads = torch.autograd.grad(optimizer.scale_loss(loss), [v.value for v in variables])
    optimizer.apply(list(grads), variables)


def make_adversarial_step(workload: Workload, parts: dict[str, keras.Model],
                          optimizers: dict[str, keras.optimizers.Optimizer]
                          ) -> Callable[[Any, Any], tuple[Any, dict[str, Any]]]:
    """(real images, noise) -> (D loss + G loss, {part: loss}), as torch's GAN step: G(z) once;
    D on real (1) and on G(z) detached (0), D updated; then G updated to make the *updated* D
    call the same G(z) real. The G update asks autograd for G's gradients only, so D's weight
    gradients there are not computed (torch's own adapter computes and discards them)."""
    d_name, g_name = (p.name for p in workload.parts)
    d, g = parts[d_name], parts[g_name]

    def run(real: Any, noise: Any) -> tuple[Any, dict[str, Any]]:
        fake = g(noise, training=True)
        d_real, d_fake = d(real, training=True), d(fake.detach(), training=True)
        loss_d = step.bce_logits(d_real, torch.ones_like(d_real)) + step.bce_logits(d_fake, torch.zeros_like(d_fake))
        _update(optimizers[d_name], loss_d, d)
        d_fake = d(fake, training=True)
        loss_g = step.bce_logits(d_fake, torch.ones_like(d_fake))
        _update(optimizers[g_name], loss_g, g)
        loss_d, loss_g = loss_d.detach(), loss_g.detach()
        return loss_d + loss_g, {d_name: loss_d, g_name: loss_g}

    return run
