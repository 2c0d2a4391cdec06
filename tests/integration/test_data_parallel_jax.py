"""Data-parallel JAX trials for real: rigbench's agent ("ranks" launcher) starts the ranks, each
joins jax.distributed (gloo between the CPU processes) and runs one jitted step on a replicated
state and a batch sharded over the processes; the launcher reads one report per rank.

Checked against things the code does not compute itself: the replicas' parameters against
each other (sha256) and against one process trained on the global batch, the stored result
through the command line, and a killed rank (the coordinator too) against the process table."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

from rigbench.runner import rank_files
from rigbench.runner.launchers import TrackerSettings, launcher_for
from rigbench.runner.launchers.agent import RanksLauncher
from rigbench.spec import MeasureOptions, TrainOptions, TrialSpec
from rigbench.store import Store

pytest.importorskip("jax")
pytestmark = pytest.mark.timeout(300)

BATCH = 16
#: One process on 2B rows and two on B rows each differ only in float32 summation order (the
#: gradient all-reduce adds two partial sums; one process adds all rows at once). Over 7 Adam
#: steps of mlp that moved the parameter sums by at most 4.4e-6 (sums up to ~200) here, while
#: a different batch moves them by ~100: torch's test uses the same bounds.
RTOL, ATOL = 1e-4, 1e-3


def dp_spec(world_size: int, batch_size: int = BATCH, framework: str = "jax", **measure) -> TrialSpec:
    """An mlp trial on the CPU with a fixed number of steps (2 warm-up, 5 timed)."""
    options = dict(warmup_steps=2, warmup_seconds=0.0, min_steps=5, max_steps=5, min_seconds=0.0) | measure
    return TrialSpec(workload="mlp", framework=framework, device="cpu", batch_size=batch_size, threads=1,
                     world_size=world_size, measure=MeasureOptions(**options))


def launch(spec: TrialSpec, on_start=None):
    return RanksLauncher().launch(spec, TrackerSettings.for_spec(spec), on_start=on_start)


@pytest.fixture(scope="module")
def two_ranks():
    spec = dp_spec(2)
    return spec, launch(spec)


def test_a_jax_trial_of_two_processes_takes_the_ranks_launcher():
    assert launcher_for(dp_spec(2)).name == "ranks"
    assert launcher_for(dp_spec(1)).name == "process"


def test_two_ranks_report_each_with_the_agreed_steps(two_ranks):
    _, outcome = two_ranks
    assert [r.status for r in outcome.reports] == ["ok", "ok"], [r.error for r in outcome.reports]
    assert [(r.rank, r.world_size) for r in outcome.reports] == [(0, 2), (1, 2)]
    r0, r1 = outcome.reports
    assert len(r0.step_times_s) == len(r1.step_times_s) == 5  # agreed, and as asked
    assert outcome.report.step_times_s == [max(a, b) for a, b in zip(r0.step_times_s, r1.step_times_s)]
    assert len(r0.nosync_step_times_s) == len(r1.nosync_step_times_s) == 5
    assert r0.losses == r1.losses  # the loss of the global batch, replicated
    assert [size for size, _ in r0.allreduce_s][:3] == [4 * 2**10, 2**20, 16 * 2**20]
    assert all(seconds > 0 for _, seconds in r0.allreduce_s)


def test_the_ranks_run_on_cpus_of_their_own():
    # threads=1: rank 0 is pinned to the first allowed CPU, rank 1 to the next (when there is one).
    from rigbench.frameworks.jax import devices

    allowed = sorted(os.sched_getaffinity(0))
    script = "import os; from rigbench.frameworks.jax.devices import pin_threads; pin_threads(1); " \
             "print(sorted(os.sched_getaffinity(0)))"
    contract = {"LOCAL_RANK": "1", "RANK": "1", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}
    out = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, **contract),
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [allowed[1 % len(allowed)]]
    assert devices._local_rank() == 0  # this process is no rank


def test_the_replicas_hold_identical_parameters(two_ranks):
    _, outcome = two_ranks
    r0, r1 = outcome.reports
    assert r0.param_digest and r0.param_digest == r1.param_digest
    assert r0.param_sums == r1.param_sums


def test_two_ranks_train_what_one_process_trains_on_the_global_batch(two_ranks):
    # One process (through the same launcher, world size 1) on the global batch of 2 x 16 rows
    # and two ranks on 16 rows each: the mean loss over the 32 rows has the same gradient, so
    # after the same 7 steps the parameters agree up to float32 summation order (RTOL, ATOL).
    _, outcome = two_ranks
    [alone] = launch(dp_spec(1, batch_size=2 * BATCH)).reports
    assert alone.status == "ok", alone.error
    ranks, single = np.array(outcome.reports[0].param_sums), np.array(alone.param_sums)
    assert ranks.shape == single.shape
    np.testing.assert_allclose(ranks, single, rtol=RTOL, atol=ATOL)
    # ...and the check can fail: a different batch trains different parameters.
    [other] = launch(dp_spec(1, batch_size=BATCH)).reports
    assert other.status == "ok", other.error
    assert not np.allclose(np.array(other.param_sums), single, rtol=RTOL, atol=ATOL)


def test_two_ranks_train_on_real_data_as_one_process_on_the_global_batch():
    # Each rank takes every other sample of the epoch's permutation (data/shard.py), so the two
    # ranks' step k covers the same 2B samples as one process's step k at 2B.
    def train(world_size: int, batch_size: int):
        spec = TrialSpec(workload="mlp", framework="jax", device="cpu", batch_size=batch_size, threads=1,
                         world_size=world_size, train=TrainOptions(dataset="digits", epochs=1, max_train_samples=512))
        return launch(spec).reports

    r0, r1 = train(2, BATCH)
    [alone] = train(1, 2 * BATCH)
    assert [r0.status, r1.status, alone.status] == ["ok"] * 3, [r0.error, r1.error, alone.error]
    assert r0.epochs[0].steps == r1.epochs[0].steps == alone.epochs[0].steps == 512 // (2 * BATCH)
    assert r0.loss_curve == r1.loss_curve  # the global batch's loss, replicated
    assert r0.epochs[0].accuracy == r1.epochs[0].accuracy  # identical replicas evaluate alike
    np.testing.assert_allclose(r0.loss_curve, alone.loss_curve, rtol=1e-3)


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, RIGBENCH_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-m", "rigbench", *args], capture_output=True, text=True, env=env,
                          timeout=280)


def test_the_command_line_runs_two_jax_processes_and_shows_the_ranks(tmp_path):
    db = str(tmp_path / "results.db")
    run = _cli(tmp_path, "run", "mlp", "--framework", "jax", "--processes", "2", "-d", "cpu", "--quick", "--db", db)
    assert run.returncode == 0, run.stdout + run.stderr
    [result] = Store(db, create=False).list()
    assert result.status == "ok", result.error
    assert (result.spec.framework, result.spec.world_size) == ("jax", 2)
    assert [rank.rank for rank in result.ranks] == [0, 1]
    assert result.metrics.replicas_identical is True
    shown = _cli(tmp_path, "results", "show", str(result.id), "--db", db)
    assert shown.returncode == 0, shown.stderr
    assert "its 2 ranks" in shown.stdout and "replicas_identical" in shown.stdout


@pytest.mark.parametrize("framework", ["keras-jax", "keras-torch"])
def test_a_keras_trial_of_two_processes_is_unsupported_not_a_crash(tmp_path, framework):
    pytest.importorskip("keras")
    db = str(tmp_path / "results.db")
    run = _cli(tmp_path, "run", "mlp", "--framework", framework, "--processes", "2", "-d", "cpu", "--quick",
               "--db", db)
    [result] = Store(db, create=False).list()
    assert result.status == "unsupported", (result.error, run.stderr)
    assert "data-parallel" in result.error


def _rank_pids(folder: Path, world_size: int, timeout_s: float = 120.0) -> dict[int, int]:
    """The ranks' pids from their heartbeats, once every rank has started stepping."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        beats = {}
        for rank in range(world_size):
            try:
                beats[rank] = json.loads(rank_files.progress_path(folder, rank).read_text())
            except (OSError, ValueError):
                break
        if len(beats) == world_size and all(b["steps"] > 0 for b in beats.values()):
            return {rank: b["pid"] for rank, b in beats.items()}
        time.sleep(0.2)
    raise AssertionError("the ranks never started stepping")


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.parametrize("victim", [1, 0])  # rank 0 also runs jax.distributed's coordination service
def test_a_killed_rank_makes_the_trial_a_crash_naming_it_and_leaves_no_process(victim):
    spec = dp_spec(2, min_steps=3, max_steps=100000, min_seconds=120.0, timeout_s=200.0)
    pids: dict = {}

    def on_start(agent_pid: int) -> None:
        folder = Path(psutil.Process(agent_pid).cmdline()[-1])  # rank_agent SPEC FOLDER

        def inject() -> None:
            pids.update(_rank_pids(folder, spec.world_size))
            pids["agent"] = agent_pid
            os.kill(pids[victim], signal.SIGKILL)

        threading.Thread(target=inject, daemon=True).start()

    outcome = launch(spec, on_start=on_start)
    report = outcome.report
    assert report.status == "crash", report.error
    assert report.error.startswith(f"rank {victim}: ") and "SIGKILL" in report.error
    survivor = outcome.reports[1 - victim]
    assert survivor.collateral and not outcome.reports[victim].collateral, survivor.error
    assert pids and all(_gone(pid) for pid in pids.values()), pids
