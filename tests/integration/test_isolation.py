"""Every failure status produced for real in a child process, and the session going on."""

import os
import signal
import threading

import pytest

from rigbench.runner.launchers import TrackerSettings
from rigbench.runner.launchers.process import ProcessLauncher
from rigbench.runner.session import run_trials
from rigbench.store import Store
from rigbench.textlimits import error_line
from tests.conftest import quick_spec

pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(180)


def run_isolated(spec, on_start=None):
    """The "process" launcher with the trackers the spec asks for."""
    return ProcessLauncher().launch(spec, TrackerSettings.for_spec(spec), on_start=on_start)


def test_ok_trial_reports_timings_and_window():
    spec = quick_spec("mlp", batch_size=16)
    outcome = run_isolated(spec)
    [report] = outcome.reports  # one rank: its report is the trial's
    assert outcome.report == report and (report.rank, report.world_size) == (0, 1)
    assert report.status == "ok", report.error
    assert len(report.step_times_s) >= 3 and all(t > 0 for t in report.step_times_s)
    assert report.measure_start < report.measure_end
    assert report.params == 784 * 2048 + 2048 + 2 * (2048 * 2048 + 2048) + 2048 * 10 + 10
    assert report.software["torch"]
    # the roofline's traffic estimate, stored with the revision of the count that made it
    from rigbench.frameworks.torch import TRAFFIC_REVISION
    assert report.bytes_per_sample and report.bytes_estimate_revision == TRAFFIC_REVISION == 2
    assert outcome.samples, "the parent's tracker sampled the child"


def test_memory_limit_turns_allocation_into_oom():
    # catsdogs at batch 32 needs several GiB of activations; 700 MiB cannot hold them.
    spec = quick_spec("catsdogs", batch_size=32, memory_limit_bytes=700 * 2**20)
    report = run_isolated(spec).report
    assert report.status == "oom", report.error
    assert report.error


def test_nan_loss_is_diverged():
    spec = quick_spec("mlp", batch_size=16, lr=1e12)
    report = run_isolated(spec).report
    assert report.status == "diverged", (report.status, report.error)
    assert report.diverged_at_step >= 1
    assert "loss became" in report.error


def test_timeout_kills_the_child():
    spec = quick_spec("mlp", batch_size=16, min_seconds=300, timeout_s=4)
    outcome = run_isolated(spec)
    assert outcome.report.status == "timeout"
    assert "4 s" in outcome.report.error


def _kill_later(sig, delay=3.0):
    def on_start(pid):
        threading.Timer(delay, lambda: os.kill(pid, sig)).start()
    return on_start


def test_signal_is_a_crash_with_the_signal_name():
    spec = quick_spec("mlp", batch_size=16, min_seconds=300, timeout_s=120)
    report = run_isolated(spec, on_start=_kill_later(signal.SIGSEGV)).report
    assert report.status == "crash"
    assert error_line(report.error) == "the trial's process was killed by SIGSEGV"
    # faulthandler's dump: the Python stack the signal found, without the module list
    assert report.error.startswith("Fatal Python error: Segmentation fault"), report.error
    assert 'rigbench/runner/child.py", line' in report.error and "Extension modules" not in report.error


def test_session_goes_on_after_failures_and_stores_each(tmp_path):
    store = Store(str(tmp_path / "s.db"))
    store.add_run("run1", "t", "test", {})
    specs = [quick_spec("mlp", batch_size=16, lr=1e12), quick_spec("mlp", batch_size=16)]
    outcome = run_trials(specs, store, "run1")
    assert [r.status for r in outcome.results] == ["diverged", "ok"]
    stored = store.list(run_id="run1")
    assert [r.status for r in stored] == ["diverged", "ok"]
    ok = store.get(stored[1].id)
    assert ok.metrics.samples_per_s > 0 and ok.metrics.steps_measured >= 3
    assert ok.metrics.rss_peak_mib > 100  # torch alone is ~200 MiB resident
    assert ok.metrics.cpu_util_pct_mean is not None
    assert len(ok.step_times_s) == ok.metrics.steps_measured
