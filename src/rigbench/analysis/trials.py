"""Which stored trials are speed figures: the one rule that score, compare, recommend and
scaling use.

A full-protocol speed trial is a trial of kind "speed": the timing protocol ran to its stop
rule (warm-up, then at least `min_steps` timed steps and `min_seconds` of timing). `--quick`
trials count: they run the same protocol with shorter windows (at least 3 steps and 0.5 s),
and their wider confidence intervals say how much less they know. Max-batch probes (kind
"probe", 2 timed steps and no minimum time, often under a memory cap) never count; nor do
training runs and learning-rate range tests.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from rigbench.fingerprint import machine_key
from rigbench.spec import MeasureOptions, Result

K = TypeVar("K", bound=Hashable)

#: run id -> the fingerprint of the machine the run ran on (Store.machine; None: not recorded),
#: as a command reads it for the results in its scope.
Machines = Mapping[str, Mapping[str, Any] | None]


def is_full_protocol(r: Result) -> bool:
    """A speed trial of the timing protocol, --quick included; not a probe, training run or
    range test (module docstring)."""
    return r.spec.kind == "speed"


def is_quick_protocol(r: Result) -> bool:
    """A speed trial timed with a shorter window than the default protocol (`--quick`, or
    fewer steps or seconds asked for): its figure is real but knows less."""
    default, measure = MeasureOptions(), r.spec.measure
    return r.spec.kind == "speed" and (measure.min_steps < default.min_steps
                                       or measure.min_seconds < default.min_seconds)


def workload_label(r: Result) -> str:
    """NAME or NAME:key=value,... (as `rigbench run` takes it and the report names it)."""
    opts = ",".join(f"{k}={v}" for k, v in sorted(r.spec.workload_options.items()))
    return f"{r.spec.workload}:{opts}" if opts else r.spec.workload


def network_label(r: Result) -> str:
    """`workload_label`, with "(revision N)" when the trial measured another revision of the
    network than this rigbench's (an older network under the same name: never mixed with it)."""
    from rigbench.workloads import WORKLOADS

    workload = WORKLOADS.get(r.spec.workload)
    current = workload.revision if workload is not None else r.spec.workload_revision
    label = workload_label(r)
    return label if r.spec.workload_revision == current else f"{label} (revision {r.spec.workload_revision})"


def has_speed(r: Result) -> bool:
    """A finished trial with a throughput (status ok, samples/s set and not zero)."""
    return r.status == "ok" and bool(r.metrics.samples_per_s)


def speed_figures(results: Sequence[Result]) -> list[Result]:
    """Finished full-protocol speed trials with a throughput: the trials the report's charts and
    headline draw. Training runs (`rigbench train`) are left out: their throughput includes the
    input pipeline and is not the timing protocol's."""
    return [r for r in results if has_speed(r) and is_full_protocol(r)]


def speed(r: Result) -> float:
    """samples/s of a result, 0 when it has none (callers ask it only of results whose
    samples/s they have checked)."""
    return r.metrics.samples_per_s or 0.0


def global_batch(r: Result) -> int:
    """The samples one training step of the trial processed over every rank: the stored
    `global_batch` metric, which the runner sets on every result (runner/assemble.global_batch);
    a result stored before that metric existed gets the same rule from its spec."""
    return r.metrics.global_batch or r.spec.batch_size * r.spec.world_size


def run_order(r: Result) -> tuple:
    """The order trials ran in: by id (the database's), then by creation time."""
    return (r.id or 0, r.created_at)


def device_key(r: Result, machines: Machines | None = None) -> tuple[Any, ...]:
    """Which device measured a trial: its id (`cpu`, `cuda:0`), its model (`device_name`: an
    H100's and an H200's trials are both `cuda:0`) and, with `machines`, its machine
    (fingerprint.machine_key: two lent VMs' CPUs share the name "Intel(R) Xeon(R) Processor").
    Part of every key that keeps one figure per configuration over results that more than one
    machine may have measured (`config_key`); without it the newest GPU's figure hid the other's."""
    machine = machine_key(machines.get(r.run_id)) if machines is not None else None
    return (r.spec.device, r.device_name or "", machine)


