"""Parsing of human-friendly values: sizes like `2GiB`, lists like `16,64`; and writing sizes and
durations back out."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import timedelta

from rigbench.errors import UsageError
from rigbench.numlimits import MAX_INT, number_problem

_SIZE_UNITS = {
    "b": 1,
    "k": 1000, "kb": 1000, "kib": 1024,
    "m": 1000**2, "mb": 1000**2, "mib": 1024**2,
    "g": 1000**3, "gb": 1000**3, "gib": 1024**3,
    "t": 1000**4, "tb": 1000**4, "tib": 1024**4,
}
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str, what: str = "size") -> int:
    """`2GiB` -> 2147483648; `512MiB`, `1.5GB`, `1000B`. Raises UsageError, also for a number
    without a unit: `--memory-limit 1.5` meant 1.5 GiB and was read as 1.5 bytes."""
    match = _SIZE_RE.match(text)
    unit = match.group(2).lower() if match else None
    if match and unit == "":
        raise UsageError(f"{what} {text!r} has no unit: give a unit, e.g. {match.group(1)}GiB or {match.group(1)}MiB")
    if not match or unit not in _SIZE_UNITS:
        raise UsageError(f"{what} {text!r} is not a size: write e.g. 2GiB, 512MiB or 1.5GB")
    value = float(match.group(1)) * _SIZE_UNITS[unit]  # inf for a few hundred digits
    if not value < MAX_INT + 1:  # a float: compared with 2**63 exactly
        raise UsageError(f"{what} must be at most {MAX_INT} bytes (the largest whole number rigbench stores), got {text!r}")
    if int(value) <= 0:
        raise UsageError(f"{what} must be larger than 0, got {text!r}")
    return int(value)


#: The smallest memory limit accepted. The interpreter and numpy alone keep about 27 MiB
#: resident (CPython 3.11 with numpy 2 here; torch's import about 220 MiB), so under a smaller
#: cap no framework can even start: every trial would end `oom` with "memory limit (0 MiB)".
MIN_MEMORY_LIMIT = 64 * 2**20


def parse_memory_limit(value: str | int, what: str = "--memory-limit") -> int:
    """A memory limit in bytes: a size (`2GiB`, parse_size) or, from a sweep file, a whole
    number of bytes; one below MIN_MEMORY_LIMIT is a UsageError naming `what`. Every way a
    limit is given (run, sweep and max-batch flags, a sweep file's `memory_limit`) comes here."""
    limit = parse_size(value, what) if isinstance(value, str) else value
    if limit < MIN_MEMORY_LIMIT:
        raise UsageError(f"{what} must be at least {MIN_MEMORY_LIMIT // 2**20}MiB (no framework starts in less), "
                         f"got {value!r}")
    return limit


def split_list(values: Iterable[str] | None, what: str = "a list") -> list[str]:
    """Flatten repeated flags and comma-separated values: ['16,64', '128'] -> ['16', '64', '128'].
    One trailing comma is allowed (`16,`); an empty item (`16,,32`, `,16`, ``) is a UsageError
    naming `what` (the flag), never skipped: it is most likely a value left out."""
    out: list[str] = []
    for value in values or []:
        parts = [part.strip() for part in value.split(",")]
        if len(parts) > 1 and not parts[-1]:
            parts.pop()
        if not all(parts):
            raise UsageError(f"{what} has an empty item in {value!r}: separate values with single commas")
        out.extend(parts)
    return out


def split_workload_refs(values: Iterable[str] | None, what: str = "WORKLOAD") -> list[str]:
    """split_list for workload references, whose options are comma-separated too: an item
    `key=value` without a `NAME:` continues the reference before it, so
    ['gpt:preset=small,layers=6,vit'] -> ['gpt:preset=small,layers=6', 'vit']."""
    out: list[str] = []
    for part in split_list(values, what):
        if "=" in part and ":" not in part and out and ":" in out[-1]:
            out[-1] += "," + part
        else:
            out.append(part)
    return out


def with_preset(refs: list[str], preset: str | None) -> list[str]:
    """`--preset P`: each workload reference with `preset=P` added (['gpt', 'vit:layers=4'] ->
    ['gpt:preset=P', 'vit:layers=4,preset=P']); the workload checks that it has that preset."""
    if preset is None:
        return refs
    if not refs:
        raise UsageError("--preset needs the workloads named, e.g. `gpt --preset small` (presets: rigbench workloads)")
    out = []
    for ref in refs:
        name, colon, options = ref.partition(":")
        if any(item.strip().startswith("preset=") for item in options.split(",")):
            raise UsageError(f"{ref!r} names a preset and --preset gives another: give it once")
        out.append(f"{ref},preset={preset}" if colon and options else f"{name}:preset={preset}")
    return out


def parse_positive_ints(values: Iterable[str] | None, what: str) -> list[int]:
    """Parse a list flag of whole numbers >= 1, with an error that names the flag."""
    out = []
    for part in split_list(values, what):
        try:
            number = int(part)
        except ValueError:
            raise UsageError(f"{what} must be whole numbers, got {part!r}") from None
        if number < 1:
            raise UsageError(f"{what} must be at least 1, got {number}")
        _check(number, what)
        out.append(number)
    return out


def parse_positive_floats(values: Iterable[str] | None, what: str) -> list[float]:
    """Parse a list flag of numbers > 0 (e.g. learning rates `0.001,1e-2`)."""
    out = []
    for part in split_list(values, what):
        try:
            number = float(part)
        except ValueError:
            raise UsageError(f"{what} must be numbers, got {part!r}") from None
        _check(number, what)
        if not number > 0:
            raise UsageError(f"{what} must be more than 0, got {part}")
        out.append(number)
    return out


def _check(number: float, what: str) -> None:
    """numlimits' bounds (finite, within the database's integers), named by the flag."""
    problem = number_problem(number)
    if problem:
        raise UsageError(f"{what} {problem}")


def format_bytes(n: float | None) -> str:
    """1536 -> '1.5 KiB'; None -> '-'."""
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def clock(seconds: float) -> str:
    """A duration as a clock reads it, to the second: 75.4 -> '0:01:15' (elapsed times, ETAs)."""
    return str(timedelta(seconds=round(max(0.0, seconds))))
