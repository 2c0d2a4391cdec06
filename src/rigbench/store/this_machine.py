"""Which stored results this machine measured: a fleet shares one database, and a result from
another machine is no measurement of this one (a sweep's resume, a recommendation)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from rigbench.fingerprint import machine_key, this_machine_key
from rigbench.spec import Result
from rigbench.store.db import Store


def run_machines(store: Store, run_ids: Iterable[str]) -> dict[str, tuple[Any, ...]]:
    """run id -> the machine it ran on (fingerprint.machine_key), each run's fingerprint read once."""
    return {run_id: machine_key(store.machine(run_id)) for run_id in dict.fromkeys(run_ids)}


def most_common_machine(store: Store, results: Sequence[Result]) -> tuple[Any, ...] | None:
    """The machine that measured most of `results` (None for none): whose calibration a view
    of them reads."""
    machines = run_machines(store, (r.run_id for r in results))
    counts = Counter(machines[r.run_id] for r in results)
    return counts.most_common(1)[0][0] if counts else None


def split_by_machine(store: Store, results: Sequence[Result]) -> tuple[list[Result], int]:
    """(the results measured on this machine, how many were not): same host name, CPU model,
    instruction sets and GPUs (fingerprint.machine_key), read once per run."""
    here = this_machine_key()
    machines = run_machines(store, (r.run_id for r in results))
    kept = [r for r in results if machines[r.run_id] == here]
    return kept, len(results) - len(kept)


def split_runs(store: Store) -> tuple[list[str], int]:
    """(the ids of the runs made on this machine, oldest first; how many stored results are not
    theirs), from the runs table and counts: a view of this machine's results in a fleet's
    database must not read (and decode) every other machine's results to leave them out."""
    here = this_machine_key()
    mine, held = [], 0
    for run in store.runs():
        if machine_key(run["machine"]) == here:
            mine.append(run["id"])
            held += run["trials"]
    return mine, store.count() - held  # a result whose run is not stored is no result of this machine


def this_machine_results(store: Store) -> list[Result]:
    """The stored results (without raw samples, oldest first) of the runs made on this machine:
    same host name, CPU model, instruction sets and GPUs as now (fingerprint.machine_key), so
    imported results of other machines are left out. split_by_machine of every stored result,
    reading only this machine's."""
    return store.of_runs(split_runs(store)[0])


def other_machines_count(store: Store) -> int:
    """How many stored results other machines measured (imported bundles, a fleet's database):
    what a view of this machine's results leaves out."""
    return split_runs(store)[1]
