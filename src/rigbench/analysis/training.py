"""Summaries of training runs (`rigbench train`). Pure functions, no I/O.

Time to target follows the thesis's Table 9 and DAWNBench: the training time summed over
epochs up to and including the first epoch whose held-out accuracy reaches the target.
Evaluation time is reported apart and is not part of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.spec import EpochRecord


def train_summary(epochs: Sequence[EpochRecord], batch_size: int,
                  target_accuracy: float | None) -> dict[str, Any]:
    """Per-run figures from its epochs: accuracy per epoch, final and best accuracy,
    seconds and epochs to the target, train/eval time, training throughput, and the
    shares of training time spent waiting for input and copying it to the device."""
    if not epochs:
        return {"epochs": 0, "accuracy_per_epoch": [], "target_accuracy": target_accuracy}
    accuracies = [e.accuracy for e in epochs]
    known = [a for a in accuracies if a is not None]
    train_s = sum(e.train_seconds for e in epochs)
    steps = sum(e.steps for e in epochs)
    out: dict[str, Any] = {
        "epochs": len(epochs),
        "accuracy_per_epoch": accuracies,
        "final_accuracy": accuracies[-1],
        "best_accuracy": max(known) if known else None,
        "target_accuracy": target_accuracy,
        "seconds_to_target": None,
        "epochs_to_target": None,
        "train_seconds": train_s,
        "eval_seconds": sum(e.eval_seconds for e in epochs),
        "samples_per_s": steps * batch_size / train_s if train_s > 0 else None,
        "epoch_seconds": train_s / len(epochs),
        "input_fraction": sum(e.input_seconds for e in epochs) / train_s if train_s > 0 else None,
        "copy_fraction": sum(e.copy_seconds for e in epochs) / train_s if train_s > 0 else None,
        "final_loss": epochs[-1].train_loss,
    }
    if target_accuracy is not None:
        elapsed = 0.0
        for e in epochs:
            elapsed += e.train_seconds
            if e.accuracy is not None and e.accuracy >= target_accuracy:
                out["seconds_to_target"], out["epochs_to_target"] = elapsed, e.epoch
                break
    return out
