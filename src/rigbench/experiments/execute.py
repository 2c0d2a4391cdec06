"""Run TrialSpecs as one stored run: the run record (command, machine) and then the trials."""

from __future__ import annotations

import shlex
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rigbench.fingerprint import machine_fingerprint
from rigbench.runner.session import SessionOutcome, check_platform, check_ranks_fit, run_trials
from rigbench.spec import Result, TrialSpec
from rigbench.store import Store
from rigbench.store.limits import check_storable
from rigbench.timestamps import now_iso


def new_run_id() -> str:
    """A fresh run id (12 hex digits)."""
    return uuid.uuid4().hex[:12]


def start_run(store: Store, command: str | None = None, run_id: str | None = None, *,
              deferred: bool = True) -> str:
    """Record a run (its time, command line, default: this process's, and this machine's
    fingerprint) under `run_id` (default: a new one); returns its id. `deferred` (Store.add_run):
    the run is written with its first result, so one that stores none leaves no empty run."""
    run_id = run_id or new_run_id()
    store.add_run(run_id, now_iso(), command or shlex.join(sys.argv), machine_fingerprint(), deferred=deferred)
    return run_id


@dataclass
class RunOutcome:
    run_id: str
    db_url: str
    results: list[Result]
    interrupted: bool
    stopped: TrialSpec | None = None  # the trial in flight when interrupted: not stored
    node_trials: int = 0  # on a node other than 0: the trials its ranks took part in (SessionOutcome)
    node_failed: int = 0  # ... and those in which one of them failed


def run(
    specs: Sequence[TrialSpec],
    db: str | None = None,
    command: str | None = None,
    on_trial_start: Callable[[int, TrialSpec], None] | None = None,
    on_trial_end: Callable[[int, Result], None] | None = None,
    on_child_start: Callable[[int], None] | None = None,
    on_trial_progress: Callable[[int, str], None] | None = None,
) -> RunOutcome:
    """Run trials one by one in child processes; every result is stored as it finishes."""
    check_storable(specs)  # before the run is recorded: a refused spec leaves no empty run
    check_ranks_fit(specs)
    check_platform(specs)
    store = Store(db)
    # Written with its first result: a node other than 0 stores none of its trials (node 0 stores
    # each with every rank's record), so it never writes this run.
    run_id = start_run(store, command)
    session: SessionOutcome = run_trials(specs, store, run_id, on_trial_start=on_trial_start,
                                         on_trial_end=on_trial_end, on_child_start=on_child_start,
                                         on_trial_progress=on_trial_progress)
    return RunOutcome(run_id, store.url, session.results, session.interrupted, session.stopped,
                      session.node_trials, session.node_failed)
