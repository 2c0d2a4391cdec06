"""KerasJaxTrainer: the shared KerasTrainer (frameworks/keras/trainer.py) on Keras' JAX backend.

One-part workloads train with Keras' own step: `model.compile(optimizer, loss, jit_compile=True)`
and `train_on_batch`, which is what a Keras user runs and what this adapter exists to measure
(Keras' cost over the native JAX adapter). `train_on_batch` copies the loss to the host every
step, so the step returns a float and is timed with that wait included. The GAN trains with
the stateless two-part step (step.py), jitted with its state donated; its state then lives in
the trainer, not in the Keras variables. Devices, threads and the allocator come from the JAX
adapter (frameworks/jax/devices.py).
"""

from __future__ import annotations

from typing import Any

import jax

from rigbench.errors import UnsupportedError
from rigbench.frameworks.jax.devices import device_name, resolve_device
from rigbench.frameworks.keras import step as keras_step
from rigbench.frameworks.keras.trainer import KerasTrainer, TrainStep
from rigbench.frameworks.keras_jax import step
from rigbench.spec import TrialSpec


class KerasJaxTrainer(KerasTrainer):
    """A workload on Keras' JAX backend (base.Trainer)."""

    BACKEND = "jax"

    def check_spec(self, spec: TrialSpec) -> None:
        super().check_spec(spec)
        if spec.compile:
            raise UnsupportedError("--compile: every keras-jax step is already compiled by XLA (jit_compile=True)")

    def resolve_device(self, device: str) -> tuple[str, str, bool]:
        self.device = resolve_device(device)
        accelerator = self.device.platform != "cpu"
        return (f"gpu:{self.device.id}" if accelerator else "cpu:0"), device_name(self.device), accelerator

    def set_tf32(self, enabled: bool) -> None:
        """Keras' JAX ops take jax's default matmul precision: "highest" is true fp32."""
        if enabled and (self.device.platform != "gpu" or float(getattr(self.device, "compute_capability", 0) or 0) < 8):
            raise UnsupportedError(f"tf32 is an NVIDIA GPU format (Ampere and later); not on {device_name(self.device)}")
        jax.config.update("jax_default_matmul_precision", "tensorfloat32" if enabled else "highest")

    def make_step(self, spec: TrialSpec) -> TrainStep:
        if len(self.parts) == 1:
            (name, model), = self.parts.items()
            model.compile(optimizer=self.optimizers[name], loss=keras_step.keras_loss(self.workload), jit_compile=True)
            return lambda x, y: (model.train_on_batch(x, y), {})
        if spec.precision == "fp16":
            raise UnsupportedError("fp16 loss scaling is not wired into the keras-jax GAN step (bf16 is)")
        self.state = step.state_of(self.parts, self.optimizers)
        jitted = jax.jit(step.make_step(self.workload, self.parts, self.optimizers), donate_argnums=0)

        def run(x: Any, y: Any) -> tuple[Any, dict[str, Any]]:
            self.state, loss, parts = jitted(self.state, x, y)
            return loss, parts

        return run

    def synchronize(self) -> None:
        jax.block_until_ready(self.last)

    def allocator_peak_bytes(self) -> int | None:
        """The device allocator's peak bytes in use (GPUs); None on the CPU, which keeps none."""
        if self.device.platform == "cpu":
            return None
        stats = self.device.memory_stats() or {}
        return int(stats["peak_bytes_in_use"]) if "peak_bytes_in_use" in stats else None
