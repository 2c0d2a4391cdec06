"""The line a training child writes to its stderr file after each epoch, and reading the newest
one back: the parent shows how far a long `rigbench train` has got (one format, both sides)."""

from __future__ import annotations

import re
from pathlib import Path

#: Bytes read from the end of the stderr file: a few epoch lines, even after a warning or two.
TAIL_BYTES = 4096

_LINE = re.compile(r"rigbench: epoch (\d+) finished: train loss (\S+)")


def epoch_line(epoch: int, train_loss: float) -> str:
    """What the child prints when `epoch` (1-based) has finished."""
    return f"rigbench: epoch {epoch} finished: train loss {train_loss:.4g}"


def newest_epoch(stderr_path: Path) -> tuple[int, str] | None:
    """(epoch, train loss as written) of the newest epoch line in the file, None before the
    first (or when the file cannot be read: progress is a courtesy, never a failure)."""
    try:
        with open(stderr_path, "rb") as file:
            file.seek(0, 2)
            size = file.tell()
            file.seek(max(0, size - TAIL_BYTES))
            tail = file.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    found = _LINE.findall(tail)
    return (int(found[-1][0]), found[-1][1]) if found else None
