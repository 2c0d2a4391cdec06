"""KerasJaxTrainer: the shared KerasTrainer (frameworks/keras/trainer.py) on Keras' JAX backend.

One-part workloads train with Keras' own step: `model.compile(optimizer, loss, jit_compile=True)`
and `train_on_batch`, which is what a Keras user runs and what this adapter exists to measure
(Keras' cost over the native JAX adapter). `train_on_batch` copies the loss to the host every
step, so the step returns a float and is timed with that wait included. The GAN trains with
the stateless two-part step (step.py), jitted with its state donated; its state then lives in
the trainer, not in the Keras variables. Devices, threads and the allocator come from the JAX
adapter (frameworks/jax/devices.py). In a data-parallel rank (parallel.py) it trains under
Keras' DataParallel and is a base.DataParallelTrainer: a no-sync step and a fingerprint.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import jax

from rigbench.errors import UnsupportedError
from rigbench.frameworks.jax import parallel as jax_parallel
from rigbench.frameworks.jax.devices import device_name, resolve_device
from rigbench.frameworks.keras import step as keras_step
from rigbench.frameworks.keras.trainer import KerasTrainer, TrainStep
from rigbench.frameworks.keras_jax import parallel, step
from rigbench.spec import TrialSpec


class KerasJaxTrainer(KerasTrainer):
    """A workload on Keras' JAX backend (base.Trainer)."""

    BACKEND = "jax"

    def check_spec(self, spec: TrialSpec) -> None:
        if spec.compiled:  # before the base's check, whose advice (--compile) does not apply here
            raise UnsupportedError("--compile: every keras-jax step is already compiled by XLA (jit_compile=True)")
        super().check_spec(spec)

    def resolve_device(self, device: str) -> tuple[str, str, bool]:
        self.device = jax_parallel.local_device(device) if jax_parallel.joined() else resolve_device(device)
        return parallel.device_id(self.device), device_name(self.device), self.device.platform != "cpu"

    def world(self) -> tuple[int, int]:
        return parallel.world()

    def distribution_scope(self) -> contextlib.AbstractContextManager[Any]:
        """In a data-parallel rank, Keras' DataParallel set for the process (parallel.distribute):
        train_on_batch reads it at every step, not only while the model is built."""
        if jax_parallel.joined():
            parallel.distribute(self.device)
        return contextlib.nullcontext()

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
        fn = step.make_step(self.workload, self.parts, self.optimizers)
        if not jax_parallel.joined():
            return self._stateless(jax.jit(fn, donate_argnums=0))
        # On the mesh: the state replicated (as Keras created it), each rank's rows its shard
        # of the global batch; the no-sync step is the same step jitted for the rank's device.
        self.dp = jax_parallel.DataParallel(self.device)
        self.unsynced_step = self._stateless(jax.jit(fn, donate_argnums=0))
        on_mesh = self.dp.jit(lambda state, batch: fn(state, *batch))
        return self._stateless(lambda state, x, y: on_mesh(state, self.dp.globalize((x, y))))

    def _stateless(self, jitted: Any) -> TrainStep:
        """A TrainStep of a jitted stateless step, its state kept in the trainer."""
        def run(x: Any, y: Any) -> tuple[Any, dict[str, Any]]:
            self.state, loss, parts = jitted(self.state, x, y)
            return loss, parts

        return run

    @contextlib.contextmanager
    def without_gradient_sync(self) -> Iterator[None]:
        """Steps on the rank's rows with no collective at all (base.DataParallelTrainer;
        parallel.py): a one-part model's undistributed copy on the rank's device, the GAN's
        step jitted for that device on this process's copy of the state. They drift apart."""
        if not jax_parallel.joined():  # one process: nothing to skip
            yield
            return
        synced = self.compiled_step
        if len(self.parts) == 1:
            if not hasattr(self, "local_copy"):
                (name, model), = self.parts.items()
                lr = self.workload.default_lr if self.spec.lr is None else self.spec.lr
                self.local_copy = parallel.LocalCopy(self.spec, self.workload, lr, model, self.optimizers[name],
                                                     self.keras_device)
            self.local_copy.refresh()
            self.compiled_step = lambda x, y: (self.local_copy.train_on_batch(x, y), {})
        else:
            self.state, self.compiled_step = jax_parallel.local(self.state), self.unsynced_step
        try:
            yield
        finally:
            if len(self.parts) > 1:
                self.state = self.dp.adopt(self.state)
            self.compiled_step = synced

    def parameter_fingerprint(self) -> tuple[str, list[float]]:
        """Every part's trainable values, in order (base.DataParallelTrainer)."""
        if len(self.parts) == 1:
            values = [v.value for model in self.parts.values() for v in model.trainable_variables]
        else:
            values = [leaf for part in self.workload.parts for leaf in self.state[part.name][0]]
        return jax_parallel.fingerprint(values)

    def synchronize(self) -> None:
        jax.block_until_ready(self.last)

    def allocator_peak_bytes(self) -> int | None:
        """The device allocator's peak bytes in use (GPUs); None on the CPU, which keeps none."""
        if self.device.platform == "cpu":
            return None
        stats = self.device.memory_stats() or {}
        return int(stats["peak_bytes_in_use"]) if "peak_bytes_in_use" in stats else None
