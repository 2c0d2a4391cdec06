"""The data-parallel rules that need no process: a rank's place from the launch contract, who
held a timed-out trial up, which rank a failed trial is blamed on, and the per-rank figures
against hand numbers."""

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from rigbench.analysis.ranks import all_reduce_table, bus_bandwidth, comm_share, rank_metrics, rank_record
from rigbench.child_report import ChildReport
from rigbench.errors import UsageError
from rigbench.ranks import RankInfo
from rigbench.runner import rank_files
from rigbench.runner.launchers.agent import threads_per_rank, usable_cores
from rigbench.runner.launchers.merge import merge_reports
from rigbench.runner.launchers.rank_outcome import (
    STALL_CPU_S,
    Beat,
    Stalls,
    cpu_seconds,
    frozen,
    holding_up,
    rank_reports,
)
from rigbench.spec import MeasureOptions, TrialSpec
from rigbench.textlimits import error_line

ENV = {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2",
       "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}


def spec(world_size=2, threads=None, timeout_s=30.0):
    return TrialSpec(workload="mlp", batch_size=8, world_size=world_size, threads=threads,
                     measure=MeasureOptions(timeout_s=timeout_s))


def test_a_rank_reads_its_place_from_torchruns_variables():
    assert RankInfo.from_env(ENV) == RankInfo(3, 1, 4, 2, "10.0.0.1", 29500)


@pytest.mark.parametrize("change, says", [
    ({"RANK": ""}, "RANK unset"),
    ({"WORLD_SIZE": "four"}, "must be integers"),
    ({"RANK": "4"}, "out of range"),
])
def test_a_broken_contract_is_a_usage_error_naming_it(change, says):
    with pytest.raises(UsageError, match=says):
        RankInfo.from_env(ENV | change)


def test_threads_per_rank_share_the_cores_unless_asked():
    assert threads_per_rank(spec(world_size=2, threads=3)) == 3
    assert threads_per_rank(spec(world_size=2)) == max(1, usable_cores() // 2)
    assert threads_per_rank(spec(world_size=10_000)) == 1


def test_a_silent_heartbeat_names_the_rank_that_held_the_others_up():
    now = 1000.0
    beats = {0: Beat(steps=13, at=now - 0.1), 1: Beat(steps=12, at=now - 30.0)}
    assert holding_up(beats, now) == [1]
    # every heartbeat fresh: the rank behind on steps; all even: every rank
    assert holding_up({0: Beat(13, now), 1: Beat(12, now)}, now) == [1]
    assert holding_up({0: Beat(13, now), 1: Beat(13, now)}, now) == [0, 1]
    assert holding_up({0: Beat(13, now), 1: None}, now) == [1]  # never started


def test_timed_out_ranks_are_reported_with_the_culprit_first(tmp_path):
    now = 1000.0
    for rank, beat in ((0, {"pid": 1, "steps": 5, "at": now}), (1, {"pid": 2, "steps": 5, "at": now - 9})):
        rank_files.progress_path(tmp_path, rank).write_text(json.dumps(beat))
    reports = rank_reports(tmp_path, spec(), timed_out=True, stopped_at=now)
    assert [r.status for r in reports] == ["timeout", "timeout"]
    assert reports[0].collateral and "waiting for rank 1" in reports[0].error
    assert "rank 1 stopped responding 9.0 s before the deadline, at step 5" in reports[1].error
    assert error_line(merge_reports(reports).error).startswith("rank 1: ")


def test_a_heartbeat_that_stands_still_for_stall_s_by_the_monotonic_clock_is_a_stall(tmp_path, monkeypatch):
    clock = [500.0]
    monkeypatch.setattr("rigbench.runner.launchers.rank_outcome.time.monotonic", lambda: clock[0])

    def beat(rank: int, at: float) -> None:  # no pid: the stillness alone (whether it froze: next test)
        rank_files.progress_path(tmp_path, rank).write_text(json.dumps({"steps": 3, "at": at}))

    stalls = Stalls(tmp_path, spec(world_size=3))
    beat(0, 1.0)
    beat(1, 1.0)  # rank 2 has not beaten yet: not started, never a stall (the timeout's to judge)
    assert stalls.ranks() == []
    clock[0] += rank_files.STALL_S - 1
    beat(0, 2.0)
    assert stalls.ranks() == []
    clock[0] += 1  # rank 1's beat unchanged for STALL_S, rank 0's new a second ago
    assert stalls.ranks() == [1]
    beat(1, 9e9)  # its own clock's time does not matter, only that it moved
    assert stalls.ranks() == []
    clock[0] += rank_files.STALL_S
    rank_files.report_path(tmp_path, 0).write_text("{}")  # finished: its heartbeat may stop
    assert stalls.ranks() == [1]


def test_a_still_heartbeat_is_a_stall_only_where_its_process_stopped_or_computes_nothing():
    """A rank that computes without beating (a long call holding the interpreter, a heartbeat a
    full disk cannot write) is left to the timeout; a stopped, gone or idle one froze."""
    spinning = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        cpu_then = {p.pid: cpu_seconds(p.pid) for p in (spinning, idle)}
        deadline = time.monotonic() + 60
        while cpu_seconds(spinning.pid) - cpu_then[spinning.pid] < 2 * STALL_CPU_S:  # by CPU, not by the clock
            assert time.monotonic() < deadline, "the spinning process got no CPU"
            time.sleep(0.05)
        assert not frozen(spinning.pid, cpu_then[spinning.pid])
        assert frozen(idle.pid, cpu_then[idle.pid])
        os.kill(spinning.pid, signal.SIGSTOP)
        while psutil.Process(spinning.pid).status() != psutil.STATUS_STOPPED:  # the signal is delivered later
            assert time.monotonic() < deadline, "SIGSTOP did not stop the process"
            time.sleep(0.01)
        assert frozen(spinning.pid, cpu_seconds(spinning.pid) - 10 * STALL_CPU_S)  # stopped, whatever it used
    finally:
        for p in (spinning, idle):
            p.kill()
            p.wait()
    assert frozen(spinning.pid, 0.0)  # gone
    assert frozen(None, None)  # no pid in the beat: its stillness alone


def test_a_trial_stopped_for_a_stall_says_so_not_that_it_ran_out_of_time(tmp_path):
    now = 1000.0
    for rank, beat in ((0, {"pid": 1, "steps": 5, "at": now}), (1, {"pid": 2, "steps": 5, "at": now - 61})):
        rank_files.progress_path(tmp_path, rank).write_text(json.dumps(beat))
    r0, r1 = rank_reports(tmp_path, spec(timeout_s=600.0), timed_out=True, stopped_at=now, stalled=True)
    assert (r0.status, r1.status) == ("timeout", "timeout") and r0.collateral and not r1.collateral
    assert r1.error.startswith(f"the trial was stopped {rank_files.STALL_S:g} s after a rank stopped responding, "
                               "before its 600 s timeout (--timeout): rank 1 stopped responding 61.0 s before it "
                               "was stopped, at step 5")


def test_the_first_failure_the_agent_saw_is_the_cause(tmp_path):
    (tmp_path / "agent.json").write_text(json.dumps(
        {"first": 1, "failures": {"0": {"exitcode": -15, "signal": "SIGTERM"}, "1": {"exitcode": -11}}}))
    rank_files.stderr_path(tmp_path, 1).write_text("Fatal Python error: Segmentation fault\n")
    r0, r1 = rank_reports(tmp_path, spec(), timed_out=False, stopped_at=0.0)
    assert r0.collateral and "after rank 1 failed" in r0.error
    assert r1.status == "crash" and "SIGSEGV" in r1.error and "Segmentation fault" in r1.error
    # the headline, last (what the short displays show), names the rank and the signal
    assert error_line(merge_reports([r0, r1]).error) == "rank 1: the trial's process was killed by SIGSEGV"


def test_a_rank_that_left_nothing_is_a_crash_with_its_stderr(tmp_path):
    rank_files.report_path(tmp_path, 0).write_text(ChildReport(status="ok", world_size=2).model_dump_json())
    rank_files.stderr_path(tmp_path, 1).write_text("boom\n")
    r0, r1 = rank_reports(tmp_path, spec(), timed_out=False, stopped_at=0.0)
    assert r0.status == "ok" and r1.status == "crash" and r1.rank == 1 and "boom" in r1.error


def test_across_nodes_a_failure_seen_here_is_the_cause_before_a_report_that_did_not_come(tmp_path):
    two_nodes = spec().model_copy(update={"nodes": 2})
    # Rank 1 ran here and was killed; rank 0 ran on the other node, and its report never came
    # (this node's gathering rank was the one killed).
    (tmp_path / "agent.json").write_text(json.dumps({"first": 1, "failures": {"1": {"exitcode": -9}}}))
    r0, r1 = rank_reports(tmp_path, two_nodes, timed_out=False, stopped_at=0.0)
    assert "no report from this rank reached node 0" in r0.error and r0.collateral
    assert error_line(merge_reports([r0, r1]).error).startswith("rank 1: the trial's process was killed by SIGKILL")
    # Rank 0 ran here and failed because its peer went away: the remote rank is the cause.
    (tmp_path / "agent.json").unlink()
    rank_files.report_path(tmp_path, 0).write_text(ChildReport(
        status="crash", error="Connection closed by peer", collateral=True, world_size=2).model_dump_json())
    rank_files.stderr_path(tmp_path, 0).write_text("")
    r0, r1 = rank_reports(tmp_path, two_nodes, timed_out=False, stopped_at=0.0)
    assert not r1.collateral and error_line(merge_reports([r0, r1]).error).startswith(
        "rank 1: no report from this rank reached node 0")


def test_collateral_failures_are_passed_over_unless_alone():
    cause = ChildReport(status="oom", error="out of memory", rank=1, world_size=2)
    peer = ChildReport(status="crash", error="Connection closed by peer", rank=0, world_size=2, collateral=True)
    assert merge_reports([peer, cause]).status == "oom"
    alone = merge_reports([peer, ChildReport(status="ok", rank=1, world_size=2)])
    assert alone.status == "crash" and error_line(alone.error).startswith("rank 0: ")


def _rank(rank, times, nosync, rss, digest="d"):
    return ChildReport(status="ok", rank=rank, world_size=2, step_times_s=times, nosync_step_times_s=nosync,
                       rss_peak_bytes=rss, param_digest=digest)


def test_rank_metrics_by_hand():
    # per-step max: [0.3, 0.2, 0.4] (median 0.3); no-sync per-step max: [0.2, 0.25, 0.15] (median 0.2)
    a = _rank(0, [0.1, 0.2, 0.4], [0.2, 0.1, 0.15], 100 * 2**20)
    b = _rank(1, [0.3, 0.1, 0.2], [0.1, 0.25, 0.1], 300 * 2**20)
    m = rank_metrics([a, b])
    assert m["straggler_ratio"] == pytest.approx((0.7 / 3) / (0.6 / 3))
    assert m["comm_share"] == pytest.approx(1 - 0.2 / 0.3)
    assert m["nosync_step_time_ms_median"] == pytest.approx(200.0)
    assert (m["rank_rss_peak_mib_max"], m["rank_rss_peak_mib_sum"]) == (300.0, 400.0)
    assert m["replicas_identical"] is True
    assert rank_metrics([a, b.model_copy(update={"param_digest": "e"})])["replicas_identical"] is False
    alone = rank_metrics([a])  # --data-parallel with one rank: its own wrapper's cost, nothing to compare
    assert alone["comm_share"] == pytest.approx(1 - 0.15 / 0.2) and alone["rank_rss_peak_mib_sum"] == 100.0
    assert alone["straggler_ratio"] is None and alone["replicas_identical"] is None
    assert rank_metrics([]) == {}


def test_a_rank_record_keeps_its_own_figures():
    record = rank_record(_rank(1, [0.1, 0.3], [0.1, 0.1], 2**20).model_copy(
        update={"error": "Traceback (most recent call last):\nRuntimeError: boom", "status": "crash"}))
    # the headline: a traceback's exception is its last line
    assert (record.rank, record.steps, record.status, record.error) == (1, 2, "crash", "RuntimeError: boom")
    assert record.step_time_ms_mean == pytest.approx(200.0)
    assert record.comm_share == pytest.approx(1 - 0.1 / 0.2)
    assert record.rss_peak_mib == 1.0
    assert comm_share([], [0.1]) is None


def test_all_reduce_bus_bandwidth_is_nccl_tests_formula():
    # 2 ranks, 1 MB in 1 ms: algbw 1 GB/s, busbw = 1 GB/s x 2(2-1)/2 = 1 GB/s; 4 ranks: x 1.5
    assert bus_bandwidth(10**6, 1e-3, 2) == pytest.approx(1e9)
    assert bus_bandwidth(10**6, 1e-3, 4) == pytest.approx(1.5e9)
    params = 1000  # 4000 gradient bytes
    a = ChildReport(status="ok", rank=0, world_size=2, params=params, allreduce_s=[(4000, 0.001), (2**20, 0.004)])
    b = ChildReport(status="ok", rank=1, world_size=2, params=params, allreduce_s=[(4000, 0.002), (2**20, 0.003)])
    assert all_reduce_table([a, b]) == [(4000, 0.002, pytest.approx(2e6)), (2**20, 0.004, pytest.approx(2**20 / 0.004))]
    m = rank_metrics([a, b])
    assert m["allreduce_latency_us"] == pytest.approx(2000.0)
    assert m["allreduce_grad_ms"] == pytest.approx(2.0)
    assert m["allreduce_busbw_gbs"] == pytest.approx(2e6 / 1e9)


def test_a_node_other_than_0_prints_why_its_own_ranks_failed():
    from rigbench.runner.launchers import Outcome
    from rigbench.runner.session import local_failures

    two_nodes = spec(world_size=4).model_copy(update={"nodes": 2})
    reports = [ChildReport(status="crash", error="no report from this rank reached node 0", rank=0, world_size=4),
               ChildReport(status="ok", rank=1, world_size=4),
               ChildReport(status="crash", error="Traceback ...\nRuntimeError: Connection reset by peer", rank=2,
                           world_size=4, collateral=True),
               ChildReport(status="crash", error="what it printed last\nthe trial's process was killed by SIGKILL",
                           rank=3, world_size=4)]
    lines = local_failures(two_nodes, Outcome(reports=reports, ran_here=[1, 2, 3]), node_rank=1)
    # the cause's stderr tail under its line (node 0 never sees it), not a collateral rank's
    assert lines == ["node 1: mlp torch cpu b8 fp32 x4 rank 2: crash: RuntimeError: Connection reset by peer",
                     "node 1: mlp torch cpu b8 fp32 x4 rank 3: crash: the trial's process was killed by SIGKILL\n"
                     "  what it printed last"]
    # a native abort: what the library said before faulthandler's dump, then its first line,
    # not the threads' stacks (JAX's rank on node 1 when node 0 went away: only stacks were shown)
    from rigbench.runner.launchers.crash_output import fitted_tail
    from tests.unit.test_crash_output import DUMP, JAX_ABORT
    aborted = ChildReport(status="crash", rank=1, world_size=2,
                          error=fitted_tail(JAX_ABORT + DUMP) + "\nthe trial's process was killed by SIGABRT")
    [said] = local_failures(spec(world_size=2).model_copy(update={"nodes": 2}),
                            Outcome(reports=[ChildReport(status="ok", rank=0, world_size=2), aborted], ran_here=[1]),
                            node_rank=1)
    assert said.endswith('grpc_message:"Socket closed"}\n  Fatal Python error: Aborted'), said
    assert "detected fatal errors" in said and "Thread 0x" not in said and "0x7fd9" not in said
    refused = Outcome(reports=[ChildReport(status="unsupported", error="tensorflow has no multi-node launch")])
    assert local_failures(two_nodes, refused, node_rank=1) == [
        "node 1: mlp torch cpu b8 fp32 x4: unsupported: tensorflow has no multi-node launch"]


def test_node_flags_are_checked_before_anything_runs():
    import socket

    from rigbench.experiments.plan import node_launch
    from rigbench.ranks import NodeLaunch

    with pytest.raises(UsageError, match="^--nnodes must be at least 1$"):
        node_launch(0, 0, None)
    with pytest.raises(UsageError, match="the host nosuchhost.invalid does not resolve on this machine"):
        node_launch(2, 1, "nosuchhost.invalid:29500")
    assert node_launch(1, 0, "10.0.0.1:29500") == NodeLaunch(0)  # one node: ignored (the CLI says so)
    with socket.socket() as taken:  # another program listens at node 0's port
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError, match=f"127.0.0.1:{port}: port {port} is in use on this machine"):
            node_launch(2, 0, f"127.0.0.1:{port}")
        assert node_launch(2, 1, f"127.0.0.1:{port}") == NodeLaunch(1, f"127.0.0.1:{port}")  # node 1 only connects


def _two_nodes_on(monkeypatch, node_rank):
    from rigbench.ranks import NODE_RANK_VAR, RDZV_ENDPOINT_VAR

    monkeypatch.setenv(NODE_RANK_VAR, str(node_rank))
    monkeypatch.setenv(RDZV_ENDPOINT_VAR, "10.0.0.1:29500")
    return spec(world_size=4).model_copy(update={"nodes": 2})


def test_a_node_where_no_rank_started_prints_its_own_failure_with_the_agents_stderr(tmp_path, monkeypatch):
    from rigbench.runner.launchers import Outcome
    from rigbench.runner.launchers.rank_outcome import ran_here
    from rigbench.runner.session import local_failures

    two_nodes = _two_nodes_on(monkeypatch, 1)
    said = "[c10d] The client socket has failed to connect to [10.0.0.1]:29500 (errno: 111 - Connection refused)."
    rank_files.agent_stderr_path(tmp_path).write_text(said + "\n")
    # torch's agent waited at its rendezvous past the timeout: no rank ran here, and its ranks
    # are the ones this node was to start, not "another node's"
    reports = rank_reports(tmp_path, two_nodes, timed_out=True, stopped_at=0.0)
    assert ran_here(tmp_path, two_nodes) == [2, 3]
    assert local_failures(two_nodes, Outcome(reports=reports, ran_here=ran_here(tmp_path, two_nodes)), 1) == [
        "node 1: mlp torch cpu b8 fp32 x4 ranks 2, 3: timeout: no rank started on node 1 within 30 s (--timeout): "
        f"torch's agent waits at its rendezvous, 10.0.0.1:29500, for all 2 nodes\n  {said}"]


def test_on_node_0_an_agent_that_started_no_rank_is_the_cause_not_another_node(tmp_path, monkeypatch):
    two_nodes = _two_nodes_on(monkeypatch, 0)
    # torch's agent: a chain of exceptions, the cause first; the frames of the last would fill the tail
    frame = '  File "/venv/torch/distributed/launcher/api.py", line 343, in launch_agent\n    store = create()\n'
    rank_files.agent_stderr_path(tmp_path).write_text(
        "Traceback (most recent call last):\n" + frame * 3 +
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
        "address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use\n\n"
        "The above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n" + frame * 40 +
        "RendezvousConnectionError: The connection to the C10d store has failed. See inner exception for details.\n")
    reports = rank_reports(tmp_path, two_nodes, timed_out=False, stopped_at=0.0, returncode=1)
    trial = merge_reports(reports)
    assert error_line(trial.error) == "rank 0: no rank started on node 0: the launch agent exited with code 1 first"
    assert "EADDRINUSE" in trial.error and "RendezvousConnectionError" in trial.error
    assert "launch_agent" not in trial.error and "another node" not in trial.error
    assert [r.collateral for r in reports] == [False, True, True, True]
    assert reports[2].error == "no report from this rank: no rank started on node 0"


def test_more_ranks_than_cores_or_memory_are_said_before_any_trial():
    from rigbench.runner.launchers.agent import threads_per_rank_line
    from rigbench.runner.session import RANK_FLOOR_BYTES, oversubscription, per_rank_memory_cap, ranks_beyond_memory

    # threads left to the default: 1 each for 4 ranks on 2 cores is oversubscribed too
    assert oversubscription([spec(world_size=4)], cores=2) == (
        "--processes 4 is more ranks than the 2 CPUs this process may use, at 1 thread each: the threads share "
        "them (oversubscribed), and the results measure that")
    assert oversubscription([spec(world_size=2)], cores=2) is None
    line = threads_per_rank_line(spec(world_size=10_000))
    assert line.startswith("threads per rank: 1 (10000 ranks, more than the ") and "shared out" not in line
    # memory: a coarse floor per rank; one process is never refused
    assert ranks_beyond_memory([spec(world_size=4)], 4 * RANK_FLOOR_BYTES) is None
    assert ranks_beyond_memory([spec(world_size=1)], 0) is None
    assert ranks_beyond_memory([spec(world_size=100)], 10 * RANK_FLOOR_BYTES) == (
        "--processes 100 cannot fit in this machine's memory: each rank takes at least 256.0 MiB (its framework, "
        "imported), and 2.5 GiB is available, room for 10; use fewer processes")
    # across nodes only this machine's ranks count
    assert ranks_beyond_memory([spec(world_size=20).model_copy(update={"nodes": 2})], 10 * RANK_FLOOR_BYTES) is None
    capped = spec(world_size=2).model_copy(update={"measure": MeasureOptions(memory_limit_bytes=700 * 2**20)})
    assert per_rank_memory_cap([capped]) == (
        "--memory-limit caps each rank's process, not the trial: in all, 2 x 700.0 MiB = 1.4 GiB on this machine")
    assert per_rank_memory_cap([capped.model_copy(update={"world_size": 1})]) is None


def test_a_data_parallel_label_shows_its_world_size():
    assert spec(world_size=1).label() == "mlp torch cpu b8 fp32"
    assert spec(world_size=2, threads=1).label() == "mlp torch cpu b8 fp32 t1 x2"
    assert spec(world_size=1).model_copy(update={"data_parallel": True}).label() == "mlp torch cpu b8 fp32 x1"


def test_ranks_take_the_gpus_from_the_first_so_another_start_is_refused():
    """Rank k trains on cuda:k in every framework: `-d cuda:1 --processes 2` would train on
    cuda:0 and cuda:1 while the trackers watched cuda:1 (found reading the code; no GPU here)."""
    from rigbench.experiments.plan import check_rank_devices

    def spec_on(device, **fields):
        return TrialSpec(workload="mlp", device=device, batch_size=8, **fields)

    check_rank_devices([spec_on("cuda:0", world_size=2), spec_on("cpu", world_size=2), spec_on("cuda:1")])
    for fields in ({"world_size": 2}, {"data_parallel": True}):
        with pytest.raises(UsageError, match="give -d cuda and choose the GPUs with CUDA_VISIBLE_DEVICES"):
            check_rank_devices([spec_on("cuda:1", **fields)])
