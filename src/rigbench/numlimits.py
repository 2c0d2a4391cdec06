"""The stated bounds of every number rigbench accepts, and the checks that enforce them.

One rule set for every way a number comes in: typed command-line flags (every one is checked
by cli/common.handles_usage_errors with `number_problem`), list and size flags (units.py),
sweep files and the API (the pydantic types below, in spec.TrialSpec, its option blocks and
SweepSpec: `INPUT` forbids inf and NaN in all their floats) and imported bundles (each result
is validated as a Result, its spec included, then by result_rules.result_problems).

- **Floats are finite.** JSON has no inf or NaN and pydantic writes them as null: an infinite
  `--lr` reached the trial's child as null, "the workload's default", and a stored spec with a
  null timeout could no longer be read.
- **Integers fit the database's INTEGER**, 64-bit signed (SQLite's, PostgreSQL's BIGINT):
  SQLite raised OverflowError on storing or looking up a larger one.
- **Durations are at most MAX_SECONDS**: a timeout of 1e300 s overflowed the launcher's clock.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import ConfigDict, Field

#: The largest integer a database column holds (64-bit signed).
MAX_INT = 2**63 - 1
#: The longest duration accepted (a timeout, a minimum timing window): a year, in seconds.
MAX_SECONDS = 365 * 24 * 3600.0

#: An integer within the database's range (its other bounds are the field's own).
Int64 = Annotated[int, Field(le=MAX_INT)]
#: A duration in seconds, at most MAX_SECONDS.
Seconds = Annotated[float, Field(le=MAX_SECONDS)]
#: The configuration of a model that holds user input: no unknown keys, no inf or NaN.
INPUT = ConfigDict(extra="forbid", allow_inf_nan=False)


def number_problem(value: Any) -> str | None:
    """Why `value` (a number given on the command line) is refused, or None. Booleans and
    other types are not numbers here."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {value}"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        bound = f"at most {MAX_INT}" if value > 0 else f"at least {-MAX_INT}"
        return f"must be {bound} (the largest whole number rigbench stores), got {value}"
    return None


def seconds_problem(value: float) -> str | None:
    """Why `value` is refused as a duration in seconds (past number_problem), or None."""
    return f"must be at most {MAX_SECONDS:.0f} seconds (a year), got {value:g}" if value > MAX_SECONDS else None
