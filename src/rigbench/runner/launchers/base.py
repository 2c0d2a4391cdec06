"""The launcher contract: how the parent starts one trial's processes and gets its outcome.

A launcher runs one TrialSpec and returns an Outcome, the input of runner/assemble. It owns
everything about the trial's processes: how many it starts (one today; for a data-parallel
trial one per rank, or one agent whose process tree holds the ranks), their environment, the
timeout (`spec.measure.timeout_s`), the memory cap (`spec.measure.memory_limit_bytes`,
applied by the child), Ctrl-C and the classification of exits the child could not report
itself. It never raises for a failing trial: a failure is an Outcome whose reports carry the
status. The steps a launcher is made of (the trial's folder, starting and waiting for
processes, reading a rank's report) are in launchers/steps.py, so a multi-process launcher
composes them instead of copying them.

Trackers: a launcher samples, with one `Tracker` per process it starts, the whole process
tree of that pid, using `TrackerSettings` (interval from the spec's measurement options, the
NVML index of the spec's device). `on_start` gets each started pid, so callers can watch or
signal the trial's processes. `Outcome.samples` is one series, which runner/assemble
summarises over the measured window: an agent's tracker sees every rank in its tree, which is
why the torchrun plan (docs/ARCHITECTURE.md) starts one agent. A launcher with one tracker per
rank would have to combine their series itself (and read machine-wide energy counters once).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from rigbench.child_report import ChildReport
from rigbench.hw.nvml import nvml_index_for_cuda_device
from rigbench.runner.launchers.merge import merge_reports
from rigbench.spec import TrialSpec


@dataclass
class Outcome:
    """What the parent knows about a finished trial: one report per rank, in rank order (each
    the child's own, or one the launcher wrote for a rank that could not: a timeout, a crash),
    the trackers' raw samples, the exit code of the process the launcher started (for a
    launcher whose one agent process holds the ranks, the agent's; None if nothing ran) and
    what energy the tracker read and why any was not (Tracker.energy_description).

    A single-process trial has one report; `report` is the trial's, merged from every rank
    (launchers/merge.py), so single-rank callers need not know about ranks."""

    reports: list[ChildReport]
    samples: list[dict] = field(default_factory=list)
    returncode: int | None = None
    energy_method: str | None = None
    energy_note: str | None = None
    #: The ranks that ran on this machine, where a trial spans nodes (None: every rank).
    ran_here: list[int] | None = None

    def __post_init__(self) -> None:
        if not self.reports:
            raise ValueError("an Outcome needs a report for each rank, and a trial has at least one")

    @property
    def report(self) -> ChildReport:
        """The trial's report: the one rank's as it is, or every rank's merged (recomputed on
        each access: callers that read it often keep it)."""
        return merge_reports(self.reports)


class TrialInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped a trial that kept what it had finished (a training run's
    epochs, status `interrupted`): the session stores `outcome`, then stops as for any
    interrupt. A trial with nothing to keep raises plain KeyboardInterrupt."""

    def __init__(self, outcome: Outcome):
        super().__init__("the trial was interrupted; what it finished is kept")
        self.outcome = outcome


def gpu_index_for(device: str) -> int | None:
    """NVML index to sample for a device string, or None for non-NVIDIA devices."""
    kind, _, index = device.partition(":")
    if kind != "cuda":
        return None
    try:
        return nvml_index_for_cuda_device(int(index or 0))
    except ValueError:  # not visible under CUDA_VISIBLE_DEVICES: the trial will say so
        return None


@dataclass(frozen=True)
class TrackerSettings:
    """How a launcher's trackers sample the processes it starts."""

    interval_s: float
    gpu_index: int | None = None

    @classmethod
    def for_spec(cls, spec: TrialSpec) -> TrackerSettings:
        """The settings a trial asks for: its sampling interval and its device's GPU."""
        return cls(interval_s=spec.measure.sample_interval_s, gpu_index=gpu_index_for(spec.device))


class Launcher(ABC):
    """Starts one trial's processes and collects its outcome (see the module docstring)."""

    #: The registry name (runner/launchers/__init__.LAUNCHERS).
    name: ClassVar[str]

    @abstractmethod
    def launch(self, spec: TrialSpec, tracking: TrackerSettings,
               on_start: Callable[[int], None] | None = None,
               on_progress: Callable[[str], None] | None = None) -> Outcome:
        """Run `spec` and return its outcome; never raises for a failing trial.
        KeyboardInterrupt ends the trial's processes and propagates. `on_progress` hears how
        far the trial has got, where the launcher can tell: each phase its child enters ("warm-up
        (the first step took 1.2 s)", runner/epoch_lines.py) and each epoch a training run finishes
        ("epoch 3/30, train loss 0.41, held-out accuracy 91.2%, 0:00:12 elapsed, ETA 0:01:48":
        runner/epoch_lines.EpochPace)."""
