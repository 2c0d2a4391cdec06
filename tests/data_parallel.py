"""What the data-parallel tests of every framework share (tests/integration/test_data_parallel*.py):
a trial with fixed step counts, its launch through the framework's agent launcher, the checks
every framework must pass against one plain process (tests/dp_reference.py, one child process
per framework for every reference it needs), and a rank killed or stopped mid-trial."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import psutil

from rigbench.child_report import ChildReport
from rigbench.runner import rank_files
from rigbench.runner.launchers import Outcome, TrackerSettings
from rigbench.runner.launchers.agent import AgentLauncher, RanksLauncher, TorchrunLauncher
from rigbench.spec import MeasureOptions, TrialSpec

BATCH = 16
REPO_ROOT = Path(__file__).parents[1]
#: 2 warm-up and 5 timed steps, whatever the clock says: runs of different world sizes compare.
FIXED_STEPS = dict(warmup_steps=2, warmup_seconds=0.0, min_steps=5, max_steps=5, min_seconds=0.0)


def dp_spec(world_size: int, framework: str = "torch", batch_size: int = BATCH, **measure) -> TrialSpec:
    """An mlp trial on the CPU, one thread per rank, FIXED_STEPS unless `measure` says otherwise."""
    return TrialSpec(workload="mlp", framework=framework, device="cpu", batch_size=batch_size, threads=1,
                     world_size=world_size, measure=MeasureOptions(**(FIXED_STEPS | measure)))


def agent_launcher(framework: str) -> AgentLauncher:
    """The agent launcher of `framework`'s data-parallel trials, which also runs world size 1 as
    a rank (launcher_for gives one process the plain "process" launcher)."""
    return TorchrunLauncher() if framework == "torch" else RanksLauncher()


def launch(spec: TrialSpec, on_start=None, on_progress=None) -> Outcome:
    return agent_launcher(spec.framework).launch(spec, TrackerSettings.for_spec(spec), on_start=on_start,
                                                 on_progress=on_progress)


def check_two_ranks_agree(outcome: Outcome, steps: int = 5) -> None:
    """Both ranks ok, as ranks 0 and 1, with the same timed and no-sync step counts, the
    trial's steps the per-step maximum, and identical replicas (sha256 and per-tensor sums)."""
    assert [r.status for r in outcome.reports] == ["ok", "ok"], [r.error for r in outcome.reports]
    r0, r1 = outcome.reports
    assert [(r.rank, r.world_size) for r in (r0, r1)] == [(0, 2), (1, 2)]
    assert len(r0.step_times_s) == len(r1.step_times_s) == steps
    assert len(r0.nosync_step_times_s) == len(r1.nosync_step_times_s) == steps
    assert outcome.report.step_times_s == [max(a, b) for a, b in zip(r0.step_times_s, r1.step_times_s)]
    assert r0.param_digest and r0.param_digest == r1.param_digest
    assert r0.param_sums == r1.param_sums


@dataclass
class Reference:
    """What one plain process computed (tests/dp_reference.py): per batch size, the per-tensor
    parameter sums after FIXED_STEPS and the steps it ran (warm-up, timed); each trial's report."""

    param_sums: dict[int, list[float]]
    steps: dict[int, list[int]]
    reports: list[ChildReport]


def one_process(framework: str, batch_sizes: Sequence[int] = (2 * BATCH, BATCH),
                trials: Sequence[TrialSpec] = ()) -> Reference:
    """`framework`'s references, all in one fresh child process (no agent, no rank, nothing
    cached): the parameters one process trains at each of `batch_sizes`, and `trials` run whole."""
    command = [sys.executable, "-m", "tests.dp_reference", framework, *map(str, batch_sizes)]
    command += [arg for spec in trials for arg in ("--trial", spec.model_dump_json())]
    done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, f"the {framework} reference process failed:\n{done.stderr[-4000:]}"
    out = json.loads(done.stdout.splitlines()[-1])
    return Reference({int(batch): sums for batch, sums in out["param_sums"].items()},
                     {int(batch): steps for batch, steps in out["steps"].items()},
                     [ChildReport.model_validate(report) for report in out["reports"]])


