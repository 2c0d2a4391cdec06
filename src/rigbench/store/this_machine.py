"""Which stored results this machine measured: a fleet shares one database, and a result from
another machine is no measurement of this one (a sweep's resume, a recommendation)."""

from __future__ import annotations

from collections.abc import Sequence

from rigbench.fingerprint import machine_key, this_machine_key
from rigbench.spec import Result
from rigbench.store.db import Store


def split_by_machine(store: Store, results: Sequence[Result]) -> tuple[list[Result], int]:
    """(the results measured on this machine, how many were not): same host name, CPU model,
    instruction sets and GPUs (fingerprint.machine_key), read once per run."""
    here = this_machine_key()
    same: dict[str, bool] = {}
    kept = []
    for r in results:
        if r.run_id not in same:
            same[r.run_id] = machine_key(store.machine(r.run_id)) == here
        if same[r.run_id]:
            kept.append(r)
    return kept, len(results) - len(kept)