def config_key(r: Result, machines: Machines | None = None, ignore: Collection[str] = ()) -> tuple[Any, ...]:
    """A stored trial's configuration: TrialSpec.config_key (what ran, where and how, without the
    fields in `ignore`) and the device model and machine that ran it (`device_key`). Ignoring
    "device" keeps the machine: a GPU trial pairs with its CPU twin of the same machine only."""
    _, model, machine = device_key(r, machines)
    return (*r.spec.config_key(ignore), ("device_name", None if "device" in ignore else model), ("machine", machine))


def newest_run_trials(results: Sequence[Result], key: Callable[[Result], K | None]) -> dict[K, list[Result]]:
    """The trials of each configuration `key` names (None: left out), from the newest run that
    measured it, in the order they ran: repeats of one run are kept together (scaling's
    baseline first and last, `run --repeat`), while an older run's are superseded. Over results
    of more than one device model or machine, `key` must tell them apart (`config_key`,
    `device_key`), or the newest one's trials hide the other's."""
    newest: dict[K, list[Result]] = {}
    for r in sorted(results, key=run_order):
        k = key(r)
        if k is not None:
            newest[k] = [*(t for t in newest.get(k, []) if t.run_id == r.run_id), r]
    return newest


@dataclass(frozen=True)
class RunSpeed:
    """One configuration's successful trials from the newest run that measured it, in the
    order they ran, and the figure they give together: the geometric mean of their samples/s
    (every command takes repeats so: compare's interval is on log speeds, a ratio of two
    geometric means is the geometric mean of the ratios, and score averages ratios so)."""

    trials: tuple[Result, ...]

    @property
    def speeds(self) -> list[float]:
        return [speed(r) for r in self.trials]

    @property
    def samples_per_s(self) -> float:
        from rigbench.analysis.stats import geometric_mean  # numpy: not for the tables that only name devices

        return geometric_mean(self.speeds)

    @property
    def tokens_per_s(self) -> float | None:
        """A language model's tokens/s at the mean samples/s (tokens per sample is the
        configuration's context, so the newest trial's ratio holds for every trial); None for
        other workloads."""
        tokens = self.newest.metrics.tokens_per_s
        return None if tokens is None else tokens * self.samples_per_s / speed(self.newest)

    @property
    def steps_per_s(self) -> float:
        """Training steps per second at the mean samples/s: a step takes the global batch (one
        batch per rank of a data-parallel trial), not the per-rank `spec.batch_size`."""
        return self.samples_per_s / global_batch(self.newest)

    def mean_of(self, metric: str) -> float | None:
        """A utilisation-like metric's mean over the same trials as the speed (None when no trial
        has it), so a ratio of the two is of one set of trials, not the mean speed over the newest
        trial's use."""
        known = [u for r in self.trials if (u := getattr(r.metrics, metric)) is not None]
        return sum(known) / len(known) if known else None

    @property
    def newest(self) -> Result:
        return self.trials[-1]

    @property
    def ids(self) -> list[int]:
        return [r.id for r in self.trials if r.id is not None]


def newest_run_speeds(results: Sequence[Result], key: Callable[[Result], K | None]) -> dict[K, RunSpeed]:
    """Per configuration `key` names, its successful trials with a speed from the newest run
    that has one (`newest_run_trials` over those: a failed retry does not hide an older run's
    figure, and repeats of one run count together instead of the newest alone)."""
    ok = [r for r in results if has_speed(r)]
    return {k: RunSpeed(tuple(trials)) for k, trials in newest_run_trials(ok, key).items()}


def trials_text(ids: Sequence[int]) -> str:
    """Which stored trials a figure is: "trial 7", or "mean of trials 3, 5, 9" (repeats)."""
    listed = ", ".join(str(i) for i in ids)
    return f"mean of trials {listed}" if len(ids) > 1 else f"trial {listed}"
