"""The numbers the results database can hold, from the schema's column types, checked before a
trial runs: a value the database would refuse must not cost a measured result.

An `Integer` column is 64 bits on SQLite but 32 on PostgreSQL, so `-b 3000000000` fits the one
and raised DataError on the other after the trial had run. Every TrialSpec field kept in an
integer column is checked against the narrower range, whatever the database: the same results
move between backends (bundles, a fleet's PostgreSQL). Float columns are 8-byte doubles on both
backends and need no range check here; values beyond any integer and non-finite floats are
refused where the spec is parsed (spec.py, the CLI).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import BigInteger, Column, Integer, SmallInteger

from rigbench.errors import UsageError
from rigbench.spec import TrialSpec
from rigbench.store.schema import trials

#: trials column -> how a user sets the TrialSpec field stored in it (named in the error)
SPEC_COLUMNS: dict[str, str] = {
    "batch_size": "--batch-size",
    "threads": "--threads",
    "world_size": "the process count (--processes x --nnodes)",
}


def column_range(column: Column) -> tuple[int, int]:
    """The values an integer column holds on every backend rigbench supports."""
    if not isinstance(column.type, Integer):
        raise TypeError(f"{column.name} is not an integer column")
    bits = 64 if isinstance(column.type, BigInteger) else 16 if isinstance(column.type, SmallInteger) else 32
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def check_storable(specs: Sequence[TrialSpec]) -> None:
    """UsageError naming the first value of `specs` that the results database cannot store."""
    for spec in specs:
        for name, flag in SPEC_COLUMNS.items():
            value = getattr(spec, name)
            low, high = column_range(trials.c[name])
            if value is not None and not low <= value <= high:
                raise UsageError(f"{flag} {value} is more than the results database can store (at most "
                                 f"{high}: an INTEGER column on PostgreSQL); use a smaller value")
