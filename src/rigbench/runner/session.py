"""Run a list of trials one after another, storing each result the moment it finishes.

A failing trial is a result like any other and the session goes on. Ctrl-C (or SIGTERM, which
the CLI turns into one) ends the trial in progress and returns the finished ones: its child is
killed and nothing half-finished is stored, except a training run's finished epochs (status
`interrupted`, launchers.TrialInterrupted).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import FrameType

from rigbench.child_report import ChildReport
from rigbench.errors import UnsupportedError, UsageError
from rigbench.hw.cpu import usable_cores
from rigbench.hw.memory import available_memory, memory_limit_refusal
from rigbench.ranks import node_rank_here
from rigbench.runner.assemble import build_result
from rigbench.runner.launchers import Outcome, TrackerSettings, launcher_for
from rigbench.runner.launchers.base import TrialInterrupted
from rigbench.runner.launchers.crash_output import FAULT_HEADER
from rigbench.runner.signal_names import STOPS
from rigbench.spec import Result, TrialSpec
from rigbench.store import Store, waiting
from rigbench.store.limits import check_storable
from rigbench.textlimits import error_line
from rigbench.units import format_bytes

log = logging.getLogger("rigbench.runner")


@dataclass
class SessionOutcome:
    results: list[Result] = field(default_factory=list)
    interrupted: bool = False
    stopped: TrialSpec | None = None  # the trial in flight at the interrupt, not stored
    #: On a node other than 0 (which stores nothing): the trials its ranks took part in, and
    #: those in which one of them did not end `ok` (local_failures printed why).
    node_trials: int = 0
    node_failed: int = 0


def launch_trial(spec: TrialSpec, on_start: Callable[[int], None] | None = None,
                 on_progress: Callable[[str], None] | None = None) -> Outcome:
    """Run one trial through the launcher its spec needs (runner/launchers). A trial no
    launcher can run is an `unsupported` outcome with the reason; nothing is started."""
    try:
        launcher = launcher_for(spec)
    except UnsupportedError as exc:
        # One report stands for the whole trial: no rank ever started.
        return Outcome(reports=[ChildReport(status="unsupported", error=str(exc))])
    return launcher.launch(spec, TrackerSettings.for_spec(spec), on_start=on_start, on_progress=on_progress)


def run_trials(
    specs: Sequence[TrialSpec],
    store: Store,
    run_id: str,
    on_trial_start: Callable[[int, TrialSpec], None] | None = None,
    on_trial_end: Callable[[int, Result], None] | None = None,
    on_child_start: Callable[[int], None] | None = None,
    on_trial_progress: Callable[[int, str], None] | None = None,
) -> SessionOutcome:
    """Run `specs` in order, one launch each (one trial per device at a time). A spec the
    database could not store is refused before any of them runs (store/limits.py), and so is
    one with more ranks than this machine's memory can hold (check_ranks_fit), or that this
    OS cannot run (check_platform)."""
    check_storable(specs)
    check_ranks_fit(specs)
    check_platform(specs)
    warning = oversubscription(specs, usable_cores())
    if warning:
        log.warning("rigbench: warning: %s", warning)
    if note := per_rank_memory_cap(specs):
        log.warning("rigbench: note: %s", note)
    outcome = SessionOutcome()
    try:
        for index, spec in enumerate(specs):
            if on_trial_start:
                on_trial_start(index, spec)
            started = time.monotonic()
            try:
                progress = (lambda text, i=index: on_trial_progress(i, text)) if on_trial_progress else None
                launched = launch_trial(spec, on_start=on_child_start, on_progress=progress)
            except TrialInterrupted as kept:  # stored below, then the session stops
                launched, outcome.interrupted = kept.outcome, True
            except KeyboardInterrupt:
                outcome.interrupted, outcome.stopped = True, spec
                break
            node_rank = node_rank_here(spec.nodes)
            if node_rank != 0:  # node 0 stores the trial with every rank's record (runner/rank.send_to_node_zero)
                failures = local_failures(spec, launched, node_rank)
                for text in failures:
                    log.warning("rigbench: %s", text)
                outcome.node_trials += 1
                outcome.node_failed += bool(failures)
                if outcome.interrupted:
                    break
                continue
            with interrupts_held():  # a finished trial is stored and counted whole
                result = build_result(spec, launched, run_id)  # every rank's report, merged there
                result.metrics.trial_s = time.monotonic() - started
                store.add_result(result)
                outcome.results.append(result)
            if on_trial_end:
                on_trial_end(index, result)
            if outcome.interrupted:
                break
    except KeyboardInterrupt:  # between trials (a callback, or one held while storing): none in flight
        outcome.interrupted = True
    return outcome


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold Ctrl-C (and any signal with a Python handler: the CLI's SIGTERM and SIGHUP) until
    the block ends, then raise it: an interrupt between a trial's database commit and the
    outcome's list lost the trial from the line that says what was kept, and one before the
    commit, a finished trial. A wait for a busy database ends at once (store/waiting.py): the
    result is kept in the spool. Main thread only (where handlers run); a signal without a
    Python handler (a library's default SIGTERM) is left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, _frame: FrameType | None) -> None:
        held.append(signum)
        waiting.stop_waiting.set()  # a busy database is not waited for: the result goes to the spool

    previous = {sig: signal.signal(sig, hold) for sig in STOPS if callable(signal.getsignal(sig))}
    try:
        yield
    finally:
        waiting.stop_waiting.clear()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if held:
            signal.raise_signal(held[0])  # its handler runs here, as if it had just arrived


#: Lines of a cause's text (what its process printed last) shown under its line on a node other
#: than 0: node 0, which stores the trial, never sees them.
TAIL_LINES = 10


def local_failures(spec: TrialSpec, launched: Outcome, node_rank: int) -> list[str]:
    """One line per failure of this node's ranks (not node 0), ranks that failed alike on one
    line: node 0 stores the trial, and names a rank whose report did not reach it only as such,
    so this node's output is where its cause is read. Under a cause (not `collateral`), the last
    TAIL_LINES of its text: a traceback, or the launch agent's stderr where no rank started."""
    def line(report: ChildReport, rank: str) -> str:
        return f"node {node_rank}: {spec.label()}{rank}: {report.status}: {error_line(report.error or report.status)}"

    if len(launched.reports) < spec.world_size:  # no rank started (e.g. unsupported)
        return [line(launched.report, "")] if launched.report.status != "ok" else []
    here = launched.ran_here if launched.ran_here is not None else range(spec.world_size)
    alike: dict[tuple[str, str], list[int]] = {}
    for rank, report in enumerate(launched.reports):
        if rank in here and report.status != "ok":
            alike.setdefault((report.status, report.error or ""), []).append(rank)
    texts = []
    for (_, error), ranks in alike.items():
        first = launched.reports[ranks[0]]
        text = line(first, f" rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}")
        if not all(launched.reports[r].collateral for r in ranks):
            text += "".join(f"\n  {before}" for before in _cause_tail(error))
        texts.append(text)
    return texts


