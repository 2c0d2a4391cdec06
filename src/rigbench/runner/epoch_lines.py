"""The lines a trial's child writes to its stderr file to say how far it has got, and reading
them back: the parent shows them (one format, both sides). A training child writes one after
each epoch; every child writes a phase line as it enters each slow part of its trial (starting
its framework, building the model, the first step, warm-up, timing; a training run's data set and
first epoch; every tenth of an lr range test), never inside the timed steps."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigbench.spec import EpochRecord, TrialSpec
from rigbench.units import clock
from rigbench.workloads import Workload

#: Bytes read from the end of the stderr file: a few epoch lines, even after a warning or two.
TAIL_BYTES = 4096

_LINE = re.compile(r"rigbench: epoch (\d+) finished: (train loss \S+[^\r\n]*)")
PHASE_PREFIX = "rigbench: phase: "
_PHASE = re.compile(re.escape(PHASE_PREFIX) + r"([^\r\n]+)\r?\n")  # whole lines only: one being written waits


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


def phase_line(text: str) -> str:
    """What the child prints as it enters a part of its trial that `text` names."""
    return PHASE_PREFIX + text


def say_phase(text: str) -> None:
    """A phase line on this (child) process's stderr, its trial's stderr file: the parent's
    progress reads the newest, and so does whoever looks at a trial that is stuck or crashed."""
    print(phase_line(text), file=sys.stderr, flush=True)


def announced(build: Callable[[TrialSpec, Workload], Any], then: str) -> Callable[[TrialSpec, Workload], Any]:
    """`build` (a model's) saying its phase, "building the model", then `then`: what comes next."""
    def built(spec: TrialSpec, workload: Workload) -> Any:
        say_phase("building the model")
        trainer = build(spec, workload)
        say_phase(then)
        return trainer

    return built


def lr_step_phase(steps: int) -> Callable[[int, float, float], None]:
    """An lr range test's `on_step`: a phase line every tenth of its `steps`, with the lr and the
    smoothed loss reached."""
    every = max(1, steps // 10)

    def said(step: int, lr: float, smoothed: float) -> None:
        if step % every == 0:
            say_phase(f"step {step}/{steps}, lr {lr:.3g}, smoothed loss {smoothed:.4g}")

    return said


def without_phases(text: str) -> str:
    """`text` (a child's stderr) without its phase lines: a crash's stored error keeps what the
    child and its libraries said, in the room it has."""
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith(PHASE_PREFIX))


def _tail(stderr_path: Path) -> str:
    """The file's last TAIL_BYTES, "" when it cannot be read (progress is a courtesy, never a failure)."""
    try:
        with open(stderr_path, "rb") as file:
            file.seek(0, 2)
            size = file.tell()
            file.seek(max(0, size - TAIL_BYTES))
            return file.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def finished_epochs(stderr_path: Path, after: int = 0) -> list[tuple[int, str]]:
    """(epoch, its figures as written) of each epoch line past epoch `after` in the file's
    tail, oldest first: none before the first (or when the file cannot be read)."""
    return [(int(epoch), figures.rstrip()) for epoch, figures in _LINE.findall(_tail(stderr_path))
            if int(epoch) > after]


def newest_phase(stderr_path: Path) -> str | None:
    """The text of the newest phase line in the file's tail, None when there is none or an epoch
    line came after it (the epochs then tell how far the trial has got)."""
    tail = _tail(stderr_path)
    phases, epochs = list(_PHASE.finditer(tail)), list(_LINE.finditer(tail))
    if not phases or (epochs and epochs[-1].start() > phases[-1].start()):
        return None
    return phases[-1].group(1).rstrip()


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
