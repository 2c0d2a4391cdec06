"""A data-parallel rank's place in its trial, read from the one launch contract: torchrun's
environment variables (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR,
MASTER_PORT). torch's elastic agent sets them for every rank it starts; a launcher for another
engine sets the same ones, so every framework's `join` (frameworks/base.DataParallelAdapter)
reads them here and nowhere else."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from rigbench.errors import UsageError

#: The variables of the contract, in the order RankInfo's fields follow.
CONTRACT = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
#: Beside the contract, set to "1" by rigbench's own agent (runner/rank_agent.py) for the ranks it
#: starts: an engine that has no launcher of its own (TensorFlow) takes the contract's variables
#: as its cue to join only then, not when a user's shell happens to set RANK.
RANK_AGENT_VAR = "RIGBENCH_RANK_AGENT"


@dataclass(frozen=True)
class RankInfo:
    """Which process of a data-parallel trial this is, and where its peers meet."""

    rank: int
    local_rank: int
    world_size: int
    local_world_size: int
    master_addr: str
    master_port: int

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RankInfo:
        """The rank described by `env` (default: this process's environment); UsageError naming
        the variables that are missing or not numbers (a process not started by a launcher)."""
        env = os.environ if env is None else env
        missing = [name for name in CONTRACT if not env.get(name)]
        if missing:
            raise UsageError(f"not started as a data-parallel rank: {', '.join(missing)} unset "
                             "(run it through `rigbench run --processes N`)")
        try:
            numbers = [int(env[name]) for name in CONTRACT if name != "MASTER_ADDR"]
        except ValueError:
            raise UsageError(f"the rank's variables must be integers: {', '.join(f'{n}={env[n]}' for n in CONTRACT)}") from None
        rank, local_rank, world_size, local_world_size, port = numbers
        if not (0 <= rank < world_size and 0 <= local_rank < local_world_size):
            raise UsageError(f"rank {rank} of {world_size} (local {local_rank} of {local_world_size}) is out of range")
        return cls(rank, local_rank, world_size, local_world_size, env["MASTER_ADDR"], port)


#: A node's part of a multi-node launch, set by `rigbench run --nnodes N --node-rank R
#: --rdzv-endpoint HOST:PORT` for the processes it starts (every node runs the same command).
NODE_RANK_VAR, RDZV_ENDPOINT_VAR = "RIGBENCH_NODE_RANK", "RIGBENCH_RDZV_ENDPOINT"


@dataclass(frozen=True)
class NodeLaunch:
    """This machine's place in a multi-node trial: its node rank (0 hosts the rendezvous and
    stores the trial) and the rendezvous endpoint every node names."""

    node_rank: int = 0
    endpoint: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> NodeLaunch:
        env = os.environ if env is None else env
        return cls(int(env.get(NODE_RANK_VAR) or 0), env.get(RDZV_ENDPOINT_VAR) or None)

    def ranks(self, world_size: int, nodes: int) -> list[int]:
        """The global ranks this node starts: world_size / nodes of them, node_rank x that onwards
        (rigbench's agent; torch's rendezvous may place them otherwise, once it has met)."""
        local = world_size // nodes
        return list(range(self.node_rank * local, (self.node_rank + 1) * local))

    def env(self) -> dict[str, str]:
        """The variables that carry it to the agent (and the ranks)."""
        return {NODE_RANK_VAR: str(self.node_rank), **({RDZV_ENDPOINT_VAR: self.endpoint} if self.endpoint else {})}


def node_rank_here(nodes: int) -> int:
    """This machine's node rank in a trial that spans `nodes` machines (0 on one machine): only
    node 0 stores the trial, and only its `rigbench run` records a run for it."""
    return NodeLaunch.from_env().node_rank if nodes > 1 else 0
