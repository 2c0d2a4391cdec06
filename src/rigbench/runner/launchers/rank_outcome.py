"""Every rank's report of a multi-process trial, from the trial's folder after its processes
ended (runner/rank_files.py names the files).

- A rank that wrote its report has it (a timed-out trial keeps the reports of ranks that
  finished: the trial is still `timeout`, through the ranks that did not).
- Past the timeout, or once a rank's heartbeat has stood still for rank_files.STALL_S (`Stalls`:
  its peers would wait for it until the timeout), the ranks without a report are `timeout`, and the rank that held the
  others up is named from the heartbeats: one whose heartbeat stopped (stopped, or frozen with
  its interpreter), else one that had started fewer steps than the others (they wait for it in
  an all-reduce), else every unfinished rank. The others are marked `collateral`.
- A rank that the launch engine saw fail (agent.json) has its exit described as the one
  process of a single-process trial would (steps.describe_exit); a rank the engine stopped
  because another failed first is a `collateral` crash naming that rank.
- No rank started on this machine (none wrote its stderr file or a heartbeat, the agent saw none
  fail): the launch agent failed first, or past the timeout had not got them going (torch's
  waits at its rendezvous for every node). This node's ranks carry that failure with the
  agent's stderr tail (`never_started`); on node 0 it is the trial's cause, not a rank on
  "another node".
- Anything else: a crash without a report, with the rank's stderr tail.

A rank that wrote its own failure can be collateral too: one whose collective failed because
a peer went away (Collective.lost_peer) says so in its report.

merge.merge_reports then names the first failing rank that is not collateral.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from rigbench.child_report import ChildReport
from rigbench.ranks import NodeLaunch
from rigbench.runner import rank_files
from rigbench.runner.launchers.crash_output import READ_BYTES, fitted_tail, stderr_tail, without_frames
from rigbench.runner.launchers.steps import describe_exit, with_stderr
from rigbench.runner.signal_names import exit_code_text
from rigbench.spec import TrialSpec


@dataclass(frozen=True)
class Beat:
    """A rank's last heartbeat: steps started, and when (wall clock)."""

    steps: int
    at: float
    pid: int | None = None


def read_beat(folder: Path, rank: int) -> Beat | None:
    """The rank's last heartbeat, or None if it never wrote one (or it cannot be read)."""
    try:
        data = json.loads(rank_files.progress_path(folder, rank).read_text(encoding="utf-8"))
        pid = data.get("pid")
        return Beat(int(data["steps"]), float(data["at"]), pid if isinstance(pid, int) else None)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def holding_up(beats: dict[int, Beat | None], stopped_at: float) -> list[int]:
    """Of the unfinished ranks (`beats`), those that held the others up when the trial was
    stopped at `stopped_at` (rules in the module docstring)."""
    stale_after = rank_files.HEARTBEAT_S * rank_files.STALE_BEATS
    silent = [r for r, b in beats.items() if b is None or stopped_at - b.at > stale_after]
    if silent:
        return sorted(silent)
    most = max(b.steps for b in beats.values() if b is not None)
    behind = [r for r, b in beats.items() if b is not None and b.steps < most]
    return sorted(behind or beats)


class Stalls:
    """While a trial runs: the ranks on this machine that froze. A rank's heartbeat has stood still
    for rank_files.STALL_S, by this process's monotonic clock (a step of the wall clock, or a
    machine suspended and woken, moves it not), and its process is stopped or gone, or used less
    than STALL_CPU_S of CPU meanwhile: one that computes without beating (a long call holding the
    interpreter, a heartbeat a full disk cannot write) is left to the timeout. Ranks that have not
    beaten yet, or have written their report, are left out."""

    def __init__(self, folder: Path, spec: TrialSpec):
        self.folder, self.world_size = folder, spec.world_size
        # rank -> (its beat's time, when it was new, the rank's CPU seconds then)
        self._changed: dict[int, tuple[float, float, float | None]] = {}
        self.found: list[int] = []  # what `ranks` said last

    def ranks(self) -> list[int]:
        now, stalled = time.monotonic(), list[int]()
        self.found = stalled
        for rank in range(self.world_size):
            beat = read_beat(self.folder, rank)
            if beat is None or rank_files.report_path(self.folder, rank).exists():
                continue
            seen = self._changed.get(rank)
            if seen is None or seen[0] != beat.at:
                self._changed[rank] = (beat.at, now, cpu_seconds(beat.pid))
            elif now - seen[1] >= rank_files.STALL_S and frozen(beat.pid, seen[2]):
                stalled.append(rank)
        return stalled


