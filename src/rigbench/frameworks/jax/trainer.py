"""JaxTrainer: one workload, built on one device, with a resident synthetic batch.

Implements rigbench.frameworks.base.DataTrainer. The step is step.make_step, compiled once with
jax.jit (the state buffers donated, so an update reuses them in place); this module adds the
device, precision (precision.py), timing and memory plumbing. On real data the same step is jitted with the
batch's scaling and targets inside it, and a GAN draws fresh latent noise every step from a key
split off the seed; the learning rate is the optimiser state's injected hyperparameter
(step.set_lr), so one compiled step serves every rate.

Joined to a data-parallel trial (parallel.py), the same step runs on global arrays: the state
replicated over every process's device, the batch (the rank's rows of the global one) sharded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rigbench.errors import UnsupportedError
from rigbench.frameworks.driver.batches import NumpyLoader
from rigbench.frameworks.host_timer import HostTimer
from rigbench.frameworks.jax import models, parallel, precision, step, transformers
from rigbench.frameworks.jax.devices import device_name, resolve_device
from rigbench.spec import TrainOptions, TrialSpec
from rigbench.workloads import Workload, resolved_options
from rigbench.workloads.flops import transformer_shape


def trial_device(spec: TrialSpec) -> jax.Device:
    """The device a trial trains on: its rank's own GPU in a joined data-parallel trial."""
    return parallel.local_device(spec.device) if parallel.joined() else resolve_device(spec.device)


def check_spec(spec: TrialSpec) -> None:
    """Options that name torch mechanisms have no JAX counterpart: say so rather than ignore them."""
    if spec.channels_last:
        raise UnsupportedError("channels-last is torch's memory format; JAX's convolutions are always NHWC here")
    if spec.compiled:
        raise UnsupportedError("--compile is torch.compile; every JAX step is already compiled by XLA (jit)")


