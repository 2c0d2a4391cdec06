"""Data-parallel torch trials for real: torch's elastic agent starts the ranks, each trains
under DistributedDataParallel (gloo), and the launcher reads one report per rank from files.

Checked against things the code does not compute itself: the merged step times against each
rank's own (per-step max), throughput against the hand formula world x batch / median, the
replicas' parameters against each other (sha256) and against one plain process trained on
the global batch (tests/data_parallel.py); a killed and a stopped (hung) rank against the process table."""

import signal
import statistics

import pytest

from rigbench.runner import rank_files
from rigbench.runner.assemble import build_result
from rigbench.runner.launchers import launcher_for
from rigbench.textlimits import error_line
from tests.data_parallel import (
    BATCH,
    check_equals_one_process_on_the_global_batch,
    check_two_ranks_agree,
    dp_spec,
    gone,
    launch,
    signal_rank_when_stepping,
)

pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(300)

#: One process on 2B rows and two on B rows each differ only in float32 summation order (DDP
#: averages two partial gradients); after 7 SGD-momentum steps of mlp that is far inside these
#: bounds on per-tensor sums, while a different batch is far outside them.
RTOL, ATOL = 1e-4, 1e-3


@pytest.fixture(scope="module")
def temporary_folder(tmp_path_factory):
    """The TMPDIR the module's two-rank trial ran under, to look at what it left there."""
    return tmp_path_factory.mktemp("tmpdir")


#: What a rank of a speed trial says as it enters each part (runner/rank.py, runner/protocol.py),
#: in order: the launcher hands on the first rank's.
RANK_PHASES = ("starting torch, joining the group of 2 processes", "all-reduce check", "building the model",
               "first step", "warm-up (the first step took ", "timing: 5 steps, about ",
               "the same steps without gradient synchronisation")


@pytest.fixture(scope="module")
def two_ranks(temporary_folder):
    spec = dp_spec(2)
    heard: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", str(temporary_folder))  # the agent and its ranks inherit it
        patch.setattr("rigbench.runner.launchers.progress_watch.PROGRESS_POLL_S", 0.02)  # to hear most phases
        outcome = launch(spec, on_progress=heard.append)
    return spec, outcome, heard


def test_the_launcher_hands_on_the_phases_of_the_first_rank_in_order(two_ranks):
    *_, heard = two_ranks
    places = [next((i for i, phase in enumerate(RANK_PHASES) if text.startswith(phase)), None) for text in heard]
    assert heard and None not in places and places == sorted(places), heard


def test_a_torch_trial_of_two_processes_takes_the_torchrun_launcher():
    assert launcher_for(dp_spec(2)).name == "torchrun"
    assert launcher_for(dp_spec(1)).name == "process"


def test_two_ranks_agree_and_hold_identical_replicas(two_ranks):
    _, outcome, _ = two_ranks
    check_two_ranks_agree(outcome)
    r0, r1 = outcome.reports
    assert r0.threads == r1.threads == 1
    assert r0.host and r0.rss_peak_bytes > 0 and r0.cpu_util_pct > 0


def test_the_result_counts_the_global_batch_and_keeps_every_rank(two_ranks):
    spec, outcome, _ = two_ranks
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


def test_the_trial_leaves_nothing_in_the_temporary_directory(two_ranks, temporary_folder):
    """torch's elastic agent makes a torchelastic_* log folder there unless told where to log."""
    assert sorted(path.name for path in temporary_folder.iterdir()) == []


def test_two_ranks_train_what_one_process_trains_on_the_global_batch(two_ranks):
    check_equals_one_process_on_the_global_batch(two_ranks[1], "torch", RTOL, ATOL)


def test_a_killed_rank_makes_the_trial_a_crash_naming_it_and_leaves_no_process():
    spec = dp_spec(2, min_steps=3, max_steps=100000, min_seconds=120.0, timeout_s=200.0)
    outcome, signalled = signal_rank_when_stepping(spec, signal.SIGKILL, rank=1)
    signalled.check_sent(outcome)
    report = outcome.report
    assert report.status == "crash", report.error
    assert error_line(report.error).startswith("rank 1: ") and "SIGKILL" in report.error
    assert outcome.reports[0].collateral and not outcome.reports[1].collateral
    assert all(gone(pid) for pid in signalled.pids.values()), signalled.pids


def test_a_hung_rank_makes_the_trial_a_timeout_naming_it_and_leaves_no_process(monkeypatch):
    # SIGSTOP: rank 1 stops (its heartbeat too), rank 0 waits for it in an all-reduce, and the
    # launcher ends the trial once rank 1's heartbeat has stood still for STALL_S (3 s here, 60 by
    # default), long before the timeout. 40 s: the ranks step 5-8 s after the start here, but on
    # CI's loaded 2-core VM they had not started after 16 s (three torch processes importing
    # beside other tests' frameworks), and a trial that never stepped would time out instead.
    monkeypatch.setattr(rank_files, "STALL_S", 3.0)
    spec = dp_spec(2, min_steps=3, max_steps=100000, min_seconds=120.0, timeout_s=40.0)
    outcome, signalled = signal_rank_when_stepping(spec, signal.SIGSTOP, rank=1)
    signalled.check_sent(outcome)
    report = outcome.report
    assert report.status == "timeout", report.error
    assert error_line(report.error).startswith("rank 1: the trial was stopped 3 s after a rank stopped responding")
    assert "rank 1 stopped responding" in report.error
    assert "waiting for rank 1" in outcome.reports[0].error
    assert all(gone(pid) for pid in signalled.pids.values()), signalled.pids
