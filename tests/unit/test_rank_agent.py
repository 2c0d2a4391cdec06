"""The ranks launcher's agent (runner/rank_agent.py) records every failed rank, whatever ended it."""

import signal
import subprocess

from rigbench.runner.rank_agent import failures


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
