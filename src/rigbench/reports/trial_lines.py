"""Which measured trials a chart draws and which of them form one line: the speed trials
shown, the line key (a configuration but for the batch size, and its run), the line names and
a point's hover text. Shared by the chart builders of `charts.py` and `energy_charts.py`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from rigbench.reports.chart_model import hover_lines, workload_name
from rigbench.spec import Result


def speed_trials(results: Sequence[Result]) -> list[Result]:
    """Finished speed trials. Training runs (`rigbench train`) are left out of the speed
    charts: their throughput includes the input pipeline and is not the timing protocol's."""
    return [r for r in results if r.status == "ok" and r.metrics.samples_per_s and r.spec.kind == "speed"]


def trial_threads(r: Result) -> int | None:
    """Threads the trial ran with: what the child reported, else what was asked for."""
    return r.threads if r.threads is not None else r.spec.threads


def variant_label(r: Result) -> str:
    """"compile", "channels-last", both, or "" for the eager contiguous default."""
    return " · ".join(n for n, on in (("compile", r.spec.compile), ("channels-last", r.spec.channels_last)) if on)


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


def line_namer(results: Sequence[Result]) -> Callable[[LineKey], str]:
    """Names for lines. Workload, framework and device are always named; precision,
    threads and run only when they differ between the results shown, so a plain run gets
    short names and mixed runs still get distinct ones."""
    keys = {line_key(r) for r in results}
    varies = {field: len({getattr(k, field) for k in keys}) > 1 for field in LineKey._fields}
    other_values: dict[str, set] = defaultdict(set)
    for k in keys:
        for other_field, value in k.other:
            other_values[other_field].add(value)
    varying_other = {f for f, values in other_values.items() if len(values) > 1}

    def name(key: LineKey) -> str:
        parts = [key.workload, key.framework, key.device]
        if varies["precision"]:
            parts.append(key.precision)
        if varies["threads"]:
            parts.append("default threads" if key.threads is None
                         else f"{key.threads} thread{'s' * (key.threads != 1)}")
        if varies["variant"]:
            parts.append(key.variant or "eager")
        parts += [f"{f} {'default' if value is None else value}"
                  for f, value in key.other if f in varying_other]
        if varies["run_id"]:
            parts.append(f"run {key.run_id}")
        return " · ".join(parts)
    return name


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
    )
