"""The ranks launcher's agent (runner/rank_agent.py) records every failed rank, whatever ended it."""

import signal
import subprocess
import sys

from rigbench.runner.rank_agent import _first_failure, failures, first_failed


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
