"""Where a data-parallel rank and its launcher meet: one file per rank and concern in the
trial's folder, so a hung or dead rank cannot take the others' records with it (every rank
reports through files of its own, never only through a collective). Both sides name the files
here: the launcher (runner/launchers/) and the rank's child process (runner/rank.py)."""

from __future__ import annotations

from pathlib import Path

#: Seconds between two heartbeats of a rank (runner/rank.Heartbeat); a heartbeat older than
#: STALE_BEATS of them says the rank stopped (runner/launchers/rank_outcome.py).
HEARTBEAT_S = 0.5
STALE_BEATS = 4
#: Seconds a running rank's heartbeat may stand still, its process stopped or idle, before the
#: launcher ends the trial (launchers/rank_outcome.Stalls): its peers would wait for it in a
#: collective until the timeout (600 s by default). The heartbeat is a thread of its own, so it stops
#: only when the whole process does, never for a long step, a compilation or a wait for a peer.
STALL_S = 60.0


def report_path(folder: Path, rank: int) -> Path:
    """The rank's ChildReport (JSON), written once, at its end."""
    return folder / f"report-rank{rank}.json"


def progress_path(folder: Path, rank: int) -> Path:
    """The rank's heartbeat (JSON: pid, steps started, wall-clock time), rewritten while it runs."""
    return folder / f"progress-rank{rank}.json"


def stderr_path(folder: Path, rank: int) -> Path:
    """The rank's own stderr (the agent's stays in the folder's stderr.txt)."""
    return folder / f"stderr-rank{rank}.txt"


def first_stderr_path(folder: Path, world_size: int) -> Path | None:
    """The stderr file of the lowest rank that has started on this machine (None before any has):
    the one whose phases and epochs stand for the trial's progress (every rank passes the same
    ones, in step)."""
    return next((path for rank in range(world_size) if (path := stderr_path(folder, rank)).exists()), None)


def agent_stderr_path(folder: Path) -> Path:
    """The agent's own stderr (torch's elastic agent's rendezvous errors land there)."""
    return folder / "stderr.txt"


def agent_path(folder: Path) -> Path:
    """What the launch engine's agent saw of failed ranks (JSON), if any failed."""
    return folder / "agent.json"
