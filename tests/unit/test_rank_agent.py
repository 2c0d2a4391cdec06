"""The ranks launcher's agent (runner/rank_agent.py) records every failed rank, whatever ended it."""

import signal
import subprocess
import sys

import pytest

from rigbench.ranks import NodeLaunch, RankInfo
from rigbench.runner.rank_agent import _first_failure, contract_env, failures, first_failed, node_ranks
from rigbench.spec import TrialSpec


def test_failures_name_each_failed_ranks_signal_even_one_python_does_not_name():
    realtime = signal.SIGRTMIN + 6  # no name in signal.Signals: it used to raise there
    procs = [subprocess.Popen(["sleep", "60"]) for _ in range(3)] + [subprocess.Popen(["true"])]
    procs[0].send_signal(signal.SIGKILL)
    procs[2].send_signal(realtime)
    procs[1].terminate()
    for proc in procs:
        proc.wait(timeout=30)
    assert failures(procs) == {
        "0": {"exitcode": -signal.SIGKILL, "signal": "SIGKILL"},
        "1": {"exitcode": -signal.SIGTERM, "signal": "SIGTERM"},
        "2": {"exitcode": -realtime, "signal": f"signal {int(realtime)}"},
    }


def test_a_rank_a_signal_ended_is_the_first_failure_over_a_peer_that_exited_after_it():
    # CI once saw both at one look: rank 1 SIGKILLed, rank 0's all-reduce then failing (exit 1);
    # rank 0 was named, and the trial blamed the survivor.
    procs = [subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"]), subprocess.Popen(["sleep", "60"]),
             subprocess.Popen(["true"])]
    procs[1].send_signal(signal.SIGKILL)
    for proc in procs:
        proc.wait(timeout=30)
    assert _first_failure(procs) == 1
    assert first_failed([1, None, 0]) == 0  # alone, an error exit is the first failure
    assert first_failed([None, 1, -signal.SIGTERM]) == 2
    assert first_failed([0, None]) is None


def test_a_node_of_a_multi_node_trial_starts_its_share_of_the_global_ranks_at_the_endpoint():
    spec = TrialSpec(workload="mlp", framework="jax", batch_size=8, world_size=4, nodes=2)
    ranks, shared = node_ranks(spec, NodeLaunch(node_rank=1, endpoint="10.0.0.1:29500"))
    assert ranks == [2, 3] and shared == {"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}
    env = contract_env(3, 4, 29500, (1, 2), "10.0.0.1")
    assert RankInfo.from_env(env) == RankInfo(3, 1, 4, 2, "10.0.0.1", 29500)
    one_node, shared = node_ranks(spec.model_copy(update={"nodes": 1}), NodeLaunch())
    assert one_node == [0, 1, 2, 3] and shared["MASTER_ADDR"] == "127.0.0.1" and int(shared["MASTER_PORT"]) > 0


def test_failures_are_keyed_by_global_rank():
    procs = [subprocess.Popen(["true"]), subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])]
    for proc in procs:
        proc.wait(timeout=30)
    assert failures(procs, [6, 7]) == {"7": {"exitcode": 3, "signal": None}}


def test_every_data_parallel_framework_but_torch_runs_its_nodes_under_rigbenchs_agent():
    from rigbench.runner.launchers import launcher_for

    for framework in ("jax", "keras-jax", "tensorflow"):
        spec = TrialSpec(workload="mlp", framework=framework, batch_size=8, world_size=2, nodes=2)
        assert launcher_for(spec).name == "ranks"
    assert launcher_for(TrialSpec(workload="mlp", batch_size=8, world_size=2, nodes=2)).name == "torchrun"


def test_one_process_runs_under_the_wrapper_only_when_asked_and_is_then_another_configuration():
    from rigbench.errors import UnsupportedError
    from rigbench.runner.launchers import launcher_for

    plain = TrialSpec(workload="mlp", batch_size=8)
    wrapped = plain.model_copy(update={"data_parallel": True})
    assert (launcher_for(plain).name, launcher_for(wrapped).name) == ("process", "torchrun")
    assert launcher_for(wrapped.model_copy(update={"framework": "jax"})).name == "ranks"
    assert plain.config_key() != wrapped.config_key()
    many = plain.model_copy(update={"world_size": 2})  # many ranks always are, whatever the field says
    assert many.is_data_parallel and many.config_key() == many.model_copy(update={"data_parallel": True}).config_key()
    with pytest.raises(UnsupportedError, match="--data-parallel needs a framework that trains data-parallel"):
        launcher_for(TrialSpec(workload="mlp", framework="keras-torch", batch_size=8, data_parallel=True))
