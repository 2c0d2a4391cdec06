"""The launcher registry and how the session picks a launcher (no child process starts here;
tests/integration/test_isolation.py runs the "process" launcher for real)."""

import os

import pytest

from rigbench.errors import UnsupportedError, UsageError
from rigbench.runner import session
from rigbench.runner.launchers import LAUNCHERS, TrackerSettings, get_launcher, launcher_for
from rigbench.runner.launchers.base import Launcher, gpu_index_for
from rigbench.runner.launchers.process import ProcessLauncher, child_env, describe_exit
from rigbench.store import Store
from rigbench.textlimits import error_line
from tests.conftest import quick_spec


def test_registry_names_match_their_launchers():
    assert "process" in LAUNCHERS
    for name, cls in LAUNCHERS.items():
        assert issubclass(cls, Launcher) and cls.name == name


def test_unknown_launcher_lists_what_exists():
    with pytest.raises(UsageError, match=r"unknown launcher 'mpi'.*process"):
        get_launcher("mpi")


def test_world_size_one_runs_in_one_process():
    assert isinstance(launcher_for(quick_spec()), ProcessLauncher)


def test_world_size_above_one_takes_an_agent_launcher_where_the_framework_can_join():
    spec = quick_spec().model_copy(update={"world_size": 4})
    assert launcher_for(spec).name == "torchrun"  # torch: its own elastic agent


def test_a_framework_that_cannot_join_a_group_has_no_launcher():
    spec = quick_spec().model_copy(update={"world_size": 4, "framework": "keras-torch"})
    with pytest.raises(UnsupportedError, match=r"keras-torch has no data-parallel support: --processes 4 .*"
                                                r"runs on the JAX backend only"):
        launcher_for(spec)
    # across nodes the world size is not the count typed: say where it comes from
    across = spec.model_copy(update={"world_size": 2, "nodes": 2})
    with pytest.raises(UnsupportedError, match=r"support: 2 processes in all \(--processes 1 x --nnodes 2\) needs"):
        launcher_for(across)


def test_session_stores_a_trial_no_launcher_can_run_as_unsupported(tmp_path, monkeypatch):
    def no_launch(*args, **kwargs):
        raise AssertionError("nothing may be started for a trial no launcher can run")

    monkeypatch.setattr(ProcessLauncher, "launch", no_launch)
    monkeypatch.setattr(session, "launcher_for", lambda spec: (_ for _ in ()).throw(
        UnsupportedError("keras-torch has no data-parallel support")))
    store = Store(str(tmp_path / "s.db"))
    store.add_run("run1", "t", "test", {})
    spec = quick_spec().model_copy(update={"world_size": 2})
    outcome = session.run_trials([spec], store, "run1")
    assert not outcome.interrupted
    [stored] = store.list(run_id="run1")
    assert stored.status == "unsupported"
    assert stored.error == "keras-torch has no data-parallel support"
    assert stored.spec.world_size == 2


def test_session_hands_the_spec_and_its_tracker_settings_to_the_launcher(monkeypatch):
    seen = {}

    def fake_launch(self, spec, tracking, on_start=None, on_progress=None):
        seen.update(spec=spec, tracking=tracking, on_start=on_start)
        return "outcome"

    monkeypatch.setattr(ProcessLauncher, "launch", fake_launch)
    spec = quick_spec(sample_interval_s=0.25)
    callback = print
    assert session.launch_trial(spec, on_start=callback) == "outcome"
    assert seen == {"spec": spec, "tracking": TrackerSettings(interval_s=0.25, gpu_index=None),
                    "on_start": callback}


def test_gpu_index_only_for_cuda_devices():
    assert gpu_index_for("cpu") is None
    assert gpu_index_for("mps") is None


def test_child_env_sets_threads_and_parent_watchdog():
    spec = quick_spec().model_copy(update={"threads": 3})
    env = child_env(spec)
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "3"
    assert env["RIGBENCH_PARENT_PID"] == str(os.getpid())
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


def test_exit_without_report_is_a_named_crash():
    spec = quick_spec()
    killed = describe_exit(-9, "", spec)
    assert killed.status == "crash"
    assert "SIGKILL" in killed.error and "--memory-limit" in killed.error
    exited = describe_exit(2, "Traceback: boom\n", spec)
    # what it printed, then the headline last: the line every short display shows
    assert exited.error == "Traceback: boom\nthe trial's process exited with code 2 without a report"
    assert error_line(exited.error) == "the trial's process exited with code 2 without a report"
    segfault = describe_exit(-11, "Fatal Python error: Segmentation fault\n", spec)
    assert segfault.error == "Fatal Python error: Segmentation fault\nthe trial's process was killed by SIGSEGV"
    assert describe_exit(-99, "", spec).error == "the trial's process was killed by signal 99"


