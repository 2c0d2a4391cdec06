"""Training on a real data set for `rigbench train` with JAX: the same contract and the same
epochs as frameworks/torch/training.py (see its docstring for the input modes and ranges).

The model, optimiser states, device and precision come from JaxTrainer, and each step is the
trainer's own step function (step.make_step), jitted with the batch's targets built inside it,
so a training run trains exactly what `rigbench run` times. Images arrive as uint8 [N, C, H, W]
and are scaled on the device by the workload's input range; a GAN draws fresh latent noise
every step from a key split off the seed. The order of the training set is the seed's numpy
permutation per epoch, as in torch's loop; the last partial batch is dropped.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rigbench.data import LoadedData
from rigbench.data.accepts import accepted_datasets
from rigbench.errors import UnsupportedError, UsageError
from rigbench.frameworks.jax import step
from rigbench.frameworks.jax.trainer import JaxTrainer
from rigbench.frameworks.run_records import TrainRun, diverged
from rigbench.spec import EpochRecord, TrialSpec
from rigbench.workloads import Workload

#: Evaluation batch size: large for speed, small enough for big images on small devices.
EVAL_BATCH = 512


def scale(workload: Workload, images: jax.Array) -> jax.Array:
    """uint8 images -> float32 in the workload's input range: [0, 1] (unit) or [-1, 1]."""
    x = images.astype(jnp.float32) / 255.0
    return x if workload.input_range == "unit" else (x - 0.5) / 0.5


#: targets kind -> (workload, scaled images, labels, key) -> targets
_TARGETS: dict[str, Callable[[Workload, jax.Array, jax.Array, jax.Array], jax.Array]] = {
    "class_index": lambda w, images, labels, key: labels,
    "binary": lambda w, images, labels, key: labels.astype(jnp.float32),
    "input": lambda w, images, labels, key: images,
    "latent_noise": lambda w, images, labels, key: step.latent_noise(w, images.shape[0], key),
}


