"""What a training run and a learning-rate range test produce, whatever the framework: the
records every adapter's `train` and `lr_find` return (the runner turns them into a
ChildReport), and the divergence error a training loop raises. Framework-free, so the
adapters share one definition."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rigbench.errors import DivergedError
from rigbench.spec import EpochRecord


@dataclass
class TrainRun:
    """What a training run produced."""

    epochs: list[EpochRecord]
    loss_curve: list[float]  # training loss of every step, in order
    params: int
    device_name: str
    train_samples: int  # after max_train_samples
    test_samples: int
    started_at: float  # time.time() as epoch 1 began (the measured window's start)


@dataclass
class LrFindRun:
    """What a range test produced."""

    lr_curve: list[tuple[float, float, float]]  # [lr, loss, smoothed loss] per finished step
    device_name: str
    train_samples: int
    stop_reason: str  # "end_lr" | "diverged" | "non-finite"


class TrainingDiverged(DivergedError):
    """A training run's loss became NaN or infinite in epoch `step`; carries the epochs that
    finished before it and the finite run-up of the loss curve, so they are stored."""

    def __init__(self, message: str, step: int, epochs: list[EpochRecord], loss_curve: list[float]):
        super().__init__(message, step=step)
        self.epochs = epochs
        self.loss_curve = loss_curve


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT from the launcher, which turns its own Ctrl-C or SIGTERM into one) stopped
    a training run; carries the run as far as its finished epochs go, so they are stored."""

    def __init__(self, run: TrainRun, epochs_planned: int):
        super().__init__(f"stopped after {len(run.epochs)} of {epochs_planned} epochs")
        self.run = run
        self.epochs_planned = epochs_planned


def diverged(epoch: int, losses: list[float], records: list[EpochRecord], curve: list[float]) -> TrainingDiverged:
    """TrainingDiverged for `epoch`, carrying the finished epochs and the finite part of the curve."""
    bad = next(i for i, v in enumerate(losses) if not math.isfinite(v))
    finite = [*curve, *losses[:bad]]  # the run-up to the blow-up; NaN does not survive JSON
    return TrainingDiverged(f"loss became {losses[bad]} in epoch {epoch} (step {bad + 1} of {len(losses)})",
                            step=epoch, epochs=records, loss_curve=finite)