def test_a_native_allocation_failure_under_a_memory_cap_is_oom():
    # What a 16-core GPU machine printed when libgomp could not start its threads under the cap.
    stderr = "libgomp: Thread creation failed: Resource temporarily unavailable\n"
    capped = describe_exit(1, stderr, quick_spec(memory_limit_bytes=775 * 2**20))
    assert capped.status == "oom"
    assert "775 MiB" in capped.error and "thread stacks" in error_line(capped.error)
    assert capped.error.startswith(stderr.strip())
    uncapped = describe_exit(1, stderr, quick_spec())  # no cap: nothing says memory ran out
    assert uncapped.status == "crash"
    # glibc starting a thread (JAX's cnn under a 1 GiB cap on the dev VM), in lower case.
    tls = describe_exit(127, "cannot allocate memory for thread-local data: ABORT\n", quick_spec(memory_limit_bytes=2**30))
    assert tls.status == "oom" and "1024 MiB" in tls.error
    # A segfault stays a crash (it may be anything), but under a cap it says what it may be.
    segv = describe_exit(-11, "Fatal Python error: Segmentation fault\n", quick_spec(memory_limit_bytes=2**30))
    assert segv.status == "crash" and "try a larger limit" in error_line(segv.error)
    assert "larger limit" not in describe_exit(-11, "", quick_spec()).error


def test_warm_start_keeps_as_many_servers_as_a_twentieth_of_memory_holds(monkeypatch):
    """`scaling` interleaves thread counts (a server each): two servers restarted one for most
    of its trials. The limit is what fits in 5% of memory, by the largest running server's own
    memory, from 2 (two frameworks taking turns) to 8."""
    from types import SimpleNamespace

    from rigbench.runner.launchers import warm_start

    def machine(total_gib, servers_mib):
        monkeypatch.setattr(warm_start, "total_memory", lambda: total_gib * 2**30)
        fakes = {i: SimpleNamespace(proc=SimpleNamespace(poll=lambda: None), mib=m) for i, m in enumerate(servers_mib)}
        monkeypatch.setattr(warm_start, "_servers", fakes)
        monkeypatch.setattr(warm_start, "_unique_bytes", lambda server: server.mib * 2**20)
        return warm_start.server_limit()

    assert machine(24, [224, 100]) == 5  # the dev VM: 1.2 GiB / 224 MiB
    assert machine(24, []) == 4  # none running yet: DEFAULT_SERVER_BYTES
    assert machine(8, [224]) == 2 and machine(2, [224]) == 2  # a small machine still keeps two
    assert machine(512, [224]) == 8


@pytest.mark.parametrize("status, kept", [("ok", True), ("interrupted", True), ("crash", False)])
def test_an_interrupt_as_a_training_run_ends_keeps_the_run(monkeypatch, status, kept):
    """Ctrl-C that reached a training child as its last epoch ended got an `ok` report, which
    was dropped: every epoch lost, and the line said none had finished (2 of 10 tries of
    `train mlp --dataset digits --epochs 3 --lr 0.01,0.05` stopped about 4 s in). At a timeout,
    such a run stays `ok` rather than reading 'did not finish'."""
    from rigbench.child_report import ChildReport
    from rigbench.runner.launchers import process
    from rigbench.runner.launchers.base import Outcome
    from rigbench.spec import EpochRecord

    epoch = EpochRecord(epoch=1, steps=2, train_loss=1.0, train_seconds=0.1, eval_seconds=0.01)
    monkeypatch.setattr(process, "interrupt_for_report", lambda child: True)
    monkeypatch.setattr(ProcessLauncher, "_outcome", staticmethod(
        lambda spec, child, path, timed_out: Outcome(reports=[ChildReport(status=status, epochs=[epoch])])))
    outcome = ProcessLauncher()._finished_epochs(quick_spec(), None, None)  # type: ignore[arg-type]
    assert (outcome is not None and outcome.report.status == status) if kept else outcome is None
    if status == "ok":
        assert ProcessLauncher._timed_out_with_epochs(quick_spec(), outcome).report.status == "ok"
