"""TfTrainer: the shared KerasTrainer (frameworks/keras/trainer.py) on TensorFlow: its device,
TF32 switch, tf.function step (step.py), host-copy synchronisation and GPU allocator peak.
In a data-parallel rank (parallel.py) it is a base.DataParallelTrainer: built in the
strategy's scope, its step run by the strategy, with a no-sync step and a fingerprint.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import tensorflow as tf

from rigbench.errors import UnsupportedError
from rigbench.frameworks.keras.trainer import KerasTrainer, TrainStep
from rigbench.frameworks.tensorflow import cluster, parallel, step
from rigbench.frameworks.tensorflow.devices import resolve_device
from rigbench.spec import TrialSpec


class TfTrainer(KerasTrainer):
    """A workload on TensorFlow (base.Trainer); `spec.compiled` is XLA (jit_compile=True)."""

    BACKEND = "tensorflow"
    #: The step without the gradient all-reduce, in a data-parallel rank (make_step).
    unsynced_step: TrainStep

    def check_spec(self, spec: TrialSpec) -> None:
        super().check_spec(spec)
        if spec.compiled and parallel.joined() and spec.device.partition(":")[0] == "cpu":
            # XLA: "Collectives are not yet implemented for CPU devices when compiling with XLA".
            raise UnsupportedError("--compile with --processes on the CPU: XLA cannot compile TensorFlow's "
                                   "collectives for CPU devices (b/194942685); drop --compile or use GPUs")

    def resolve_device(self, device: str) -> tuple[str, str, bool]:
        return resolve_device(cluster.rank_device(device))

    def world(self) -> tuple[int, int]:
        return parallel.world()

    def distribution_scope(self) -> contextlib.AbstractContextManager[Any]:
        return parallel.scope()

    def set_tf32(self, enabled: bool) -> None:
        """TensorFlow multiplies fp32 in TF32 on Ampere+ GPUs by default: off unless asked."""
        if enabled and not self.keras_device.startswith("gpu"):
            raise UnsupportedError(f"tf32 is an NVIDIA GPU format (Ampere and later); not on {self.device_name}")
        tf.config.experimental.enable_tensor_float_32_execution(enabled)

    def make_step(self, spec: TrialSpec) -> TrainStep:
        if not parallel.joined():
            return step.make_step(self.workload, self.parts, self.optimizers, jit_compile=spec.compiled)
        fn = step.step_fn(self.workload, self.parts, self.optimizers)
        self.unsynced_step = parallel.unsynced(fn, self.optimizers.values(), spec.compiled)
        return parallel.replicated(fn, spec.compiled)

    @contextlib.contextmanager
    def without_gradient_sync(self) -> Iterator[None]:
        """Steps without the gradient all-reduce (base.DataParallelTrainer; parallel.unsynced)."""
        synced, self.compiled_step = self.compiled_step, self.unsynced_step
        try:
            yield
        finally:
            self.compiled_step = synced

    def parameter_fingerprint(self) -> tuple[str, list[float]]:
        """Every part's trainable variables, in order (base.DataParallelTrainer)."""
        return parallel.fingerprint(v for model in self.parts.values() for v in model.trainable_variables)

    def synchronize(self) -> None:
        """A host copy of the last loss: TensorFlow has no device-wide wait in its public API
        besides tf.test.experimental.sync_devices, which needs a GPU."""
        if self.last is not None:
            self.last.numpy()

    def _memory_device(self) -> str | None:
        return self.keras_device.upper() if self.keras_device.startswith("gpu") else None

    def allocator_peak_bytes(self) -> int | None:
        """The GPU allocator's peak bytes since the last reset; None on the CPU."""
        name = self._memory_device()
        return None if name is None else int(tf.config.experimental.get_memory_info(name)["peak"])

    def reset_peak_memory(self) -> None:
        name = self._memory_device()
        if name is not None:
            tf.config.experimental.reset_memory_stats(name)

    def loss_values(self, handles: list[Any]) -> list[float]:
        return [float(v) for v in tf.stack([tf.cast(h, tf.float32) for h in handles]).numpy()] if handles else []
