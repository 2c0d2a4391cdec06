"""KerasTorchTrainer: the shared KerasTrainer (frameworks/keras/trainer.py) on Keras' torch
backend.

One-part workloads train with Keras' own step: `model.compile(optimizer, loss,
jit_compile=spec.compiled)` (jit_compile is torch.compile on this backend) and `train_on_batch`,
which copies the loss to the host every step, so the step returns a float and is timed with
that wait included. The GAN trains with the autograd two-part step (step.py). Devices, threads,
TF32 and the allocator are torch's (frameworks/torch/).
"""

from __future__ import annotations

from typing import Any

import torch

from rigbench.errors import UnsupportedError
from rigbench.frameworks.keras import step as keras_step
from rigbench.frameworks.keras.trainer import KerasTrainer, TrainStep
from rigbench.frameworks.keras_torch import step
from rigbench.frameworks.torch.devices import check_device
from rigbench.frameworks.torch.trainer import device_name
from rigbench.spec import TrialSpec


class KerasTorchTrainer(KerasTrainer):
    """A workload on Keras' torch backend (base.Trainer)."""

    BACKEND = "torch"

    def resolve_device(self, device: str) -> tuple[str, str, bool]:
        check_device(device)
        kind, _, index = device.partition(":")
        self.device = torch.device("cpu" if kind == "cpu" else f"{kind}:{index or 0}")
        return str(self.device), device_name(self.device), self.device.type != "cpu"

    def set_tf32(self, enabled: bool) -> None:
        """torch multiplies fp32 in true fp32 unless TF32 is allowed (Ampere+ GPUs)."""
        if enabled and not (self.device.type == "cuda" and torch.cuda.get_device_capability(self.device)[0] >= 8):
            raise UnsupportedError(f"tf32 is an NVIDIA GPU format (Ampere and later); not on {device_name(self.device)}")
        torch.backends.cuda.matmul.allow_tf32 = enabled
        torch.backends.cudnn.allow_tf32 = enabled

    def make_step(self, spec: TrialSpec) -> TrainStep:
        if len(self.parts) == 1:
            (name, model), = self.parts.items()
            model.compile(optimizer=self.optimizers[name], loss=keras_step.keras_loss(self.workload),
                          jit_compile=spec.compiled)
            return lambda x, y: (model.train_on_batch(x, y), {})
        if spec.compiled:
            raise UnsupportedError("--compile on keras-torch is Keras' jit_compile of train_on_batch; "
                                   "the GAN's two-part step does not use it")
        return step.make_adversarial_step(self.workload, self.parts, self.optimizers)

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def allocator_peak_bytes(self) -> int | None:
        """torch's CUDA caching allocator's peak bytes allocated; None on the CPU."""
        return int(torch.cuda.max_memory_allocated(self.device)) if self.device.type == "cuda" else None

    def reset_peak_memory(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)

    def loss_values(self, handles: list[Any]) -> list[float]:
        return [float(h) for h in handles]  # floats from train_on_batch, or 0-d tensors
