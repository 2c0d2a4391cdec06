"""Exceptions that carry a meaning for the user or for a trial's status, and pydantic's
validation errors as one line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

#: What a child says when `--memory-limit` is below what its framework took on import: no batch
#: can fit, which max-batch reads to stop at once instead of bisecting down to batch 1.
BELOW_FRAMEWORK = "is below what the framework alone takes"


class UsageError(Exception):
    """Bad input from the user: the CLI prints the message on one line and exits with 2."""


class UnsupportedError(Exception):
    """This combination (workload, device, precision...) cannot run here: status `unsupported`."""


class DivergedError(Exception):
    """The loss became NaN or infinite: status `diverged`."""

    def __init__(self, message: str, step: int):
        super().__init__(message)
        self.step = step


def field_path(loc: Sequence[Any]) -> str:
    """A pydantic error's location as written in a file: `results[3].spec.batch_size`."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def validation_line(exc: ValidationError, prefix: str = "") -> str:
    """The first error of `exc` on one line, its field's path after `prefix` (e.g.
    `results[3]`), and how many more there are: what a user sees instead of a traceback."""
    first = exc.errors()[0]
    loc = field_path(first["loc"])
    where = f"{prefix}.{loc}" if prefix and not loc.startswith("[") else f"{prefix}{loc}"
    extra = f" ({len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return f"{where}: {first['msg']}{extra}"
