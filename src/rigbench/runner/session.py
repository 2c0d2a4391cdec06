"""Run a list of trials one after another, storing each result the moment it finishes.

A failing trial is a result like any other and the session goes on. Ctrl-C ends the
trial in progress (its child is killed, nothing half-finished is stored) and returns the
finished ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rigbench.errors import UnsupportedError
from rigbench.ranks import NodeLaunch
from rigbench.runner.assemble import build_result
from rigbench.runner.launchers import Outcome, TrackerSettings, launcher_for
from rigbench.spec import ChildReport, Result, TrialSpec
from rigbench.store import Store
from rigbench.store.limits import check_storable


@dataclass
class SessionOutcome:
    results: list[Result] = field(default_factory=list)
    interrupted: bool = False


def launch_trial(spec: TrialSpec, on_start: Callable[[int], None] | None = None) -> Outcome:
    """Run one trial through the launcher its spec needs (runner/launchers). A trial no
    launcher can run is an `unsupported` outcome with the reason; nothing is started."""
    try:
        launcher = launcher_for(spec)
    except UnsupportedError as exc:
        # One report stands for the whole trial: no rank ever started.
        return Outcome(reports=[ChildReport(status="unsupported", error=str(exc))])
    return launcher.launch(spec, TrackerSettings.for_spec(spec), on_start=on_start)


def run_trials(
    specs: Sequence[TrialSpec],
    store: Store,
    run_id: str,
    on_trial_start: Callable[[int, TrialSpec], None] | None = None,
    on_trial_end: Callable[[int, Result], None] | None = None,
    on_child_start: Callable[[int], None] | None = None,
) -> SessionOutcome:
    """Run `specs` in order, one launch each (one trial per device at a time). A spec the
    database could not store is refused before any of them runs (store/limits.py)."""
    check_storable(specs)
    outcome = SessionOutcome()
    for index, spec in enumerate(specs):
        if on_trial_start:
            on_trial_start(index, spec)
        try:
            launched = launch_trial(spec, on_start=on_child_start)
        except KeyboardInterrupt:
            outcome.interrupted = True
            break
        if spec.nodes > 1 and NodeLaunch.from_env().node_rank != 0:
            continue  # node 0 stores the trial with every rank's record (runner/rank.send_to_node_zero)
        result = build_result(spec, launched, run_id)  # every rank's report, merged there
        store.add_result(result)
        outcome.results.append(result)
        if on_trial_end:
            on_trial_end(index, result)
    return outcome