def _cause_tail(error: str) -> list[str]:
    """The last TAIL_LINES of a cause's text before its error line; after a native crash, those
    before faulthandler's dump and its first line: what the library said (JAX's coordination
    client: the leader task died) is the cause, every thread's stack would fill the lines."""
    lines = error.strip().splitlines()[:-1]
    dump = [i for i, line in enumerate(lines) if line.startswith(FAULT_HEADER)]
    return (lines[:dump[-1] + 1] if dump else lines)[-TAIL_LINES:]


def oversubscription(specs: Sequence[TrialSpec], cores: int | None) -> str | None:
    """A warning when some trial asks for more threads (per rank, times its ranks on this
    machine) than the `cores` this process may use, else None. Not an error: every framework
    runs the threads asked for (runner/child._describe_software), and a thread-count study may
    mean to measure oversubscription; the trials then share the cores."""
    over = sorted({(s.threads, s.ranks_per_node) for s in specs
                   if cores and s.threads and s.threads * s.ranks_per_node > cores})
    # Left to its default, each rank gets the cores // its ranks, at least 1 (threads_per_rank):
    # more ranks than cores is then oversubscribed just the same.
    crowded = sorted({s.ranks_per_node for s in specs if cores and not s.threads and s.ranks_per_node > cores})
    if not over and not crowded:
        return None
    asked = ", ".join(str(t) if ranks == 1 else f"{t} x {ranks} processes" for t, ranks in over)
    said = [f"--threads {asked} is more than the {cores} CPUs this process may use"] if over else []
    if crowded:
        said.append(f"--processes {', '.join(map(str, crowded))} is more ranks than the {cores} CPUs this process "
                    "may use, at 1 thread each")
    return f"{'; '.join(said)}: the threads share them (oversubscribed), and the results measure that"


