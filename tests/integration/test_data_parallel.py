"""Data-parallel torch trials for real: torch's elastic agent starts the ranks, each trains
under DistributedDataParallel (gloo), and the launcher reads one report per rank from files.

Checked against things the code does not compute itself: the merged step times against each
rank's own (per-step max), throughput against the hand formula world x batch / median, the
replicas' parameters against each other (sha256) and against one process trained on the
global batch; a killed and a stopped (hung) rank against the process table."""

import json
import os
import signal
import statistics
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

from rigbench.runner import rank_files
from rigbench.runner.assemble import build_result
from rigbench.runner.launchers import TrackerSettings, launcher_for
from rigbench.runner.launchers.agent import TorchrunLauncher
from rigbench.spec import MeasureOptions, TrialSpec

pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(300)

BATCH = 16


def dp_spec(world_size: int, batch_size: int = BATCH, **measure) -> TrialSpec:
    """An mlp trial on the CPU with a fixed number of steps (2 warm-up, 5 timed)."""
    options = dict(warmup_steps=2, warmup_seconds=0.0, min_steps=5, max_steps=5, min_seconds=0.0) | measure
    return TrialSpec(workload="mlp", device="cpu", batch_size=batch_size, threads=1, world_size=world_size,
                     measure=MeasureOptions(**options))


def launch(spec: TrialSpec, on_start=None):
    return TorchrunLauncher().launch(spec, TrackerSettings.for_spec(spec), on_start=on_start)


@pytest.fixture(scope="module")
def two_ranks():
    spec = dp_spec(2)
    return spec, launch(spec)


def test_a_torch_trial_of_two_processes_takes_the_torchrun_launcher():
    assert launcher_for(dp_spec(2)).name == "torchrun"
    assert launcher_for(dp_spec(1)).name == "process"


def test_two_ranks_report_each_and_merge_by_the_slowest(two_ranks):
    spec, outcome = two_ranks
    assert [r.status for r in outcome.reports] == ["ok", "ok"], [r.error for r in outcome.reports]
    assert [(r.rank, r.world_size) for r in outcome.reports] == [(0, 2), (1, 2)]
    r0, r1 = outcome.reports
    assert len(r0.step_times_s) == len(r1.step_times_s) == 5  # agreed, and as asked
    assert outcome.report.step_times_s == [max(a, b) for a, b in zip(r0.step_times_s, r1.step_times_s)]
    assert r0.threads == r1.threads == 1
    assert r0.host and r0.rss_peak_bytes > 0 and r0.cpu_util_pct > 0
    assert len(r0.nosync_step_times_s) == 5


def test_the_replicas_hold_identical_parameters(two_ranks):
    _, outcome = two_ranks
    r0, r1 = outcome.reports
    assert r0.param_digest and r0.param_digest == r1.param_digest
    assert r0.param_sums == r1.param_sums


def test_the_result_counts_the_global_batch_and_keeps_every_rank(two_ranks):
    spec, outcome = two_ranks
    result = build_result(spec, outcome, "run-dp")
    m, (r0, r1) = result.metrics, outcome.reports
    steps = [max(a, b) for a, b in zip(r0.step_times_s, r1.step_times_s)]
    assert m.global_batch == 2 * BATCH
    assert m.samples_per_s == pytest.approx(2 * BATCH / statistics.median(steps))
    means = [statistics.fmean(r0.step_times_s), statistics.fmean(r1.step_times_s)]
    assert m.straggler_ratio == pytest.approx(max(means) / min(means))
    nosync = [max(a, b) for a, b in zip(r0.nosync_step_times_s, r1.nosync_step_times_s)]
    assert m.comm_share == pytest.approx(1 - statistics.median(nosync) / statistics.median(steps))
    assert m.rank_rss_peak_mib_sum == pytest.approx((r0.rss_peak_bytes + r1.rss_peak_bytes) / 2**20)
    assert m.rank_rss_peak_mib_max == pytest.approx(max(r0.rss_peak_bytes, r1.rss_peak_bytes) / 2**20)
    assert m.replicas_identical is True
    assert [rank.rank for rank in result.ranks] == [0, 1]
    assert result.row()["ranks"][1]["steps"] == 5


