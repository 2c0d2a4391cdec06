"""The learning-rate range test for `rigbench lr-find` (Smith 2017; fastai's `lr_find`).

Smith, "Cyclical Learning Rates for Training Neural Networks" (WACV 2017), section 3.3:
train for a short while with a learning rate that grows from tiny to huge and watch the
loss. As fastai does (`LRFinder` in fastai/callback/schedule.py), the rate grows
exponentially, step i of n using

    lr_i = start_lr * (end_lr / start_lr) ** (i / (n - 1)),

the loss is smoothed with a bias-corrected exponential moving average (Adam's correction:
avg_i = beta * avg_{i-1} + (1 - beta) * loss_i, smoothed_i = avg_i / (1 - beta ** i), with
1 - beta = `smoothing`), and the test stops early once the smoothed loss exceeds
`diverge_factor` times its minimum so far, or the loss is NaN or infinite.

Batches are shuffled real training batches, fed exactly as `rigbench train`'s resident mode
feeds them (`training.ResidentBatches`): the model, optimiser(s), device, precision and step
come from TorchTrainer and `step.training_step`, so lr-find trains what `train` trains.
The model is not restored afterwards: the process ends with the trial.
"""

from __future__ import annotations

import math

import numpy as np

from rigbench.analysis.lr_find import lr_schedule
from rigbench.data import LoadedData
from rigbench.errors import DivergedError, UnsupportedError, UsageError
from rigbench.frameworks.run_records import LrFindRun
from rigbench.frameworks.torch import step
from rigbench.frameworks.torch.trainer import TorchTrainer
from rigbench.frameworks.torch.training import ResidentBatches, _model_batch, _Timing
from rigbench.spec import TrialSpec
from rigbench.workloads import Workload


def lr_find(spec: TrialSpec, workload: Workload, data: LoadedData) -> LrFindRun:
    """Run the range test of `spec.lr_find` on `data`'s training split.

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
    trainer = TorchTrainer(spec, workload)  # seeds torch; builds model, optimiser(s), autocast
    trainer.batch = ()  # the synthetic batch was only needed for the precision probe
    if len(data.x_train) < spec.batch_size:
        raise UsageError(f"{len(data.x_train)} training samples do not fill one batch of {spec.batch_size}")
    batches = ResidentBatches(workload, data.x_train, data.y_train, spec.batch_size,
                              trainer.device, np.random.default_rng(spec.seed))

    beta = 1.0 - opts.smoothing
    average, best = 0.0, math.inf
    curve: list[tuple[float, float, float]] = []
    stop_reason = "end_lr"
    schedule = iter(lr_schedule(opts.start_lr, opts.end_lr, opts.steps))
    while len(curve) < opts.steps and stop_reason == "end_lr":
        for images, labels in batches.epoch(_Timing()):  # a fresh shuffle each pass
            lr = next(schedule, None)
            if lr is None:
                break
            for optimizer in trainer.optimizers.values():
                optimizer.zero_grad(set_to_none=True)
                for group in optimizer.param_groups:
                    group["lr"] = lr
            batch = _model_batch(workload, images, labels)
            # One host copy per step: the stop rule needs every loss as it comes.
            loss = float(step.training_step(workload, trainer.model, batch,
                                              trainer._update, trainer._autocast))
            if not math.isfinite(loss):  # JSON has no NaN: the curve ends before it
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
