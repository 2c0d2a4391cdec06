"""`python -m rigbench.runner.rank_agent SPEC FOLDER`: the agent of the "ranks" launcher, for
engines that start no processes of their own (jax.distributed, TensorFlow's multi-worker
strategy): it starts spec.world_size ranks on this machine, each
`python -m rigbench.runner.child SPEC --rank-folder FOLDER` in a session of its own with the
launch contract's environment (rigbench/ranks.py: RANK, LOCAL_RANK, WORLD_SIZE,
LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT a free port, and ranks.RANK_AGENT_VAR),
and does what torch's elastic agent does for torchrun: when a rank fails, it stops the others
(SIGTERM, then SIGKILL after STOP_GRACE_S) and writes runner/rank_files.agent_path in the same
shape as runner/torchrun_agent.py, so the launcher reads both alike (launchers/rank_outcome.py).
On one node of a multi-node trial (ranks.NodeLaunch: --nnodes, --node-rank, --rdzv-endpoint)
it starts that node's world_size / nodes ranks, global ranks node_rank x that onwards, with
MASTER_ADDR:MASTER_PORT the endpoint every node names (rank 0, on node 0, binds it). Where the
engine needs more than the master's address (TensorFlow: every worker's), the ranks exchange it
among themselves (rigbench/rank_store.py).
It imports no framework.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from rigbench.errors import UsageError
from rigbench.ranks import RANK_AGENT_VAR, NodeLaunch
from rigbench.runner import rank_files
from rigbench.runner.child import RANK_FOLDER_FLAG, exit_with_parent
from rigbench.runner.signal_names import signal_name
from rigbench.spec import TrialSpec

#: Seconds between two looks at the ranks' exits.
POLL_S = 0.1
#: Seconds the other ranks get to end after SIGTERM, once one rank failed.
STOP_GRACE_S = 5.0


def free_port() -> int:
    """A TCP port free on the loopback interface now (rank 0 binds it moments later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def contract_env(rank: int, world_size: int, port: int, local: tuple[int, int], master_addr: str) -> dict[str, str]:
    """The launch contract's variables for `rank` of `world_size` ranks; `local` is its (local
    rank, ranks on its node)."""
    local_rank, local_world_size = local
    return {"RANK": str(rank), "LOCAL_RANK": str(local_rank), "WORLD_SIZE": str(world_size),
            "LOCAL_WORLD_SIZE": str(local_world_size), "MASTER_ADDR": master_addr, "MASTER_PORT": str(port)}


def node_ranks(spec: TrialSpec, node: NodeLaunch) -> tuple[list[int], dict[str, str]]:
    """The global ranks this node starts, and the variables every one of them shares beyond its
    place: the master's address and port."""
    if spec.nodes == 1:
        return list(range(spec.world_size)), {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    if node.endpoint is None:
        raise UsageError("a multi-node trial needs --rdzv-endpoint HOST:PORT")
    host, _, port_text = node.endpoint.rpartition(":")
    return node.ranks(spec.world_size, spec.nodes), {"MASTER_ADDR": host, "MASTER_PORT": port_text}


def _stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM every rank still running, SIGKILL what is left after STOP_GRACE_S."""
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    for proc in procs:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def launch(spec_path: Path, folder: Path) -> int:
    """Run the ranks to their end; 0 if every one exited cleanly, else 1 after agent.json."""
    spec = TrialSpec.model_validate_json(spec_path.read_text(encoding="utf-8"))
    ranks, shared = node_ranks(spec, NodeLaunch.from_env())
    # RIGBENCH_PARENT_PID: the ranks' watchdog watches this agent (runner/child.exit_with_parent)
    base = {**os.environ, "RIGBENCH_PARENT_PID": str(os.getpid()), RANK_AGENT_VAR: "1"}
    command = [sys.executable, "-m", "rigbench.runner.child", str(spec_path), RANK_FOLDER_FLAG, str(folder)]
    procs = [subprocess.Popen(command, stdin=subprocess.DEVNULL, start_new_session=True,
                              env=base | contract_env(rank, spec.world_size, int(shared["MASTER_PORT"]),
                                                      (local, len(ranks)), shared["MASTER_ADDR"]))
             for local, rank in enumerate(ranks)]
    try:
        first = _first_failure(procs)
    finally:
        _stop(procs)  # a no-op when every rank has ended; on SIGTERM to us, ends them
    if first is None:
        return 0
    rank_files.agent_path(folder).write_text(json.dumps({"first": ranks[first], "failures": failures(procs, ranks)}),
                                             encoding="utf-8")
    return 1


def failures(procs: list[subprocess.Popen], ranks: list[int] | None = None) -> dict[str, dict]:
    """Each failed rank's exit code and, if a signal ended it, the signal's name ("signal 40"
    for a real-time signal Python does not name: the record is written whatever killed it),
    by global rank (`ranks`: each process's; by default its place in `procs`)."""
    ranks = ranks or list(range(len(procs)))
    return {str(ranks[i]): {"exitcode": proc.returncode, "signal": signal_name(-proc.returncode) if proc.returncode < 0 else None}
            for i, proc in enumerate(procs) if proc.returncode}


def _first_failure(procs: list[subprocess.Popen]) -> int | None:
    """Wait until every rank has ended (None) or one has failed (its rank)."""
    while True:
        codes = [proc.poll() for proc in procs]
        if (failed := first_failed(codes)) is not None:
            return failed
        if all(code == 0 for code in codes):
            return None
        time.sleep(POLL_S)


def first_failed(codes: list[int | None]) -> int | None:
    """Of the ranks' exit codes at one look (None: still running), the rank whose failure came
    first. Several can end between two looks when one's death breaks its peers' collective:
    a rank ended by a signal (the agent has sent none yet) is then the cause, and a rank that
    exited with an error after its all-reduce lost that peer is not."""
    failed = [rank for rank, code in enumerate(codes) if code not in (None, 0)]
    by_signal = [rank for rank in failed if (codes[rank] or 0) < 0]
    return next(iter(by_signal or failed), None)


def main(argv: list[str]) -> int:
    exit_with_parent()
    # SIGTERM from the launcher unwinds through launch(), which stops the ranks first.
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    spec_path, folder = argv
    return launch(Path(spec_path), Path(folder))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