def test_two_ranks_train_what_one_process_trains_on_the_global_batch(two_ranks):
    # One process on the global batch (2 x 16 rows) and two ranks on 16 rows each: DDP averages
    # the ranks' gradients, the mean loss over 32 rows has the same gradient, so after the same
    # 7 steps the parameters agree up to float32 summation order.
    _, outcome = two_ranks
    single = launch(dp_spec(1, batch_size=2 * BATCH))
    [report] = single.reports
    assert report.status == "ok", report.error
    ranks = np.array(outcome.reports[0].param_sums)
    alone = np.array(report.param_sums)
    assert ranks.shape == alone.shape
    np.testing.assert_allclose(ranks, alone, rtol=1e-4, atol=1e-3)
    # ...and the check can fail: a different batch trains different parameters.
    other = launch(dp_spec(1, batch_size=BATCH)).reports[0]
    assert not np.allclose(np.array(other.param_sums), alone, rtol=1e-4, atol=1e-3)


def _rank_pids(folder_holder: list, world_size: int, timeout_s: float = 120.0) -> dict[int, int]:
    """The ranks' pids from their heartbeats, once every rank has started stepping."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if folder_holder:
            beats = {}
            for rank in range(world_size):
                try:
                    beats[rank] = json.loads(rank_files.progress_path(folder_holder[0], rank).read_text())
                except (OSError, ValueError):
                    break
            if len(beats) == world_size and all(b["steps"] > 0 for b in beats.values()):
                return {rank: b["pid"] for rank, b in beats.items()}
        time.sleep(0.2)
    raise AssertionError("the ranks never started stepping")


def _fault(spec: TrialSpec, signum: int, rank: int):
    """Launch `spec`, send `signum` to `rank` once every rank steps; (outcome, every pid the
    trial had: agent and ranks)."""
    folder: list = []
    pids: dict = {}

    def on_start(agent_pid: int) -> None:
        def inject() -> None:
            agent = psutil.Process(agent_pid)
            while len(agent.cmdline()) < 2:  # right after the fork, before the exec
                time.sleep(0.05)
            folder.append(Path(agent.cmdline()[-1]))  # torchrun_agent SPEC FOLDER
            pids.update(_rank_pids(folder, spec.world_size))
            pids["agent"] = agent_pid
            os.kill(pids[rank], signum)

        threading.Thread(target=inject, daemon=True).start()

    outcome = launch(spec, on_start=on_start)
    return outcome, pids


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_killed_rank_makes_the_trial_a_crash_naming_it_and_leaves_no_process():
    spec = dp_spec(2, min_steps=3, max_steps=100000, min_seconds=120.0, timeout_s=200.0)
    outcome, pids = _fault(spec, signal.SIGKILL, rank=1)
    report = outcome.report
    assert report.status == "crash", report.error
    assert report.error.startswith("rank 1: ") and "SIGKILL" in report.error
    assert outcome.reports[0].collateral and not outcome.reports[1].collateral
    assert pids and all(_gone(pid) for pid in pids.values()), pids


def test_a_hung_rank_makes_the_trial_a_timeout_naming_it_and_leaves_no_process():
    # SIGSTOP: rank 1 stops (its heartbeat too), rank 0 waits for it in an all-reduce.
    spec = dp_spec(2, min_steps=3, max_steps=100000, min_seconds=120.0, timeout_s=25.0)
    outcome, pids = _fault(spec, signal.SIGSTOP, rank=1)
    report = outcome.report
    assert report.status == "timeout", report.error
    assert report.error.startswith("rank 1: ") and "rank 1 stopped responding" in report.error
    assert "waiting for rank 1" in outcome.reports[0].error
    assert pids and all(_gone(pid) for pid in pids.values()), pids
