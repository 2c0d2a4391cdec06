"""`python -m rigbench.runner.torchrun_agent SPEC FOLDER`: the one process the torchrun launcher
starts for a data-parallel trial (runner/launchers/agent.py). It runs torch's own elastic
agent (`torch.distributed.launcher.api.elastic_launch`, what `torchrun --standalone` runs):
c10d rendezvous (on this machine, or, for a multi-node trial, at the endpoint every node names:
rigbench/ranks.NodeLaunch, node 0 hosting it), one worker process per rank with the launch contract's environment (RANK,
LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), no restarts. Each worker is
`python -m rigbench.runner.child SPEC --rank-folder FOLDER`, which writes its own report there.

When a rank fails, the elastic agent stops the others (SIGTERM, then SIGKILL) and raises
ChildFailedError; this module writes what it says into runner/rank_files.agent_path: every
failed rank's exit code or signal, and which failed first (the cause: the others were
stopped because of it). The parent never imports torch; this process does.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

from rigbench.ranks import NodeLaunch
from rigbench.runner import rank_files
from rigbench.runner.child import RANK_FOLDER_FLAG, exit_with_parent
from rigbench.spec import TrialSpec

#: Seconds the elastic agent polls its workers' exits.
MONITOR_INTERVAL_S = 0.1
#: Seconds a node waits in the rendezvous for the others to arrive (torchrun's default: 900).
RENDEZVOUS_TIMEOUT_S = 300
#: Every node of one trial must name the same rendezvous run id: made from the spec they share
#: (threads left out: each node shares out its own cores).
RUN_ID_PREFIX = "rigbench-"
#: The elastic agent's log folder, under the trial's folder.
ELASTIC_LOG_DIR = "elastic"


def launch(spec_path: Path, folder: Path) -> int:
    """Start spec.world_size ranks on this machine and wait for them; 0 if every rank exited
    cleanly, 1 after writing agent.json if any did not."""
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    spec = TrialSpec.model_validate_json(spec_path.read_text(encoding="utf-8"))
    node = NodeLaunch.from_env()
    if spec.nodes == 1:  # torchrun --standalone: a free port on this machine
        rdzv: dict = {"rdzv_endpoint": "127.0.0.1:0", "run_id": str(uuid.uuid4())}
    else:  # torchrun --nnodes N --rdzv-backend c10d --rdzv-endpoint HOST:PORT on every node
        rdzv = {"rdzv_endpoint": node.endpoint, "run_id": RUN_ID_PREFIX + spec.model_copy(update={"threads": None}).canonical_json_digest(),
                "rdzv_configs": {"is_host": node.node_rank == 0, "timeout": RENDEZVOUS_TIMEOUT_S}}
    config = LaunchConfig(
        min_nodes=spec.nodes, max_nodes=spec.nodes, nproc_per_node=spec.ranks_per_node,
        rdzv_backend="c10d", max_restarts=0, monitor_interval=MONITOR_INTERVAL_S,
        # the agent's log folder inside the trial's, which the launcher removes: by default it
        # makes a torchelastic_* folder in the temporary directory per trial and never removes it
        logs_specs=DefaultLogsSpecs(log_dir=str(folder / ELASTIC_LOG_DIR)), **rdzv)
    # The ranks' watchdog (runner/child.exit_with_parent) watches this agent, their parent.
    os.environ["RIGBENCH_PARENT_PID"] = str(os.getpid())
    try:
        elastic_launch(config, entrypoint=sys.executable)("-m", "rigbench.runner.child", str(spec_path),
                                                          RANK_FOLDER_FLAG, str(folder))
    except ChildFailedError as exc:
        first_rank, _ = exc.get_first_failure()
        failures = {str(rank): {"exitcode": f.exitcode, "signal": f.signal_name() if f.exitcode < 0 else None}
                    for rank, f in exc.failures.items()}
        rank_files.agent_path(folder).write_text(json.dumps({"first": first_rank, "failures": failures}),
                                                 encoding="utf-8")
        return 1
    return 0


def main(argv: list[str]) -> int:
    exit_with_parent()
    spec_path, folder = argv
    return launch(Path(spec_path), Path(folder))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
