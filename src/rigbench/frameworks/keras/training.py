"""Training on a real data set for `rigbench train` with the Keras adapters: the same contract
and the same epochs as frameworks/jax/training.py (see frameworks/torch/training.py for the
input modes and ranges).

The model, optimisers, device and precision come from the adapter's KerasTrainer, and each
step is the trainer's own `train_step`, so a training run trains exactly what `rigbench run`
times. Images arrive as uint8 [N, C, H, W] and are scaled on the device by the workload's input
range; a GAN draws fresh latent noise every step from the seed's generator. The order of the
training set is the seed's numpy permutation per epoch, as in torch's loop; the last partial
batch is dropped. The result types are framework-free; the three Keras adapters share them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from keras import ops

from rigbench.data import LoadedData
from rigbench.data.accepts import accepted_datasets
from rigbench.errors import UnsupportedError, UsageError
from rigbench.frameworks.keras import step
from rigbench.frameworks.keras.trainer import KerasTrainer
from rigbench.frameworks.run_records import TrainRun, diverged
from rigbench.spec import EpochRecord, TrialSpec
from rigbench.workloads import Workload

#: Evaluation batch size: large for speed, small enough for big images on small devices.
EVAL_BATCH = 512


def model_batch(trainer: KerasTrainer, images: Any, labels: Any, rng: np.random.Generator) -> tuple[Any, Any]:
    """(inputs, targets) as the step expects them, from uint8 images and labels on the device."""
    workload = trainer.workload
    x = step.scale(workload, images)
    return x, step.REAL_TARGETS[workload.targets](workload, x, labels, rng)


def batches(trainer: KerasTrainer, x: np.ndarray, y: np.ndarray, batch_size: int, rng: np.random.Generator,
            resident: tuple[Any, Any] | None, timing: dict[str, float]) -> Iterator[tuple[Any, Any]]:
    """One epoch's batches in the seed's order: device-side selections of the resident set, or
    (loader mode) host-side selections copied to the device, their times added to `timing`."""
    order = rng.permutation(len(x))
    for i in range(len(x) // batch_size):
        idx = order[i * batch_size:(i + 1) * batch_size]
        if resident is not None:
            index = trainer.to_device(idx)
            yield ops.take(resident[0], index, axis=0), ops.take(resident[1], index, axis=0)
            continue
        start = time.perf_counter()
        images, labels = x[idx], y[idx]
        ready = time.perf_counter()
        timing["input_s"] += ready - start
        on_device = trainer.to_device(images), trainer.to_device(labels)
        ops.convert_to_numpy(on_device[1][:1])  # wait for the copy (labels are copied last)
        timing["copy_s"] += time.perf_counter() - ready
        yield on_device


def evaluate(trainer: KerasTrainer, x_test: np.ndarray, y_test: np.ndarray) -> tuple[float, float | None]:
    """(mean held-out loss, accuracy or None) over the whole test set, in evaluation mode."""
    workload = trainer.workload
    predict = step.PREDICTIONS[workload.loss] if workload.metric == "accuracy" else None
    loss_sum, n_correct = 0.0, 0
    rng = np.random.default_rng(0)
    for i in range(0, len(x_test), EVAL_BATCH):
        inputs, targets = model_batch(trainer, trainer.to_device(x_test[i:i + EVAL_BATCH]),
                                      trainer.to_device(y_test[i:i + EVAL_BATCH]), rng)
        out = trainer.predict(inputs)
        loss_sum += float(ops.convert_to_numpy(step.output_loss(workload, out, targets))) * len(inputs)
        if predict is not None:
            n_correct += int(ops.convert_to_numpy(ops.sum(ops.cast(predict(out) == ops.cast(targets, "int32"),
                                                                   "int32"))))
    return loss_sum / len(x_test), (n_correct / len(x_test) if predict is not None else None)


def train(make_trainer: Callable[[TrialSpec, Workload], KerasTrainer], spec: TrialSpec, workload: Workload,
          data: LoadedData, on_epoch: Callable[[EpochRecord], None] | None = None) -> TrainRun:
    """Train `workload` on `data` for spec.train.epochs epochs, evaluating after each (as torch's
    training.train: DivergedError on a non-finite loss, UnsupportedError without a data set,
    UsageError when the training set does not fill one batch)."""
    options = spec.train
    if options is None:
        raise UsageError("not a training trial: spec.train is not set")
    if not accepted_datasets(workload.name):
        raise UnsupportedError(f"workload {workload.name!r} has no training data set yet")
    trainer = make_trainer(spec, workload)
    rng = np.random.default_rng(spec.seed)
    x_train, y_train = data.x_train, data.y_train
    if options.max_train_samples is not None and options.max_train_samples < len(x_train):
        keep = rng.permutation(len(x_train))[:options.max_train_samples]  # a seeded subset, as torch's
        x_train, y_train = x_train[keep], y_train[keep]
    if len(x_train) < spec.batch_size:
        raise UsageError(f"{len(x_train)} training samples do not fill one batch of {spec.batch_size}")
    resident = None
    if options.input_mode == "resident":  # the copy happens before epoch 1 and is not timed
        resident = trainer.to_device(x_train), trainer.to_device(y_train)

    records: list[EpochRecord] = []
    curve: list[float] = []
    started_at = time.time()
    for epoch in range(1, options.epochs + 1):
        timing = {"input_s": 0.0, "copy_s": 0.0}
        losses, part_losses = [], []
        start = time.perf_counter()
        for images, labels in batches(trainer, x_train, y_train, spec.batch_size, rng, resident, timing):
            loss, parts = trainer.run_step(*model_batch(trainer, images, labels, rng))
            losses.append(loss)
            part_losses.append(parts)
        values = trainer.loss_values(losses)  # one copy for the epoch (it waits for the device)
        seconds = time.perf_counter() - start
        if not all(math.isfinite(v) for v in values):
            raise diverged(epoch, values, records, curve)
        curve.extend(values)
        record = _record(trainer, epoch, values, part_losses, seconds, timing, data)
        records.append(record)
        if on_epoch is not None:
            on_epoch(record)
    return TrainRun(records, curve, trainer.params, trainer.device_name, len(x_train), len(data.x_test), started_at)


def _record(trainer: KerasTrainer, epoch: int, losses: list[float], part_losses: list[dict[str, Any]],
            seconds: float, timing: dict[str, float], data: LoadedData) -> EpochRecord:
    """The epoch's EpochRecord: held-out evaluation, or (a GAN) each part's mean training loss."""
    eval_loss: float | None = None
    accuracy: float | None = None
    extra: dict[str, float] = {}
    start = time.perf_counter()
    workload = trainer.workload
    if workload.metric == "none":
        extra = {f"loss_{part.key}": float(np.mean(trainer.loss_values([p[part.name] for p in part_losses])))
                 for part in workload.parts}
    else:
        eval_loss, accuracy = evaluate(trainer, data.x_test, data.y_test)
        if workload.metric == "reconstruction_mse":
            extra = {"recon_mse": eval_loss}
    return EpochRecord(
        epoch=epoch, steps=len(losses), train_loss=float(np.mean(losses)), eval_loss=eval_loss,
        accuracy=accuracy, train_seconds=seconds, eval_seconds=time.perf_counter() - start,
        input_seconds=timing["input_s"], copy_seconds=timing["copy_s"], extra=extra, ended_at=time.time(),
    )