def check_equals_one_process_on_the_global_batch(two_ranks: Outcome, framework: str, rtol: float, atol: float,
                                                 reference: Reference | None = None) -> None:
    """Two ranks on BATCH rows each end where one plain process (no collective, no data-parallel
    code) on the 2 x BATCH rows ends after the same steps (up to float32 summation order:
    `rtol`, `atol` on the per-tensor sums), and one process on other rows does not (so the
    check can fail). `reference`: one_process(framework)'s, when the caller made it already."""
    reference = reference or one_process(framework)
    r0 = two_ranks.reports[0]
    ran = [r0.warmup_steps, len(r0.step_times_s)]
    assert reference.steps[2 * BATCH] == reference.steps[BATCH] == ran, \
        f"the reference ran {reference.steps} (warm-up, timed), the ranks {ran}"
    ranks, single = np.array(r0.param_sums), np.array(reference.param_sums[2 * BATCH])
    assert ranks.shape == single.shape
    np.testing.assert_allclose(ranks, single, rtol=rtol, atol=atol)
    other = np.array(reference.param_sums[BATCH])
    assert other.shape == single.shape
    assert not np.allclose(other, single, rtol=rtol, atol=atol), \
        f"one process on {BATCH} rows ends as close to the {2 * BATCH}-row reference: the check cannot fail"


def _rank_pids(folder: Path, world_size: int, ended: threading.Event) -> dict[int, int] | None:
    """The ranks' pids from their heartbeats, once every rank has started stepping; None if
    the launch ended first."""
    while not ended.is_set():
        beats = {}
        for rank in range(world_size):
            try:
                beats[rank] = json.loads(rank_files.progress_path(folder, rank).read_text())
            except (OSError, ValueError):
                break
        if len(beats) == world_size and all(b["steps"] > 0 for b in beats.values()):
            return {rank: b["pid"] for rank, b in beats.items()}
        ended.wait(0.2)
    return None


@dataclass
class Signalled:
    """What signal_rank_when_stepping did: every pid the trial had ("agent", "rank 0"...),
    whether the signal was sent, and if not, why."""

    pids: dict[str, int] = field(default_factory=dict)
    sent: bool = False
    why_not: str = "the launch never started an agent"

    def check_sent(self, outcome: Outcome) -> None:
        """The test's own failure when the signal never went out (e.g. the ranks had not
        started stepping by the trial's end): the trial's outcome then tests nothing."""
        assert self.sent, f"no signal was sent: {self.why_not}; the trial: {outcome.report.error}"


def signal_rank_when_stepping(spec: TrialSpec, signum: int, rank: int) -> tuple[Outcome, Signalled]:
    """Launch `spec` and send `signum` to `rank` once every rank steps: (the outcome, what was
    signalled). The helper thread stops once the launch returned, and whatever stopped it is
    in the result for the test to assert (Signalled.check_sent), never a stray exception."""
    signalled, ended, threads = Signalled(), threading.Event(), []

    def inject(agent_pid: int) -> None:
        try:
            agent = psutil.Process(agent_pid)
            while len(agent.cmdline()) < 2:  # right after the fork, before the exec
                if ended.wait(0.05):
                    signalled.why_not = "the launch ended before the agent started"
                    return
            folder = Path(agent.cmdline()[-1])  # the agent's command: ... SPEC FOLDER
            pids = _rank_pids(folder, spec.world_size, ended)
            if pids is None:
                signalled.why_not = (f"the launch ended before every rank had started stepping "
                                     f"(timeout {spec.measure.timeout_s:g} s)")
                return
            signalled.pids = {"agent": agent_pid, **{f"rank {r}": pid for r, pid in pids.items()}}
            os.kill(pids[rank], signum)
            signalled.sent = True
        except Exception as exc:  # noqa: BLE001 - reported to the test through `signalled`
            signalled.why_not = f"{type(exc).__name__}: {exc}"

    def on_start(agent_pid: int) -> None:
        signalled.why_not = "the helper thread did not finish"
        thread = threading.Thread(target=inject, args=(agent_pid,), daemon=True)
        threads.append(thread)
        thread.start()

    try:
        outcome = launch(spec, on_start=on_start)
    finally:
        ended.set()
        for thread in threads:
            thread.join(timeout=10)
    return outcome, signalled


def gone(pid: int) -> bool:
    """The process has ended (a zombie waiting for its parent counts)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