class JaxTrainer:
    """A workload's model, optimiser state(s) and resident batch on one device (base.Trainer)."""

    def __init__(self, spec: TrialSpec, workload: Workload):
        check_spec(spec)
        self.device = trial_device(spec)
        precision.set_precision(self.device, spec.precision)
        self.compute = precision.compute_dtype(spec.precision)
        self.workload = workload
        self.dp = parallel.DataParallel(self.device) if parallel.joined() else None
        world = self.dp.world if self.dp else 1
        with jax.default_device(self.device):
            model = models.build_model(workload.name, resolved_options(workload, spec.workload_options), spec.seed)
            precision.set_layer_dtypes(model, self.compute)
            shape = transformer_shape(workload, spec.workload_options)
            transformers.set_attention(model, transformers.attention_kernel(self.device, spec.precision, shape))
            self.tx = step.make_optimizer(workload, workload.default_lr if spec.lr is None else spec.lr)
            self.graphdefs, state = step.split(workload, model, self.tx)
            batch = step.synthetic_batch(workload, spec.batch_size * world, spec.seed)
            key = jax.random.key(spec.seed)  # made here, uncommitted, as the state: dp.replicate takes it
        self.params = models.trainable_params(model)
        self.device_name = device_name(self.device)
        tx_step = step.make_step(workload, self.tx, self.graphdefs, self.compute)
        # The step on this device alone: the trial's step in one process, the no-sync step in a joined one.
        self._local_step = jax.jit(tx_step, donate_argnums=0)
        if self.dp is None:
            self.state, self.batch = jax.device_put((state, batch), self.device)
            self._step = self._local_step
        else:
            self.state = self.dp.replicate(state)
            self.batch, self._local_batch = self.dp.share(batch)
            self._step = self.dp.jit(tx_step)
        # latent noise of real-data steps; joined, replicated: every rank splits the same keys
        self._key = key if self.dp is None else self.dp.replicate(key)
        self._data_step: Callable[..., Any] | None = None
        self._eval_sums: Callable[..., Any] | None = None

    def step(self) -> jax.Array:
        """One training step; returns the loss without waiting for the device."""
        self.state, loss, _ = self._step(self.state, self.batch)
        return loss

    @contextmanager
    def without_gradient_sync(self) -> Iterator[None]:
        """Steps on this rank's rows alone, by the step jitted for its own device (no
        cross-process communication at all; base.DataParallelTrainer). The replicas drift."""
        if self.dp is None:  # one process: nothing to skip
            yield
            return
        synced, self.state = (self.batch, self._step), parallel.local(self.state)
        self.batch, self._step = self._local_batch, self._local_step
        try:
            yield
        finally:
            self.state, (self.batch, self._step) = self.dp.adopt(self.state), synced

    def parameter_fingerprint(self) -> tuple[str, list[float]]:
        return parallel.fingerprint([leaf for part in self.workload.parts
                                     for leaf in jax.tree.leaves(self.state[part.name].params)])

    def synchronize(self) -> None:
        jax.block_until_ready(self.state)

    def step_timer(self) -> HostTimer:
        return HostTimer(self.synchronize)

    def loss_values(self, handles: list[Any]) -> list[float]:
        if not handles:
            return []
        # one device-to-host copy, of this process's copy of each (replicated) loss
        return [float(x) for x in jax.device_get(jnp.stack(parallel.local(handles)))]

    def allocator_peak_bytes(self) -> int | None:
        """The device allocator's peak bytes in use (GPUs); None on the CPU, which keeps none."""
        if self.device.platform == "cpu":
            return None
        stats = self.device.memory_stats() or {}
        return int(stats["peak_bytes_in_use"]) if "peak_bytes_in_use" in stats else None

    def reset_peak_memory(self) -> None:
        """XLA's allocators offer no reset of their peak: a no-op (the peak covers the process)."""

    # ------------------------------------------------------------------ real data (base.DataTrainer)

    def drop_synthetic_batch(self) -> None:
        self.batch = None

    def put_data(self, x: np.ndarray, y: np.ndarray) -> tuple[jax.Array, jax.Array]:
        return jax.block_until_ready(jax.device_put((x, y), self.device))

    def put_index(self, order: np.ndarray) -> np.ndarray:
        return order  # a host index: jax gathers device rows by it without a copy of its own

    def take(self, data: tuple[jax.Array, jax.Array], index: np.ndarray, start: int,
             stop: int) -> tuple[jax.Array, jax.Array]:
        idx = index[start:stop]
        return data[0][idx], data[1][idx]

    def host_loader(self, x: np.ndarray, y: np.ndarray, options: TrainOptions) -> NumpyLoader:
        return NumpyLoader(x, y, options, "jax")

    def put_batch(self, images: Any, labels: Any) -> tuple[jax.Array, jax.Array]:
        return jax.block_until_ready(jax.device_put((images, labels), self.device))

    def train_step(self, batch: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, dict[str, jax.Array]]:
        if self._data_step is None:  # the timed step, with the batch's scaling and targets inside
            tx_step, workload = step.make_step(self.workload, self.tx, self.graphdefs, self.compute), self.workload

            def data_step(state: step.State, batch: tuple[jax.Array, jax.Array], key: jax.Array) -> Any:
                return tx_step(state, step.model_batch(workload, *batch, key))

            self._data_step = (jax.jit(data_step, donate_argnums=0) if self.dp is None
                               else self.dp.jit(data_step, replicated_after=1))
        self._key, key = jax.random.split(self._key)
        if self.dp is not None:  # the rank's rows (its shard of the epoch) into the global batch
            batch = self.dp.globalize(batch)
        self.state, loss, parts = self._data_step(self.state, batch, key)
        return loss, parts

    def set_lr(self, lr: float) -> None:
        self.state = step.set_lr(self.state, lr)

    def evaluation(self) -> AbstractContextManager[None]:
        return nullcontext()  # eval_sums applies the model in evaluation mode itself

    def eval_sums(self, batch: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        name = self.workload.parts[0].name
        if self._eval_sums is None:
            workload, graphdef, compute = self.workload, self.graphdefs[name], self.compute
            predict = step.PREDICTIONS[workload.loss] if workload.metric == "accuracy" else None

            def sums(part: step.PartState, images: jax.Array, labels: jax.Array) -> tuple[jax.Array, jax.Array]:
                inputs, targets = step.model_batch(workload, images, labels, jax.random.key(0))
                out = step.eval_apply(graphdef, part, inputs, compute)
                loss = step.output_loss(workload, out, targets) * inputs.shape[0]
                if predict is None:
                    return loss, jnp.zeros(())
                predicted = predict(out)
                return loss, jnp.sum(predicted == targets.astype(predicted.dtype)).astype(jnp.float32)

            self._eval_sums = jax.jit(sums)
        # this process's copy of a replicated state: each rank evaluates on its own device
        return self._eval_sums(parallel.local(self.state[name]), *batch)
