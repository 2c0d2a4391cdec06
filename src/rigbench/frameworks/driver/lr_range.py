"""The learning-rate range test for `rigbench lr-find` (Smith 2017; fastai's `lr_find`),
written once for every framework.

Smith, "Cyclical Learning Rates for Training Neural Networks" (WACV 2017), section 3.3:
train for a short while with a learning rate that grows from tiny to huge and watch the
loss. As fastai does (`LRFinder` in fastai/callback/schedule.py), the rate grows
exponentially (analysis/lr_find.lr_schedule), the loss is smoothed with a bias-corrected
exponential moving average (Adam's correction: avg_i = beta * avg_{i-1} + (1 - beta) * loss_i,
smoothed_i = avg_i / (1 - beta ** i), with 1 - beta = `smoothing`), and the test stops early
once the smoothed loss exceeds `diverge_factor` times its minimum so far, or the loss is NaN
or infinite.

Batches are shuffled real training batches selected from the resident training set, as
`rigbench train`'s resident mode feeds them, through the adapter's own trainer and
`train_step`, so lr-find trains what `train` trains; the rate is set through `set_lr`
without recompiling. The model is not restored afterwards: the process ends with the trial.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from rigbench.analysis.lr_find import lr_schedule
from rigbench.data import LoadedData
from rigbench.errors import DivergedError, UnsupportedError, UsageError
from rigbench.frameworks.driver.training import Build
from rigbench.frameworks.run_records import LrFindRun
from rigbench.spec import TrialSpec
from rigbench.workloads import Workload


class SmoothedLoss:
    """The range test's stop rule: a bias-corrected moving average and its minimum so far."""

    def __init__(self, smoothing: float, diverge_factor: float):
        self.beta, self.diverge_factor = 1.0 - smoothing, diverge_factor
        self.average, self.best, self.count = 0.0, math.inf, 0

    def add(self, loss: float) -> float:
        """The smoothed loss after `loss`."""
        self.count += 1
        self.average = self.beta * self.average + (1 - self.beta) * loss
        smoothed = self.average / (1 - self.beta ** self.count)
        self.best = min(self.best, smoothed)
        return smoothed

    def diverged(self, smoothed: float) -> bool:
        return smoothed > self.diverge_factor * self.best


def lr_find(build: Build, spec: TrialSpec, workload: Workload, data: LoadedData,
            on_step: Callable[[int, float, float], None] | None = None) -> LrFindRun:
    """Run the range test of `spec.lr_find` on `data`'s training split; `on_step` hears each
    step's number (1-based), lr and smoothed loss.

    Raises UnsupportedError for workloads the test does not fit (a GAN has two losses that
    trade off; the language model has no data set yet), UsageError when the training set
    is smaller than one batch, DivergedError when not even the first step's loss is finite.
    """
    opts = spec.lr_find
    if opts is None:
        raise UsageError("not a learning-rate range test: spec.lr_find is not set")
    if not workload.lr_find:
        raise UnsupportedError(f"lr-find needs one loss on a real data set; {workload.name} ({workload.task}) has not")
    if opts.end_lr <= opts.start_lr:
        raise UsageError(f"end_lr ({opts.end_lr:g}) must be larger than start_lr ({opts.start_lr:g})")
    n, batch_size = len(data.x_train), spec.batch_size
    if n < batch_size:
        raise UsageError(f"{n} training samples do not fill one batch of {batch_size}")
    trainer = build(spec, workload)
    trainer.drop_synthetic_batch()
    resident = trainer.put_data(data.x_train, data.y_train)
    rng = np.random.default_rng(spec.seed)
    steps_per_pass = n // batch_size
    smoothed_loss = SmoothedLoss(opts.smoothing, opts.diverge_factor)
    curve: list[tuple[float, float, float]] = []
    stop_reason = "end_lr"
    index = None
    for i, lr in enumerate(lr_schedule(opts.start_lr, opts.end_lr, opts.steps)):
        j = i % steps_per_pass
        if j == 0:
            index = trainer.put_index(rng.permutation(n))  # a fresh shuffle each pass
        trainer.set_lr(lr)
        value, _ = trainer.train_step(trainer.take(resident, index, j * batch_size, (j + 1) * batch_size))
        loss = trainer.loss_values([value])[0]  # one host copy per step: the stop rule needs every loss
        if not math.isfinite(loss):  # JSON has no NaN: the curve ends before it
            stop_reason = "non-finite"
            break
        smoothed = smoothed_loss.add(loss)
        curve.append((lr, loss, smoothed))
        if on_step is not None:
            on_step(i + 1, lr, smoothed)
        if smoothed_loss.diverged(smoothed):
            stop_reason = "diverged"
            break
    if not curve:
        raise DivergedError(f"the loss was not finite at the first step (lr {opts.start_lr:g})", step=1)
    return LrFindRun(curve, trainer.device_name, n, stop_reason)