def model_batch(workload: Workload, images: jax.Array, labels: jax.Array,
                key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(inputs, targets) as the step expects them, from uint8 images and labels."""
    x = scale(workload, images)
    return x, _TARGETS[workload.targets](workload, x, labels, key)


def data_step(trainer: JaxTrainer, tx_step: step.Step) -> Callable[..., Any]:
    """The jitted step on a uint8 batch: (state, images, labels, key) -> (state, loss, part losses)."""
    workload = trainer.workload
    return jax.jit(lambda state, images, labels, key: tx_step(state, model_batch(workload, images, labels, key)),
                   donate_argnums=0)


def _batches(x: np.ndarray, y: np.ndarray, batch_size: int, rng: np.random.Generator, device: Any,
             resident: tuple[jax.Array, jax.Array] | None, timing: dict[str, float]) -> Iterator[tuple[Any, Any]]:
    """One epoch's batches in the seed's order: device-side selections of the resident set, or
    (loader mode) host-side selections copied to the device, their times added to `timing`."""
    order = rng.permutation(len(x))
    for i in range(len(x) // batch_size):
        idx = order[i * batch_size:(i + 1) * batch_size]
        if resident is not None:
            yield resident[0][idx], resident[1][idx]
            continue
        start = time.perf_counter()
        images, labels = x[idx], y[idx]
        ready = time.perf_counter()
        timing["input_s"] += ready - start
        on_device = jax.block_until_ready(jax.device_put((images, labels), device))
        timing["copy_s"] += time.perf_counter() - ready
        yield on_device


def _evaluate(trainer: JaxTrainer, x_test: np.ndarray, y_test: np.ndarray) -> tuple[float, float | None]:
    """(mean held-out loss, accuracy or None) over the whole test set, in eval mode."""
    workload = trainer.workload
    name = workload.parts[0].name
    graphdef = trainer.graphdefs[name]
    predict = step.PREDICTIONS[workload.loss] if workload.metric == "accuracy" else None

    @jax.jit
    def sums(part: step.PartState, images: jax.Array, labels: jax.Array) -> tuple[jax.Array, jax.Array]:
        inputs, targets = model_batch(workload, images, labels, jax.random.key(0))
        out = step.eval_apply(graphdef, part, inputs)
        loss = step.output_loss(workload, out, targets) * inputs.shape[0]
        correct = jnp.sum(predict(out) == targets.astype(predict(out).dtype)) if predict else jnp.zeros(())
        return loss, correct

    totals = [sums(trainer.state[name], *jax.device_put((x_test[i:i + EVAL_BATCH], y_test[i:i + EVAL_BATCH]),
                                                       trainer.device))
              for i in range(0, len(x_test), EVAL_BATCH)]
    loss_sum, n_correct = (float(v) for v in jax.device_get(jnp.sum(jnp.array(totals), axis=0)))
    return loss_sum / len(x_test), (n_correct / len(x_test) if predict is not None else None)


def train(spec: TrialSpec, workload: Workload, data: LoadedData,
          on_epoch: Callable[[EpochRecord], None] | None = None) -> TrainRun:
    """Train `workload` on `data` for spec.train.epochs epochs, evaluating after each (as torch's
    training.train: DivergedError on a non-finite loss, UnsupportedError without a data set,
    UsageError when the training set does not fill one batch)."""
    options = spec.train
    if options is None:
        raise UsageError("not a training trial: spec.train is not set")
    if not accepted_datasets(workload.name):
        raise UnsupportedError(f"workload {workload.name!r} has no training data set yet")
    trainer = JaxTrainer(spec, workload)
    rng = np.random.default_rng(spec.seed)
    x_train, y_train = data.x_train, data.y_train
    if options.max_train_samples is not None and options.max_train_samples < len(x_train):
        keep = rng.permutation(len(x_train))[:options.max_train_samples]  # a seeded subset, as torch's
        x_train, y_train = x_train[keep], y_train[keep]
    if len(x_train) < spec.batch_size:
        raise UsageError(f"{len(x_train)} training samples do not fill one batch of {spec.batch_size}")
    resident = None
    if options.input_mode == "resident":  # the copy happens before epoch 1 and is not timed
        resident = jax.block_until_ready(jax.device_put((x_train, y_train), trainer.device))
    run_step = data_step(trainer, step.make_step(workload, trainer.tx, trainer.graphdefs))
    key = jax.random.key(spec.seed)

    records: list[EpochRecord] = []
    curve: list[float] = []
    started_at = time.time()
    for epoch in range(1, options.epochs + 1):
        timing = {"input_s": 0.0, "copy_s": 0.0}
        losses, part_losses = [], []
        start = time.perf_counter()
        for images, labels in _batches(x_train, y_train, spec.batch_size, rng, trainer.device, resident, timing):
            key, sub = jax.random.split(key)
            trainer.state, loss, parts = run_step(trainer.state, images, labels, sub)
            losses.append(loss)
            part_losses.append(parts)
        trainer.synchronize()
        seconds = time.perf_counter() - start
        values = [float(v) for v in jax.device_get(jnp.stack(losses))]  # one copy for the epoch
        if not all(math.isfinite(v) for v in values):
            raise diverged(epoch, values, records, curve)
        curve.extend(values)
        record = _record(trainer, epoch, values, jax.device_get(part_losses), seconds, timing, data)
        records.append(record)
        if on_epoch is not None:
            on_epoch(record)
    return TrainRun(records, curve, trainer.params, trainer.device_name, len(x_train), len(data.x_test), started_at)


def _record(trainer: JaxTrainer, epoch: int, losses: list[float], part_losses: list[dict[str, Any]],
            seconds: float, timing: dict[str, float], data: LoadedData) -> EpochRecord:
    """The epoch's EpochRecord: held-out evaluation, or (a GAN) each part's mean training loss."""
    eval_loss: float | None = None
    accuracy: float | None = None
    extra: dict[str, float] = {}
    start = time.perf_counter()
    workload = trainer.workload
    if workload.metric == "none":
        extra = {f"loss_{part.key}": float(np.mean([p[part.name] for p in part_losses])) for part in workload.parts}
    else:
        eval_loss, accuracy = _evaluate(trainer, data.x_test, data.y_test)
        if workload.metric == "reconstruction_mse":
            extra = {"recon_mse": eval_loss}
    return EpochRecord(
        epoch=epoch, steps=len(losses), train_loss=float(np.mean(losses)), eval_loss=eval_loss,
        accuracy=accuracy, train_seconds=seconds, eval_seconds=time.perf_counter() - start,
        input_seconds=timing["input_s"], copy_seconds=timing["copy_s"], extra=extra, ended_at=time.time(),
    )