#: The least memory a data-parallel rank takes, whatever it trains: its framework, imported (torch
#: 2.13 alone ~220 MiB resident here; a --quick mlp rank peaked at 520-550 MiB in torch and jax,
#: 1,250-1,280 MiB in TensorFlow: docs/DATA_PARALLEL.md). A coarse floor, so that only a count
#: that surely cannot fit is refused.
RANK_FLOOR_BYTES = 256 * 2**20


def ranks_beyond_memory(specs: Sequence[TrialSpec], available_bytes: int) -> str | None:
    """Why the trial with the most ranks on this machine cannot fit in `available_bytes` (at
    RANK_FLOOR_BYTES a rank), else None. GPU ranks take host memory too (their framework and
    CUDA context), so the rule holds on any device."""
    ranks = max((s.ranks_per_node for s in specs if s.is_data_parallel), default=1)
    fits = available_bytes // RANK_FLOOR_BYTES
    if ranks <= max(1, fits):
        return None
    return (f"--processes {ranks} cannot fit in this machine's memory: each rank takes at least "
            f"{format_bytes(RANK_FLOOR_BYTES)} (its framework, imported), and {format_bytes(available_bytes)} "
            f"is available, room for {fits}; use fewer processes")


def check_ranks_fit(specs: Sequence[TrialSpec]) -> None:
    """UsageError (ranks_beyond_memory) before any trial starts: 100 torch ranks would otherwise
    each take ~450 MiB until the kernel's out-of-memory killer stepped in."""
    if any(s.ranks_per_node > 1 for s in specs):
        why = ranks_beyond_memory(specs, available_memory())
        if why:
            raise UsageError(why)


def check_platform(specs: Sequence[TrialSpec]) -> None:
    """UsageError before any trial starts where this OS cannot run one as asked: --memory-limit
    off Linux (each trial would end `crash` or `unsupported`, or run uncapped on macOS), and
    data-parallel ranks on Windows (torch's elastic agent asks its rendezvous store for libuv,
    which torch's Windows wheels lack, pytorch#196855; rigbench's rank agent stops its ranks by
    POSIX process group)."""
    refusal = memory_limit_refusal()
    if refusal and any(s.measure.memory_limit_bytes for s in specs):
        raise UsageError(refusal)
    if sys.platform == "win32" and any(s.is_data_parallel for s in specs):
        raise UsageError("data-parallel trials (--processes, --data-parallel) do not run on Windows: "
                         "run them on Linux or in WSL2")


def per_rank_memory_cap(specs: Sequence[TrialSpec]) -> str | None:
    """A note where a trial with several ranks on this machine runs under --memory-limit: the
    cap (RLIMIT_AS) is each process's, so the trial may take its ranks x the limit here."""
    capped = sorted({(s.ranks_per_node, s.measure.memory_limit_bytes) for s in specs
                     if s.measure.memory_limit_bytes and s.ranks_per_node > 1})
    if not capped:
        return None
    each = ", ".join(f"{n} x {format_bytes(cap)} = {format_bytes(n * cap)}" for n, cap in capped)
    return f"--memory-limit caps each rank's process, not the trial: in all, {each} on this machine"
