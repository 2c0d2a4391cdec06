"""Training on a real data set for `rigbench train`, written once for every framework: epochs,
held-out evaluation after each, where the time went, divergence, the records.

The trainer is the adapter's own (`adapter.build`), the one `rigbench run` times, and each step
is its `train_step`, so a training run trains exactly what the speed protocol measures. The
framework supplies primitives only (frameworks/base.DataTrainer); batches and input modes are
in batches.py. Time to a target is computed from the records (analysis/training.py) and
excludes evaluation, as in the thesis's Table 9 and DAWNBench.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from rigbench.data import LoadedData
from rigbench.data.accepts import accepted_datasets
from rigbench.data.shard import shard_order
from rigbench.errors import UnsupportedError, UsageError
from rigbench.frameworks.base import DataTrainer
from rigbench.frameworks.driver.batches import EVAL_BATCH, EpochSource, InputTiming, training_subset
from rigbench.frameworks.run_records import TrainingInterrupted, TrainRun, diverged
from rigbench.spec import EpochRecord, TrialSpec
from rigbench.workloads import Workload

Build = Callable[[TrialSpec, Workload], DataTrainer]


def train(build: Build, spec: TrialSpec, workload: Workload, data: LoadedData,
          on_epoch: Callable[[EpochRecord], None] | None = None, rank: int = 0) -> TrainRun:
    """Train `workload` on `data` for spec.train.epochs epochs, evaluating on the whole test set
    after each and calling `on_epoch(record)`; `rank` of spec.world_size takes its share of
    every epoch (data/shard.py).

    Raises TrainingDiverged (`step` = the epoch, with the epochs and the loss curve that finished
    before it) when a training loss is NaN or infinite, TrainingInterrupted (with the finished
    epochs) on KeyboardInterrupt, UnsupportedError for workloads without a
    data set, UsageError when the training set does not fill one batch per rank.
    """
    options = spec.train
    if options is None:
        raise UsageError("not a training trial: spec.train is not set")
    if not accepted_datasets(workload.name):  # the data layer's fact, e.g. no text corpus yet
        raise UnsupportedError(f"workload {workload.name!r} has no training data set yet")
    rng = np.random.default_rng(spec.seed)
    x_train, y_train = training_subset(data.x_train, data.y_train, options.max_train_samples, rng)
    if len(x_train) // spec.world_size < spec.batch_size:
        raise UsageError(f"{len(x_train)} training samples do not fill one batch of {spec.batch_size}"
                         + (f" on each of {spec.world_size} ranks" if spec.world_size > 1 else ""))
    trainer = build(spec, workload)  # seeds the framework; model, optimisers, precision
    trainer.drop_synthetic_batch()
    source = EpochSource(trainer, x_train, y_train, options)
    records: list[EpochRecord] = []
    curve: list[float] = []
    started_at = time.time()
    try:
        for epoch in range(1, options.epochs + 1):
            order = shard_order(rng.permutation(len(x_train)), rank, spec.world_size)
            record, values = _epoch(trainer, source, order, spec.batch_size, epoch, data, records, curve)
            curve.extend(values)
            records.append(record)
            if on_epoch is not None:
                on_epoch(record)
    except KeyboardInterrupt:  # the epoch in progress is dropped; the finished ones are kept
        partial = TrainRun(records, curve, trainer.params, trainer.device_name, len(x_train),
                           len(data.x_test), started_at)
        raise TrainingInterrupted(partial, options.epochs) from None
    finally:
        source.close()
    return TrainRun(records, curve, trainer.params, trainer.device_name, len(x_train), len(data.x_test), started_at)


def _epoch(trainer: DataTrainer, source: EpochSource, order: np.ndarray, batch_size: int, epoch: int,
           data: LoadedData, records: list[EpochRecord], curve: list[float]) -> tuple[EpochRecord, list[float]]:
    """One pass over the training batches and the evaluation after it: (its record, its step
    losses). Losses stay on the device until the end of the epoch (one copy)."""
    timing = InputTiming()
    losses: list[Any] = []
    part_losses: dict[str, list[Any]] = {}
    start = time.perf_counter()
    for batch in source.batches(order, batch_size, timing):
        loss, parts = trainer.train_step(batch)
        losses.append(loss)
        for name, value in parts.items():  # a GAN reports D and G losses separately
            part_losses.setdefault(name, []).append(value)
    trainer.synchronize()
    seconds = time.perf_counter() - start
    values = trainer.loss_values(losses)
    if not all(math.isfinite(v) for v in values):
        raise diverged(epoch, values, records, curve)
    eval_loss: float | None = None
    accuracy: float | None = None
    extra: dict[str, float] = {}
    start = time.perf_counter()
    workload = trainer.workload
    if workload.metric == "none":  # no held-out metric (a GAN): each part's mean training loss
        extra = {f"loss_{part.key}": float(np.mean(trainer.loss_values(part_losses.get(part.name, []))))
                 for part in workload.parts}
    else:
        eval_loss, accuracy = evaluate(trainer, data.x_test, data.y_test)
        if workload.metric == "reconstruction_mse":
            extra = {"recon_mse": eval_loss}
    record = EpochRecord(
        epoch=epoch, steps=len(values), train_loss=float(np.mean(values)), eval_loss=eval_loss,
        accuracy=accuracy, train_seconds=seconds, eval_seconds=time.perf_counter() - start,
        input_seconds=timing.input_s, copy_seconds=timing.copy_s, extra=extra, ended_at=time.time(),
    )
    return record, values


def evaluate(trainer: DataTrainer, x_test: np.ndarray, y_test: np.ndarray) -> tuple[float, float | None]:
    """(mean held-out loss, accuracy or None) over the whole test set, in evaluation mode, with
    one copy to the host at the end."""
    sums: list[Any] = []
    with trainer.evaluation():
        for i in range(0, len(x_test), EVAL_BATCH):
            sums.extend(trainer.eval_sums(trainer.put_batch(x_test[i:i + EVAL_BATCH], y_test[i:i + EVAL_BATCH])))
        values = trainer.loss_values(sums)
    loss_sum, n_correct = sum(values[0::2]), sum(values[1::2])
    accuracy = n_correct / len(x_test) if trainer.workload.metric == "accuracy" else None
    return loss_sum / len(x_test), accuracy
