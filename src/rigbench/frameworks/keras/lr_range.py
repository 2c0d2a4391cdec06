"""The learning-rate range test for `rigbench lr-find` with the Keras adapters: the rule of
frameworks/torch/lr_range.py (Smith 2017, fastai's schedule and smoothing; its schedule
analysis/lr_find.lr_schedule, shared), on shuffled real training batches fed as `rigbench
train`'s resident mode feeds them, through the trainer's own step. The rate is each Keras
optimiser's learning-rate variable (KerasTrainer.set_lr), so one compiled step serves every rate.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from keras import ops

from rigbench.analysis.lr_find import lr_schedule
from rigbench.data import LoadedData
from rigbench.errors import DivergedError, UnsupportedError, UsageError
from rigbench.frameworks.keras.trainer import KerasTrainer
from rigbench.frameworks.keras.training import model_batch
from rigbench.frameworks.run_records import LrFindRun
from rigbench.spec import TrialSpec
from rigbench.workloads import Workload


def lr_find(make_trainer: Callable[[TrialSpec, Workload], KerasTrainer], spec: TrialSpec, workload: Workload,
            data: LoadedData) -> LrFindRun:
    """Run the range test of `spec.lr_find` on `data`'s training split (errors as torch's)."""
    opts = spec.lr_find
    if opts is None:
        raise UsageError("not a learning-rate range test: spec.lr_find is not set")
    if not workload.lr_find:
        raise UnsupportedError(f"lr-find needs one loss on a real data set; {workload.name} ({workload.task}) has not")
    if opts.end_lr <= opts.start_lr:
        raise UsageError(f"end_lr ({opts.end_lr:g}) must be larger than start_lr ({opts.start_lr:g})")
    if len(data.x_train) < spec.batch_size:
        raise UsageError(f"{len(data.x_train)} training samples do not fill one batch of {spec.batch_size}")
    trainer = make_trainer(spec, workload)
    x, y = trainer.to_device(data.x_train), trainer.to_device(data.y_train)
    rng = np.random.default_rng(spec.seed)
    steps_per_pass = len(data.x_train) // spec.batch_size

    beta = 1.0 - opts.smoothing
    average, best = 0.0, math.inf
    curve: list[tuple[float, float, float]] = []
    stop_reason = "end_lr"
    order = rng.permutation(len(data.x_train))
    for i, lr in enumerate(lr_schedule(opts.start_lr, opts.end_lr, opts.steps)):
        if i and i % steps_per_pass == 0:
            order = rng.permutation(len(data.x_train))  # a fresh shuffle each pass
        j = i % steps_per_pass
        idx = trainer.to_device(order[j * spec.batch_size:(j + 1) * spec.batch_size])
        trainer.set_lr(lr)
        value, _ = trainer.run_step(*model_batch(trainer, ops.take(x, idx, axis=0), ops.take(y, idx, axis=0), rng))
        loss = trainer.loss_values([value])[0]  # one host copy per step: the stop rule needs every loss
        if not math.isfinite(loss):
            stop_reason = "non-finite"
            break
        average = beta * average + (1 - beta) * loss
        smoothed = average / (1 - beta ** (len(curve) + 1))
        curve.append((lr, loss, smoothed))
        best = min(best, smoothed)
        if smoothed > opts.diverge_factor * best:
            stop_reason = "diverged"
            break
    if not curve:
        raise DivergedError(f"the loss was not finite at the first step (lr {opts.start_lr:g})", step=1)
    return LrFindRun(curve, trainer.device_name, len(data.x_train), stop_reason)
