"""Which measured trials a chart draws and which of them form one line: the speed trials
shown, the line key (a configuration but for the batch size, and its run), the line names and
a point's hover text, and the legend rule (`Legend`: name series by what varies). Shared by
every chart builder.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, NamedTuple

from rigbench.analysis.contention import is_busy
from rigbench.reports.chart_model import hover_lines, workload_name
from rigbench.spec import Result


def trial_threads(r: Result) -> int | None:
    """Threads the trial ran with: what the child reported, else what was asked for."""
    return r.threads if r.threads is not None else r.spec.threads


def variant_label(r: Result) -> str:
    """"compile" (or "compile MODE"), "channels-last", both, or "" for the eager contiguous default."""
    return " · ".join(n for n, on in ((r.spec.compile_label, r.spec.compiled), ("channels-last", r.spec.channels_last)) if on)


class LineKey(NamedTuple):
    """What makes trials one line in a chart against batch size: their configuration but for
    the batch (the x axis), with threads as the trial ran them, and their run."""

    workload: str
    framework: str
    device: str
    precision: str
    threads: int | None
    variant: str
    other: tuple[tuple[str, Any], ...]  # every other configuration field (lr, world size...)
    run_id: str


#: Configuration fields LineKey names itself, or that are the x axis (batch_size); the rest of
#: TrialSpec.config_key goes into LineKey.other, so two configurations never share a line.
_LINE_NAMED = ("workload", "workload_options", "framework", "device", "precision", "threads",
               "compile", "channels_last", "batch_size")


def line_key(r: Result) -> LineKey:
    return LineKey(workload_name(r), r.spec.framework, r.spec.device, r.spec.precision,
                   trial_threads(r), variant_label(r), r.spec.config_key(ignore=_LINE_NAMED), r.run_id)


#: The dimensions every label can name and every constant statement states.
NAMED = ("workload", "device", "framework", "precision", "threads", "variant")


def dimension_values(r: Result) -> dict[str, str]:
    """The trial's value of each dimension a legend can name, in the order a label writes them
    (workload, device, framework, precision, threads, variant, then each other configuration
    field as "FIELD VALUE", the processes in words: `process_label`): the device by its name
    where the trial recorded one (two machines' "cpu" are different CPUs), threads as asked."""
    values = {"workload": workload_name(r), "device": r.device_name or r.spec.device,
              "framework": r.spec.framework, "precision": r.spec.precision,
              "threads": "default threads" if r.spec.threads is None
              else f"{r.spec.threads} thread{'s' * (r.spec.threads != 1)}",
              "variant": variant_label(r) or "eager"}
    for f, value in r.spec.config_key(ignore=_LINE_NAMED):
        if f in _PROCESS_FIELDS:  # one dimension in words, never "data_parallel False"
            values["processes"] = process_label(r)
        else:
            values[f] = f"{f} {'default' if value is None else value}"
    return values


#: The configuration fields that say how many processes trained a trial: one legend dimension.
_PROCESS_FIELDS = ("world_size", "nodes", "data_parallel")
ONE_PROCESS = "one process"


def process_label(r: Result) -> str:
    """"one process", or "data parallel x2" (x1: one rank under the data-parallel wrapper),
    "... over 2 nodes" where the ranks were spread over machines."""
    spec = r.spec
    if not spec.is_data_parallel:
        return ONE_PROCESS
    return f"data parallel {spec.world_label}" + (f" over {spec.nodes} nodes" if spec.nodes > 1 else "")


class Legend:
    """The one "which dimensions vary" rule of every chart: over the trials a chart (or a set
    of small multiples) draws, the dimensions with more than one value name and colour its
    series; the others are stated once (`constant`). `omit` are dimensions the chart shows
    another way (the workload of a per-workload panel). When nothing varies but the run, the
    run names the series; when nothing varies at all, the device does."""

    def __init__(self, results: Sequence[Result], omit: Sequence[str] = ()):
        values: dict[str, set[str]] = defaultdict(set)
        for r in results:
            for dim, value in dimension_values(r).items():
                values[dim].add(value)
        dims = [d for d in values if d not in omit]
        self.varying = [d for d in dims if len(values[d]) > 1]
        # other configuration fields (kind, lr...) are named only where they vary; data-parallel
        # processes where every trial had them (a figure over 2 processes is not one process's)
        self.constants = [d for d in dims if len(values[d]) == 1 and (
            d in NAMED or d == "processes" and values[d] != {ONE_PROCESS})]
        self._values = values
        self.runs = len({r.run_id for r in results})
        self.by_run = not self.varying and self.runs > 1

    def label(self, r: Result) -> str:
        """The series name of `r`'s line: its values of the varying dimensions."""
        values = dimension_values(r)
        if self.by_run:
            return f"run {r.run_id}"
        return " · ".join(values[d] for d in self.varying) or values["device"]

    def constant(self) -> str:
        """What every trial shares, e.g. "torch · fp32 · default threads · eager"."""
        return " · ".join(next(iter(self._values[d])) for d in self.constants)

    def count(self) -> int:
        """How many distinct labels the legend can have: the product of the varying values."""
        if self.by_run:
            return self.runs
        n = 1
        for d in self.varying:
            n *= len(self._values[d])
        return n


def colour_key(r: Result) -> str:
    """The page-wide colour of a trial's series: its device (by name) and framework."""
    values = dimension_values(r)
    return f"{values['device']} · {values['framework']}"


def trial_hover(r: Result, value: str) -> str:
    """The hover text of a measured point: the value, then the trial's spec."""
    m = r.metrics
    return hover_lines(
        value, r.spec.label(), f"trial {r.id} · run {r.run_id}",
        f"device: {r.device_name}" if r.device_name else "",
        f"threads: {trial_threads(r)}" if trial_threads(r) is not None else "",
        f"step {m.step_time_ms_median:.2f} ms median, {m.steps_measured} steps"
        + (" [noisy]" if m.noisy else "") if m.step_time_ms_median else "",
        f"measure: ≥{r.spec.measure.min_steps} steps and ≥{r.spec.measure.min_seconds:g} s",
        f"[busy] other processes used {m.others_cpu_pct_mean:.0f}% of the CPU meanwhile" if is_busy(m) else "",
    )
