"""The line a training child writes to its stderr file after each epoch, and reading the newest
one back: the parent shows how far a long `rigbench train` has got (one format, both sides)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rigbench.spec import EpochRecord
from rigbench.units import clock

#: Bytes read from the end of the stderr file: a few epoch lines, even after a warning or two.
TAIL_BYTES = 4096

_LINE = re.compile(r"rigbench: epoch (\d+) finished: (train loss \S+[^\r\n]*)")


def epoch_figures(record: EpochRecord) -> str:
    """The epoch's figures in words: its train loss, then the held-out accuracy where the
    workload has one, else the held-out loss (a language model's nats per token, an
    autoencoder's reconstruction MSE), else its own part losses (a GAN, which has no held-out
    figure)."""
    text = f"train loss {record.train_loss:.4g}"
    if record.accuracy is not None:
        return text + f", held-out accuracy {record.accuracy:.1%}"
    if record.eval_loss is not None:
        return text + f", held-out loss {record.eval_loss:.4g}"
    return text + "".join(f", {name} {value:.4g}" for name, value in record.extra.items())


def epoch_line(record: EpochRecord) -> str:
    """What the child prints when the epoch `record` describes (1-based) has finished."""
    return f"rigbench: epoch {record.epoch} finished: {epoch_figures(record)}"


def finished_epochs(stderr_path: Path, after: int = 0) -> list[tuple[int, str]]:
    """(epoch, its figures as written) of each epoch line past epoch `after` in the file's
    tail, oldest first: none before the first (or when the file cannot be read: progress is a
    courtesy, never a failure)."""
    try:
        with open(stderr_path, "rb") as file:
            file.seek(0, 2)
            size = file.tell()
            file.seek(max(0, size - TAIL_BYTES))
            tail = file.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return [(int(epoch), figures.rstrip()) for epoch, figures in _LINE.findall(tail) if int(epoch) > after]


@dataclass
class EpochPace:
    """A training run's progress in words, epoch by epoch: "epoch 3/10, train loss 0.41,
    held-out accuracy 91.2%, 0:00:12 elapsed, ETA 0:00:28". Times are the parent's clock
    (time.monotonic) from the child's start."""

    planned: int
    started: float
    _first: tuple[int, float] | None = None  # the first epoch heard of, and when

    def text(self, epoch: int, figures: str, now: float) -> str:
        elapsed = now - self.started
        if self._first is None:
            self._first = (epoch, now)
        first, heard_at = self._first
        # The pace since the first epoch heard of leaves out the start-up (importing the
        # framework, loading the data); until a second epoch there is only the elapsed time,
        # start-up included, so the first ETA errs long.
        per_epoch = (now - heard_at) / (epoch - first) if epoch > first and now > heard_at else elapsed / epoch
        eta = f", ETA {clock(per_epoch * (self.planned - epoch))}" if epoch < self.planned else ""
        return f"epoch {epoch}/{self.planned}, {figures}, {clock(elapsed)} elapsed{eta}"
