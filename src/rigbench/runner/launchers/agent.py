"""Launchers of data-parallel trials on this machine: one isolated agent process starts the
ranks, the parent only watches.

- "torchrun": torch's own elastic agent (runner/torchrun_agent.py, what `torchrun
  --standalone` runs);
- "ranks": rigbench's agent (runner/rank_agent.py), for engines that start no processes of
  their own (jax.distributed, TensorFlow's multi-worker strategy); it sets the same launch
  contract (rigbench/ranks.py) and reports failed ranks in the same file.

The parent never imports a framework: it starts the agent in a session of its own, with the
trial's environment and one Tracker on the agent's process tree (which holds every rank), waits
for it under the trial's timeout, and reads one report per rank from the trial's folder
(rank_outcome.py: a rank's own report, else its exit as the agent saw it, else, past the
timeout, which rank held the others up). Killing the agent's group on a timeout also kills
the ranks, which run in sessions of their own (steps.kill_group kills the whole tree).

Threads: torchrun alone would set OMP_NUM_THREADS=1 for every rank. Here a trial that does not
ask (--threads) gets `threads_per_rank`: the usable cores shared out between the ranks.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from rigbench.hw.cpu import usable_cores
from rigbench.runner import rank_files
from rigbench.runner.launchers.base import Launcher, Outcome, TrackerSettings
from rigbench.runner.launchers.progress_watch import wait_telling
from rigbench.runner.launchers.rank_outcome import Stalls, ran_here, rank_reports
from rigbench.runner.launchers.steps import (
    Started,
    child_env,
    ending_on_error,
    start_process,
    trial_folder,
    wait_all,
    write_spec,
)
from rigbench.spec import TrialSpec


def threads_per_rank(spec: TrialSpec) -> int:
    """The CPU threads each rank uses: --threads if given, else the usable cores shared out
    between the ranks on this machine (world_size / nodes of them; at least 1)."""
    return spec.threads or max(1, (usable_cores() or 1) // spec.ranks_per_node)


def threads_per_rank_line(spec: TrialSpec) -> str:
    """What `rigbench run` says of the threads each rank got without --threads: shared out, or,
    with more ranks than cores, 1 each (session.oversubscription warns of that too)."""
    ranks, cores = spec.ranks_per_node, usable_cores() or 1
    how = (f"{ranks} ranks, more than the {cores} usable cores: 1 each" if ranks > cores
           else f"the usable cores shared out between {ranks} ranks")
    return f"threads per rank: {threads_per_rank(spec)} ({how}; --threads to choose)"


class AgentLauncher(Launcher):
    """spec.world_size ranks on this machine, started by the agent `agent_module`."""

    #: The agent, run as `python -m AGENT_MODULE SPEC FOLDER`.
    agent_module: ClassVar[str]

    def agent_command(self, spec_path: Path, folder: Path) -> list[str]:
        return [sys.executable, "-m", self.agent_module, str(spec_path), str(folder)]

    def launch(self, spec: TrialSpec, tracking: TrackerSettings,
               on_start: Callable[[int], None] | None = None,
               on_progress: Callable[[str], None] | None = None) -> Outcome:
        """Run `spec` on spec.world_size ranks and return one report per rank; never raises
        for a failing trial. KeyboardInterrupt kills the agent and every rank and propagates.
        `on_progress` hears the phases and epochs of the first rank that started here."""
        ranks_spec = spec.model_copy(update={"threads": threads_per_rank(spec)})
        with trial_folder() as folder:
            spec_path = write_spec(folder, ranks_spec)
            started: list[Started] = []
            with ending_on_error(started):
                started.append(start_process(self.agent_command(spec_path, folder), child_env(ranks_spec),
                                             rank_files.agent_stderr_path(folder), tracking))
                if on_start:
                    on_start(started[0].pid)
                deadline = time.time() + spec.measure.timeout_s
                stalled = self._wait(spec, started[0], folder, on_progress)
                # Heartbeats are judged now, not after the kill (which takes a while)
                stopped_at = min(time.time(), deadline)
                [timed_out] = wait_all(started, 0.0)
            [agent] = started
            samples = agent.tracker.stop()
            reports = rank_reports(folder, spec, timed_out=timed_out, stopped_at=stopped_at,
                                   returncode=agent.proc.returncode, stalled=stalled)
            method, note = agent.tracker.energy_description()
            return Outcome(reports=reports, samples=samples, returncode=agent.proc.returncode,
                           energy_method=method, energy_note=note, ran_here=ran_here(folder, spec))

    @staticmethod
    def _wait(spec: TrialSpec, agent: Started, folder: Path, on_progress: Callable[[str], None] | None) -> bool:
        """Wait for the agent up to the trial's timeout, telling `on_progress` the phases and
        epochs of this machine's first rank; True if it was stopped early because a rank froze
        (rank_outcome.Stalls): the others would wait for it in a collective until the deadline."""
        stalls = Stalls(folder, spec)
        wait_telling(spec, agent, lambda: rank_files.first_stderr_path(folder, spec.world_size), on_progress,
                     stop=lambda: bool(stalls.ranks()))
        return bool(stalls.found)


class TorchrunLauncher(AgentLauncher):
    """torch's elastic agent; DDP in each rank (gloo on the CPU, NCCL and one GPU per rank on CUDA)."""

    name = "torchrun"
    agent_module = "rigbench.runner.torchrun_agent"


class RanksLauncher(AgentLauncher):
    """rigbench's agent, for frameworks whose engine joins processes it did not start."""

    name = "ranks"
    agent_module = "rigbench.runner.rank_agent"
