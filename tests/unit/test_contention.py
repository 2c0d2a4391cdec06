"""A busy machine (analysis/contention.py): other processes' CPU share while a trial was timed,
measured on real processes, and the `busy` flag in every place that shows a trial's speed."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from rigbench.analysis.compare import compare_results
from rigbench.analysis.contention import (
    BUSY_OTHERS_PCT,
    busy_calibration_note,
    busy_note,
    is_busy,
    shared_gpu_note,
)
from rigbench.analysis.frameworks import framework_tables
from rigbench.reports.cells import speed
from rigbench.reports.terminal import busy_lines, one_line_outcome
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.trackers.sampler import Tracker
from rigbench.trackers.summary import summarize
from tests.conftest import busy_machine


def _result(rid: int, others: float | None, run_id: str = "r1", framework: str = "torch",
            times: list[float] | None = None) -> Result:
    spec = TrialSpec(workload="mlp", framework=framework, batch_size=64)
    return Result(id=rid, run_id=run_id, created_at="2026-01-01T00:00:00+00:00", spec=spec, status="ok",
                  device_name="Test CPU", step_times_s=times or [],
                  metrics=Metrics(samples_per_s=640.0, samples_per_s_ci=(600.0, 700.0), steps_measured=10,
                                  cpu_util_pct_mean=50.0, others_cpu_pct_mean=others))


@pytest.mark.parametrize("others, busy", [(None, False), (0.0, False), (9.99, False), (BUSY_OTHERS_PCT, True),
                                          (51.0, True)])
def test_busy_from_the_threshold_up_and_never_when_not_measured(others, busy):
    assert is_busy(Metrics(others_cpu_pct_mean=others)) is busy


def test_the_note_names_the_busy_trials_and_the_share_others_took():
    quiet, one, two = _result(1, 1.5), _result(2, 49.4), _result(3, 61.2)
    assert busy_note([quiet]) is None and busy_lines([quiet]) == []
    assert busy_note([quiet, one]).startswith(
        "busy: other processes used 49% of this machine's CPU while trial 2 was timed:")
    assert busy_note([quiet, one, two]).startswith(
        "busy: other processes used 49-61% of this machine's CPU while trials 2, 3 were timed:")
    many = busy_note([_result(i, 50.0) for i in range(10, 20)] + [_result(20, 1.0)])
    assert "trials 10, 11, 12, 13, 14 and 5 more were timed" in many
    # every trial of the table: said so, not five ids and "5 more" to go looking for
    every = busy_note([_result(i, 50.0) for i in range(10, 20)])
    assert "while all 10 trials were timed" in every


def test_the_note_names_torch_only_for_torch_trials():
    assert "(torch at its own thread count" in busy_note([_result(1, 50.0)])
    for framework in ("jax", "tensorflow", "keras-jax"):
        assert "(a framework at its own thread count" in busy_note([_result(1, 50.0, framework=framework)])
    assert "(a framework at its own" in busy_note([_result(1, 50.0), _result(2, 50.0, framework="jax")])


def test_speed_cells_and_progress_lines_say_busy():
    assert speed(_result(1, 1.0)) == "640 [600–700]"
    assert speed(_result(2, 50.0)) == "640 [600–700] busy"
    assert one_line_outcome(_result(2, 50.0)).endswith("(busy: other processes used 50% of the CPU)")
    assert "busy" not in one_line_outcome(_result(1, 1.0))


def test_compare_notes_a_busy_side():
    fast, slow = [0.1] * 10, [0.2] * 10
    [pair] = compare_results([_result(1, 55.0, times=slow)], [_result(2, 0.5, "r2", times=fast)],
                             same_machine=True).pairs
    assert pair.verdict == "faster"
    assert any(n.startswith("busy machine: other processes used 55% of the CPU in A #1") for n in pair.notes)
    # repeats: one clause a side, not one a trial
    [repeats] = compare_results([_result(i, share, times=slow) for i, share in ((5, 80.0), (6, 77.0), (7, 0.5))],
                                [_result(i, 82.0, "r2", times=fast) for i in (8, 9)], same_machine=True).pairs
    assert ("busy machine: other processes used 77-80% of the CPU in A #5, #6; other processes used 82% of the "
            "CPU in B #8, #9 (a difference") in " ".join(repeats.notes)
    [quiet_pair] = compare_results([_result(3, 0.5, times=slow)], [_result(4, 0.5, "r2", times=fast)],
                                   same_machine=True).pairs
    assert not any("busy" in n for n in quiet_pair.notes)


def test_compare_frameworks_rows_name_their_busy_trials():
    [table] = framework_tables([_result(1, 52.0, framework="torch"), _result(2, 1.0, framework="jax")])
    assert {row.framework: row.busy for row in table.ours} == {"torch": [1], "jax": []}


def test_a_trial_beside_processes_that_take_every_core_is_busy():
    """Real processes: the tracked one sleeps while a spinner per logical core takes the CPU,
    so nearly all the CPU the machine used went to other processes."""
    with busy_machine(seconds=10.0):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2.0)"])
        tracker = Tracker(child.pid, interval=0.05)
        tracker.start()
        start = time.time() + 0.5  # past the child's interpreter start
        child.wait(timeout=30)
        samples = tracker.stop()
    summary = summarize(samples, start, start + 1.0, interval_slack=0.05)
    assert summary["samples_in_window"] >= 5
    assert summary["others_cpu_pct_mean"] >= 50.0  # the spinners held the cores; the child slept
    assert is_busy(Metrics(others_cpu_pct_mean=summary["others_cpu_pct_mean"]))


def test_a_busy_calibration_is_said_and_a_quiet_or_unmeasured_one_is_not():
    note = busy_calibration_note({"device": "cpu", "others_cpu_pct_mean": 51.4})
    assert note.startswith("busy: other processes used 51% of this machine's CPU while cpu was calibrated")
    assert busy_calibration_note({"device": "cpu", "others_cpu_pct_mean": 2.0}) is None
    assert busy_calibration_note({"device": "cpu"}) is None  # stored before the figure existed


def test_results_list_and_show_say_which_trials_were_busy(tmp_path):
    from typer.testing import CliRunner

    from rigbench import cli
    from rigbench.store import Store

    db = str(tmp_path / "busy.db")
    store = Store(db)
    store.add_run("r1", "2026-01-01T00:00:00+00:00", "rigbench run", {"hostname": "here"})
    busy_id = store.add_result(_result(None, 48.0).model_copy(update={"id": None}))
    quiet_id = store.add_result(_result(None, 1.0).model_copy(update={"id": None}))
    runner = CliRunner()
    listed = runner.invoke(cli.app, ["results", "list", "--db", db], env={"COLUMNS": "200"})
    assert listed.exit_code == 0, listed.output
    assert f"busy: other processes used 48% of this machine's CPU while trial {busy_id} was timed" in listed.output
    shown = runner.invoke(cli.app, ["results", "show", str(busy_id), "--db", db], env={"COLUMNS": "200"})
    assert "others_cpu_pct_mean" in shown.output and f"while trial {busy_id} was timed" in shown.output
    quiet = runner.invoke(cli.app, ["results", "show", str(quiet_id), "--db", db], env={"COLUMNS": "200"})
    assert "busy:" not in quiet.output


def test_a_gpu_another_process_held_is_named_apart_from_busy():
    alone, shared = _result(1, 1.0), _result(2, 1.0)
    alone.metrics.gpu_other_processes_max = 0.0
    shared.metrics.gpu_other_processes_max = 2.0
    assert shared_gpu_note([alone]) is None and not is_busy(shared.metrics)
    note = shared_gpu_note([alone, shared])
    assert note.startswith("shared GPU: up to 2 other processes held a context on the GPU of trial 2 while it was timed")
    assert busy_lines([alone, shared]) == [note]
    both = _result(3, 40.0)
    both.metrics.gpu_other_processes_max = 1.0
    assert [line.split(":")[0] for line in busy_lines([both])] == ["busy", "shared GPU"]


def test_a_gpu_other_processes_computed_on_is_named_with_their_share():
    """NVML's per-process utilisation says who computes, where the process list says only who
    holds memory (a tenant that computes makes the speeds the GPU's share)."""
    quiet, tenant, busy = _result(1, 1.0), _result(2, 1.0), _result(3, 1.0)
    for r, held, sm in ((quiet, 0.0, 0.0), (tenant, 1.0, 2.0), (busy, 1.0, 63.4)):
        r.metrics.gpu_other_processes_max, r.metrics.gpu_others_sm_pct_mean = held, sm
    assert shared_gpu_note([quiet]) is None
    # a tenant holding memory and hardly computing: named, and said not to matter
    assert shared_gpu_note([quiet, tenant]) == (
        "shared GPU: up to 1 other process held a context on the GPU of trial 2 while it was timed; "
        "their kernels ran under 10% of the time, so the speeds stand.")
    note = shared_gpu_note([quiet, tenant, busy])
    assert note.startswith("busy GPU: other processes' kernels ran 63% of the time on the GPU of trial 3 while it "
                           "was timed") and "Run again when the GPU is quiet" in note
    assert not is_busy(busy.metrics), "the CPU's busy flag stays the CPU's"
