"""Registry of launchers: how a trial's processes are started (runner/launchers/base.py).

A trial's launcher follows from its spec: one that is not `is_data_parallel` (world_size 1)
runs in one child process ("process"); a data-parallel torch trial (any world_size) runs its
ranks under torch's elastic agent ("torchrun"), another framework's under rigbench's agent
("ranks") if its adapter can join a process group, on one node or several (rigbench's agent
runs on each node). For one that cannot, or a trial its adapter refuses to run over processes
(its optional `data_parallel_refusal(spec)`), `launcher_for` says so with an UnsupportedError,
which the session stores as an `unsupported` result: before any process starts.
"""

from __future__ import annotations

from rigbench.errors import UnsupportedError, UsageError
from rigbench.frameworks import load_adapter
from rigbench.frameworks.base import no_data_parallel_reason
from rigbench.runner.launchers.agent import RanksLauncher, TorchrunLauncher
from rigbench.runner.launchers.base import Launcher, Outcome, TrackerSettings
from rigbench.runner.launchers.process import ProcessLauncher
from rigbench.spec import TrialSpec

__all__ = ["LAUNCHERS", "Launcher", "Outcome", "TrackerSettings", "get_launcher", "launcher_for"]

#: name -> launcher class
LAUNCHERS: dict[str, type[Launcher]] = {
    ProcessLauncher.name: ProcessLauncher,
    TorchrunLauncher.name: TorchrunLauncher,
    RanksLauncher.name: RanksLauncher,
}


def get_launcher(name: str) -> Launcher:
    """The launcher registered as `name`; UsageError listing the registered ones otherwise."""
    try:
        return LAUNCHERS[name]()
    except KeyError:
        raise UsageError(f"unknown launcher {name!r}: choose from {', '.join(LAUNCHERS)}") from None


def launcher_for(spec: TrialSpec) -> Launcher:
    """The launcher that runs `spec`; UnsupportedError (with the reason) if none can."""
    if not spec.is_data_parallel:
        return get_launcher("process")
    adapter = load_adapter(spec.framework)  # the adapter module only, not the framework
    if hasattr(adapter, "join"):  # base.DataParallelAdapter
        refusal = getattr(adapter, "data_parallel_refusal", None)  # optional: a trial it cannot run over processes
        reason = refusal(spec) if refusal is not None else None
        if reason:
            raise UnsupportedError(reason)
        return get_launcher("torchrun" if spec.framework == "torch" else "ranks")
    if spec.nodes > 1:  # the world size is not what the user typed: say where it comes from
        asked = f"{spec.world_size} processes in all (--processes {spec.ranks_per_node} x --nnodes {spec.nodes})"
    elif spec.world_size > 1:
        asked = f"--processes {spec.world_size}"
    else:
        asked = "--data-parallel"
    raise UnsupportedError(f"{spec.framework} has no data-parallel support: {asked} "
                           f"needs a framework that trains data-parallel ({no_data_parallel_reason(adapter)})")
