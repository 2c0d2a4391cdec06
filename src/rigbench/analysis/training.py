"""Summaries of training runs (`rigbench train`). Pure functions, no I/O.

Time to target follows the thesis's Table 9 and DAWNBench: the training time summed over
epochs up to and including the first epoch whose held-out accuracy reaches the target (or,
for a language model, whose held-out loss falls to the target loss, as the nanoGPT speed-runs
count time to a validation loss). Evaluation time is reported apart and is not part of it.

A language model's held-out loss is the mean next-token cross-entropy in nats per token;
perplexity is exp(loss) and, on byte-level text, bits per byte is loss / ln 2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rigbench.spec import EpochRecord


def train_summary(epochs: Sequence[EpochRecord], batch_size: int, target_accuracy: float | None,
                  target_loss: float | None = None, language_model: bool = False,
                  byte_level: bool = False) -> dict[str, Any]:
    """Per-run figures from its epochs: accuracy (or held-out loss) per epoch, final and best,
    seconds and epochs to the target, train/eval time, training throughput, and the shares of
    training time spent waiting for input and copying it to the device. `language_model`: the
    held-out loss is next-token cross-entropy, so it also reads as perplexity; `byte_level`: its
    tokens are bytes, so it also reads as bits per byte."""
    if not epochs:
        return {"epochs": 0, "accuracy_per_epoch": [], "target_accuracy": target_accuracy,
                "target_loss": target_loss}
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
        "target_loss": target_loss,
        **held_out_loss(epochs, language_model, byte_level),
    }
    elapsed = 0.0
    for e in epochs:
        elapsed += e.train_seconds
        if reached(e, target_accuracy, target_loss):
            out["seconds_to_target"], out["epochs_to_target"] = elapsed, e.epoch
            break
    return out


def reached(epoch: EpochRecord, target_accuracy: float | None, target_loss: float | None) -> bool:
    """Whether `epoch` reached the target: held-out accuracy at least the target accuracy, or
    held-out loss at most the target loss (both, when both are given)."""
    if target_accuracy is None and target_loss is None:
        return False
    accuracy_ok = target_accuracy is None or (epoch.accuracy is not None and epoch.accuracy >= target_accuracy)
    loss_ok = target_loss is None or (epoch.eval_loss is not None and epoch.eval_loss <= target_loss)
    return accuracy_ok and loss_ok


def bits(nats: float) -> float:
    """A loss in nats as bits (per byte, for byte-level text)."""
    return nats / math.log(2)


def held_out_loss(epochs: Sequence[EpochRecord], language_model: bool, byte_level: bool) -> dict[str, Any]:
    """The held-out loss per epoch, its last and best value, and, for a language model, its
    perplexity from the last and (byte-level text) bits per byte; empty where no epoch has a
    held-out loss (a GAN)."""
    losses = [e.eval_loss for e in epochs]
    known = [v for v in losses if v is not None]
    if not known:
        return {}
    final = losses[-1]
    out: dict[str, Any] = {"eval_loss_per_epoch": losses, "final_eval_loss": final, "best_eval_loss": min(known)}
    if final is not None and language_model:
        out["perplexity"] = math.exp(min(final, 700.0))  # exp overflows a float past ~709
        if byte_level:
            out["bits_per_byte"] = bits(final)
    return out