#: CPU seconds a rank whose heartbeat stood still for STALL_S may have used and still be frozen.
STALL_CPU_S = 1.0


def cpu_seconds(pid: int | None) -> float | None:
    """The process's CPU time (user + system), None where it cannot be read."""
    if pid is None:
        return None
    try:
        times = psutil.Process(pid).cpu_times()
    except (psutil.Error, OSError):
        return None
    return float(times.user + times.system)


def frozen(pid: int | None, cpu_then: float | None) -> bool:
    """Whether a rank without a heartbeat is frozen: its process stopped (SIGSTOP), a zombie or
    gone, or it used under STALL_CPU_S of CPU since `cpu_then`. Without a pid, the stillness alone."""
    if pid is None:
        return True
    try:
        process = psutil.Process(pid)
        if process.status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP, psutil.STATUS_ZOMBIE,
                                psutil.STATUS_DEAD):
            return True
    except psutil.NoSuchProcess:
        return True
    except (psutil.Error, OSError):
        return False  # cannot tell: the timeout judges it
    now = cpu_seconds(pid)
    return now is not None and cpu_then is not None and now - cpu_then < STALL_CPU_S


def _hang_text(rank: int, beat: Beat | None, stopped_at: float, end: str) -> str:
    if beat is None:
        return f"rank {rank} sent no heartbeat here (it never started, or ran on another node)"
    quiet = stopped_at - beat.at
    stale_after = rank_files.HEARTBEAT_S * rank_files.STALE_BEATS
    state = f"stopped responding {quiet:.1f} s before {end}" if quiet > stale_after else "was still running"
    return f"rank {rank} {state}, at step {beat.steps}"


def timeout_reports(folder: Path, spec: TrialSpec, unfinished: list[int], stopped_at: float,
                    stalled: bool = False) -> dict[int, ChildReport]:
    """The reports of the ranks still running at the deadline, or when the trial was `stalled`:
    ended early because a rank's heartbeat stood still (Stalls)."""
    beats = {rank: read_beat(folder, rank) for rank in unfinished}
    culprits = holding_up(beats, stopped_at)
    if stalled:
        head = (f"the trial was stopped {rank_files.STALL_S:g} s after a rank stopped responding, before its "
                f"{spec.measure.timeout_s:g} s timeout (--timeout)")
    else:
        head = f"the trial did not finish within {spec.measure.timeout_s:g} s (--timeout)"
    end = "it was stopped" if stalled else "the deadline"
    why = "; ".join(_hang_text(r, beats[r], stopped_at, end) for r in culprits)
    reports = {}
    for rank in unfinished:
        if rank in culprits:
            error = f"{head}: {why}"
            if len(culprits) < len(unfinished):
                error += f"; the other ranks waited for {'it' if len(culprits) == 1 else 'them'}"
        else:
            error = f"{head}: waiting for rank{'s' if len(culprits) > 1 else ''} {', '.join(map(str, culprits))}"
        reports[rank] = ChildReport(status="timeout", error=error, rank=rank, world_size=spec.world_size,
                                    collateral=rank not in culprits)
    return reports


def _failure_report(rank: int, spec: TrialSpec, failure: dict, first: int, stderr: str) -> ChildReport:
    code = int(failure.get("exitcode") or 0)
    if rank != first and code < 0:  # stopped by the engine after `first` failed
        report = ChildReport(status="crash", collateral=True,
                             error=f"stopped by the launcher after rank {first} failed")
    else:
        report = describe_exit(code, stderr, spec)
    return report.model_copy(update={"rank": rank, "world_size": spec.world_size})


