"""Run a list of trials one after another, storing each result the moment it finishes.

A failing trial is a result like any other and the session goes on. Ctrl-C (or SIGTERM, which
the CLI turns into one) ends the trial in progress and returns the finished ones: its child is
killed and nothing half-finished is stored, except a training run's finished epochs (status
`interrupted`, launchers.TrialInterrupted).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rigbench.errors import UnsupportedError
from rigbench.hw.cpu import usable_cores
from rigbench.ranks import NodeLaunch
from rigbench.runner.assemble import build_result
from rigbench.runner.launchers import Outcome, TrackerSettings, launcher_for
from rigbench.runner.launchers.base import TrialInterrupted
from rigbench.spec import ChildReport, Result, TrialSpec
from rigbench.store import Store
from rigbench.store.limits import check_storable
from rigbench.textlimits import error_line

log = logging.getLogger("rigbench.runner")


@dataclass
class SessionOutcome:
    results: list[Result] = field(default_factory=list)
    interrupted: bool = False
    stopped: TrialSpec | None = None  # the trial in flight at the interrupt, not stored


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
    warning = oversubscription(specs, usable_cores())
    if warning:
        log.warning("rigbench: warning: %s", warning)
    outcome = SessionOutcome()
    for index, spec in enumerate(specs):
        if on_trial_start:
            on_trial_start(index, spec)
        try:
            launched = launch_trial(spec, on_start=on_child_start)
        except TrialInterrupted as kept:  # stored below, then the session stops
            launched, outcome.interrupted = kept.outcome, True
        except KeyboardInterrupt:
            outcome.interrupted, outcome.stopped = True, spec
            break
        node_rank = NodeLaunch.from_env().node_rank if spec.nodes > 1 else 0
        if node_rank != 0:  # node 0 stores the trial with every rank's record (runner/rank.send_to_node_zero)
            for line in local_failures(spec, launched, node_rank):
                log.warning("rigbench: %s", line)
            continue
        result = build_result(spec, launched, run_id)  # every rank's report, merged there
        store.add_result(result)
        outcome.results.append(result)
        if on_trial_end:
            on_trial_end(index, result)
        if outcome.interrupted:
            break
    return outcome


def local_failures(spec: TrialSpec, launched: Outcome, node_rank: int) -> list[str]:
    """One line per rank of this node (not node 0) that did not end `ok`: node 0 stores the
    trial, and names a rank whose report did not reach it only as such, so this node's output
    is where its cause is read."""
    def line(report: ChildReport, rank: str) -> str:
        return f"node {node_rank}: {spec.label()}{rank}: {report.status}: {error_line(report.error or report.status)}"

    if len(launched.reports) < spec.world_size:  # no rank started (e.g. unsupported)
        return [line(launched.report, "")] if launched.report.status != "ok" else []
    here = launched.ran_here if launched.ran_here is not None else range(spec.world_size)
    return [line(report, f" rank {rank}") for rank, report in enumerate(launched.reports)
            if rank in here and report.status != "ok"]


def oversubscription(specs: Sequence[TrialSpec], cores: int | None) -> str | None:
    """A warning when some trial asks for more threads (per rank, times its ranks on this
    machine) than the `cores` this process may use, else None. Not an error: every framework
    runs the threads asked for (runner/child._describe_software), and a thread-count study may
    mean to measure oversubscription; the trials then share the cores."""
    over = sorted({(s.threads, s.world_size // s.nodes) for s in specs
                   if cores and s.threads and s.threads * (s.world_size // s.nodes) > cores})
    if not over:
        return None
    asked = ", ".join(str(t) if ranks == 1 else f"{t} x {ranks} processes" for t, ranks in over)
    return (f"--threads {asked} is more than the {cores} CPUs this process may use: the threads share "
            "them (oversubscribed), and the results measure that")
