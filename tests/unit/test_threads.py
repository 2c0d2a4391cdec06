"""--threads means the same in every framework (issue 23 item 8): each runs exactly the threads
asked for, above the core count too, the result records the count the framework reports once
started, a count other than the one asked for is `unsupported`, and a request above the usable
cores is a one-line warning, not an error. tests/integration/test_threads.py runs real trials."""

import logging
from types import SimpleNamespace

from rigbench.child_report import ChildReport
from rigbench.frameworks.jax import devices as jax_devices
from rigbench.runner import child, session
from rigbench.runner.launchers import Outcome
from rigbench.spec import TrialSpec
from rigbench.store import Store


def _spec(threads, framework="torch", processes=1):
    return TrialSpec(workload="mlp", batch_size=8, framework=framework, threads=threads, world_size=processes)


def test_jax_sizes_xlas_pool_to_the_threads_asked_for():
    # XLA's CPU client sizes its pool from PJRT_NPROC, else from the CPU affinity: only the
    # variable reaches above the core count.
    env = jax_devices.environment(_spec(64, "jax"))
    assert env["PJRT_NPROC"] == "64" and env["OMP_NUM_THREADS"] == "64"
    assert "PJRT_NPROC" not in jax_devices.environment(_spec(None, "jax"))


def test_a_thread_count_other_than_the_one_asked_for_is_unsupported(monkeypatch):
    fake = SimpleNamespace(NAME="fake", environment=lambda spec: {}, prepare=lambda threads: None,
                           software=lambda: {"fake": "1", "num_threads": 2}, count=lambda w, o: (1, 1.0),
                           build=lambda spec, w: SimpleNamespace(device_name="cpu"), is_oom=lambda exc: False)
    monkeypatch.setattr(child, "load_adapter", lambda name: fake)
    report = child.run_trial(_spec(64))
    assert report.status == "unsupported"
    assert report.error == "--threads 64: torch runs 2 threads here, not the count asked for"
    assert report.threads == 2


def test_a_request_above_the_cores_is_a_warning_naming_it():
    assert session.oversubscription([_spec(None), _spec(2)], cores=2) is None
    assert session.oversubscription([_spec(4), _spec(3), _spec(4, "jax")], cores=2) == (
        "--threads 3, 4 is more than the 2 CPUs this process may use: the threads share them "
        "(oversubscribed), and the results measure that")
    assert "--threads 2 x 2 processes is more than the 2 CPUs" in session.oversubscription([_spec(2, processes=2)], 2)
    assert session.oversubscription([_spec(64)], cores=None) is None  # unknown: no guess


def test_run_trials_warns_once_before_the_first_trial(tmp_path, monkeypatch, caplog):
    store = Store(str(tmp_path / "w.db"))
    store.add_run("r1", "2026-01-01T00:00:00+00:00", "test", {})
    monkeypatch.setattr(session, "usable_cores", lambda: 2)
    monkeypatch.setattr(session, "launch_trial", lambda spec, on_start=None, on_progress=None: Outcome(
        reports=[ChildReport(status="unsupported", error="not here")]))
    with caplog.at_level(logging.WARNING, logger="rigbench.runner"):
        session.run_trials([_spec(4), _spec(4, "jax")], store, "r1")
    assert [r.getMessage() for r in caplog.records] == [
        "rigbench: warning: --threads 4 is more than the 2 CPUs this process may use: the threads share them "
        "(oversubscribed), and the results measure that"]
    assert [r.status for r in store.list()] == ["unsupported", "unsupported"]