def rank_reports(folder: Path, spec: TrialSpec, *, timed_out: bool, stopped_at: float,
                 returncode: int | None = None, stalled: bool = False) -> list[ChildReport]:
    """One report per rank, in rank order (rules in the module docstring); `returncode` is the
    agent's exit (None while it ran at the deadline); `stalled`: stopped before the deadline
    because a rank stopped responding (Stalls)."""
    written: dict[int, ChildReport] = {}
    for rank in range(spec.world_size):
        path = rank_files.report_path(folder, rank)
        if path.exists():
            written[rank] = ChildReport.model_validate_json(path.read_text(encoding="utf-8"))
    missing = [r for r in range(spec.world_size) if r not in written]
    if missing and not _started(folder, spec):
        written.update(never_started(folder, spec, missing, timed_out=timed_out, returncode=returncode))
        return [written[r] for r in range(spec.world_size)]
    if timed_out and missing:
        written.update(timeout_reports(folder, spec, missing, stopped_at, stalled))
        return [written[r] for r in range(spec.world_size)]
    agent = _agent(folder)
    here = ran_here(folder, spec)
    for rank in missing:
        stderr = stderr_tail(rank_files.stderr_path(folder, rank))
        failure = agent.get("failures", {}).get(str(rank))
        if failure is not None:
            written[rank] = _failure_report(rank, spec, failure, int(agent.get("first", rank)), stderr)
        elif rank not in here:
            written[rank] = ChildReport(status="crash", rank=rank, world_size=spec.world_size, error=(
                "no report from this rank reached node 0 (it ran on another node: that node's output says why)"))
        else:
            written[rank] = ChildReport(status="crash", rank=rank, world_size=spec.world_size,
                                        error=with_stderr(stderr, "the rank ended without a report"))
    # A rank whose own failure is known here is the cause before a remote rank whose report did
    # not come (its report may have failed to come because of that failure).
    if any(r in here and written[r].status != "ok" and not written[r].collateral for r in written):
        for rank in missing:
            if rank not in here:
                written[rank].collateral = True
    return [written[r] for r in range(spec.world_size)]


def never_started(folder: Path, spec: TrialSpec, missing: list[int], *, timed_out: bool,
                  returncode: int | None) -> dict[int, ChildReport]:
    """The reports of `missing` ranks when no rank started on this machine: the launch agent
    failed first (torch's: at its rendezvous, e.g. node 0's port taken, a node that never came).
    That is this node's own failure, told with the agent's stderr tail: on node 0 the cause of
    the trial (every other rank's report would have come through a rank of node 0), on another
    node the line it prints (runner/session.local_failures)."""
    node = NodeLaunch.from_env().node_rank if spec.nodes > 1 else None
    where = "on this machine" if node is None else f"on node {node}"
    if timed_out:
        why = f"no rank started {where} within {spec.measure.timeout_s:g} s (--timeout)"
        if spec.framework == "torch" and node is not None:
            why += f": torch's agent waits at its rendezvous, {NodeLaunch.from_env().endpoint}, for all {spec.nodes} nodes"
    else:
        why = f"no rank started {where}: the launch agent exited with {exit_code_text(returncode)} first"
    error = with_stderr(fitted_tail(without_frames(stderr_tail(rank_files.agent_stderr_path(folder), READ_BYTES))), why)
    here = ran_here(folder, spec)
    reports = {}
    for rank in missing:
        if rank in here:  # the first is the cause, the others the same failure
            reports[rank] = ChildReport(status="timeout" if timed_out else "crash", error=error, rank=rank,
                                        world_size=spec.world_size, collateral=rank != here[0])
        else:
            reports[rank] = ChildReport(status="crash", rank=rank, world_size=spec.world_size, collateral=True,
                                        error=f"no report from this rank: no rank started {where}")
    return reports


def ran_here(folder: Path, spec: TrialSpec) -> list[int]:
    """The ranks that ran on this machine: each one writes its stderr into the trial's folder
    (runner/rank.redirect_stderr), and the agent names those it saw fail. On one node, all.
    Where none started (the agent failed first), the ranks this node was to start
    (NodeLaunch.ranks): their failure is this node's."""
    if spec.nodes == 1:
        return list(range(spec.world_size))
    return _started(folder, spec) or NodeLaunch.from_env().ranks(spec.world_size, spec.nodes)


def _started(folder: Path, spec: TrialSpec) -> list[int]:
    """The ranks seen starting on this machine: a stderr file or a heartbeat of their own, or a
    failure the agent saw."""
    failed = {int(rank) for rank in _agent(folder).get("failures", {})}
    return [r for r in range(spec.world_size) if r in failed or rank_files.stderr_path(folder, r).exists()
            or rank_files.progress_path(folder, r).exists()]


def _agent(folder: Path) -> dict:
    """What the launch engine's agent wrote about failed ranks ({} if nothing, or unreadable)."""
    try:
        data = json.loads(rank_files.agent_path(folder).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
