"""Where a data-parallel TensorFlow trial's workers meet, from the launch contract
(rigbench/ranks.py). Imports no TensorFlow: the adapter's `environment` calls
`rank_environment` before TensorFlow is imported, and `join` calls `meet` before the strategy
is created (parallel.start), which reads TF_CONFIG then.

TF_CONFIG (tf.distribute.cluster_resolver.TFConfigClusterResolver): {"cluster": {"worker":
[host:port of every rank, in rank order]}, "task": {"type": "worker", "index": rank}}. Every
worker runs a gRPC server on a port of its own, so the contract's one MASTER_PORT is not
enough: each rank takes a free port and announces HOST:PORT in the rank store
(rigbench/rank_store.py) that rank 0 serves at MASTER_ADDR:MASTER_PORT. A rank on node 0 is at
MASTER_ADDR (the name every node reaches that machine by), a rank on another node at the
address the store saw it come from. The store stays open for the trial: a multi-node trial's
reports reach node 0 through it (parallel.TfCollective.send).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

from rigbench.rank_store import RankStore, StoreClient, listen_host
from rigbench.ranks import RANK_AGENT_VAR, NodeLaunch, RankInfo

#: Seconds a rank waits for the store and for every other rank to announce itself (jax's
#: jax.distributed.initialize waits as long by default); the trial's timeout ends it sooner.
JOIN_TIMEOUT_S = 300.0

_store: RankStore | None = None  # rank 0's, served until the process ends
_client: StoreClient | None = None  # this rank's connection, after `meet`


def is_agent_rank(env: Mapping[str, str] | None = None) -> bool:
    """Whether this process is a rank started by rigbench's agent (runner/rank_agent.py), the
    only starter of TensorFlow ranks."""
    env = os.environ if env is None else env
    return bool(env.get(RANK_AGENT_VAR)) and bool(env.get("RANK"))


def meet(rank: RankInfo, env: Mapping[str, str] | None = None) -> list[str]:
    """Every worker's HOST:PORT in rank order, once each rank has announced its own through
    the store (rank 0 opens it first); RuntimeError naming the ranks that never did."""
    global _store, _client
    if rank.rank == 0 and _store is None:
        _store = RankStore(rank.master_port, listen_host(rank.master_addr))
    _client = _client or StoreClient(rank.master_addr, rank.master_port, JOIN_TIMEOUT_S)
    keys = [f"worker/{other}" for other in range(rank.world_size)]
    # The port stays bound until every rank has announced: two ranks of one machine cannot
    # both be handed it, and TensorFlow's server binds it moments after.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("", 0))
        on_node_zero = NodeLaunch.from_env(env).node_rank == 0
        host = rank.master_addr if on_node_zero else _client.address()
        _client.set(keys[rank.rank], f"{host}:{held.getsockname()[1]}")
        found = _client.wait(keys, JOIN_TIMEOUT_S)
    missing = [key.rpartition("/")[2] for key in keys if key not in found]
    if missing:
        raise RuntimeError(f"rank(s) {', '.join(missing)} did not join within {JOIN_TIMEOUT_S:g} s")
    # TensorFlow holds the GIL while its new strategy waits for every worker's server, so rank
    # 0's store, served by threads of rank 0, answers nobody then: rank 0 goes on only once
    # every rank has read the workers (else the last to ask would wait for rank 0 for ever).
    _client.set(f"has-workers/{rank.rank}", "")
    if rank.rank == 0:
        _client.wait([f"has-workers/{other}" for other in range(rank.world_size)], JOIN_TIMEOUT_S)
    return [found[key] for key in keys]


def channel() -> StoreClient | None:
    """This rank's connection to the store, once it has met the others."""
    return _client


def tf_config(rank: RankInfo, workers: list[str]) -> dict:
    """TF_CONFIG for `rank` among `workers` (every rank's HOST:PORT, in rank order)."""
    return {"cluster": {"worker": workers}, "task": {"type": "worker", "index": rank.rank}}


def rank_environment(device: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables a rank of rigbench's agent needs before TensorFlow starts (none for any
    other process): the GPUs it may see. MultiWorkerMirroredStrategy mirrors over every GPU its
    worker sees, so a rank sees exactly one (its LOCAL_RANK-th, as a torchrun script takes
    cuda:LOCAL_RANK), and none on a CPU trial, where the replica is the CPU."""
    env = os.environ if env is None else env
    if not is_agent_rank(env):
        return {}
    rank = RankInfo.from_env(env)
    gpu = device.partition(":")[0] in ("cuda", "rocm", "gpu")
    visible = [v for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v]
    mine = (visible[rank.local_rank] if rank.local_rank < len(visible) else str(rank.local_rank)) if gpu else "-1"
    return {"CUDA_VISIBLE_DEVICES": mine}


def rank_device(device: str) -> str:
    """The rigbench device id a rank resolves: its one visible GPU is TensorFlow's GPU 0
    (rank_environment), whatever index the trial named; the CPU is the CPU."""
    kind = device.partition(":")[0]
    return device if kind == "cpu" or not is_agent_rank() else f"{kind}:0"
