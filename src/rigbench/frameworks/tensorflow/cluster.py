"""Where a data-parallel TensorFlow trial's workers meet, from the launch contract
(rigbench/ranks.py) and the agent's one port per rank (ranks.PEER_PORTS_VAR), as the
variables TensorFlow reads when its runtime starts. Imports no TensorFlow: the adapter's
`environment` calls it before TensorFlow is imported (frameworks/tensorflow/parallel.py then
creates the strategy from TF_CONFIG).

TF_CONFIG (tf.distribute.cluster_resolver.TFConfigClusterResolver): {"cluster": {"worker":
[host:port of every rank, in rank order]}, "task": {"type": "worker", "index": rank}}. Every
worker runs a gRPC server on its own port, so the contract's single MASTER_PORT is not enough.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from rigbench.errors import UsageError
from rigbench.ranks import PEER_PORTS_VAR, RankInfo, peer_ports


def is_agent_rank(env: Mapping[str, str] | None = None) -> bool:
    """Whether this process is a rank started by rigbench's agent (runner/rank_agent.py), the
    only starter that hands every rank the ports TF_CONFIG needs."""
    env = os.environ if env is None else env
    return bool(env.get(PEER_PORTS_VAR)) and bool(env.get("RANK"))


def tf_config(rank: RankInfo, ports: list[int]) -> dict:
    """TF_CONFIG for `rank`: one worker per rank on MASTER_ADDR (every rank of this agent runs
    on the master's machine) at its own port."""
    workers = [f"{rank.master_addr}:{port}" for port in ports]
    return {"cluster": {"worker": workers}, "task": {"type": "worker", "index": rank.rank}}


def rank_environment(device: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables a rank of rigbench's agent needs before TensorFlow starts (none for any
    other process): TF_CONFIG, and the GPUs the rank may see. MultiWorkerMirroredStrategy
    mirrors over every GPU its worker sees, so a rank sees exactly one (its LOCAL_RANK-th, as a
    torchrun script takes cuda:LOCAL_RANK), and none on a CPU trial, where the replica is the CPU."""
    env = os.environ if env is None else env
    if not is_agent_rank(env):
        return {}
    rank = RankInfo.from_env(env)
    ports = peer_ports(rank.world_size, env)
    if ports is None:  # is_agent_rank saw the variable
        raise UsageError(f"{PEER_PORTS_VAR} is unset")
    gpu = device.partition(":")[0] in ("cuda", "rocm", "gpu")
    visible = [v for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v]
    mine = (visible[rank.local_rank] if rank.local_rank < len(visible) else str(rank.local_rank)) if gpu else "-1"
    return {"TF_CONFIG": json.dumps(tf_config(rank, ports)), "CUDA_VISIBLE_DEVICES": mine}


def rank_device(device: str) -> str:
    """The rigbench device id a rank resolves: its one visible GPU is TensorFlow's GPU 0
    (rank_environment), whatever index the trial named; the CPU is the CPU."""
    kind = device.partition(":")[0]
    return device if kind == "cpu" or not is_agent_rank() else f"{kind}:0"
