"""Per-trial figures against batch size as small multiples: one panel per workload, a shared
legend naming what varies (trial_lines.Legend), and on the speed panels the throughput knee of
each line marked (analysis/recommend.knee, the rule `rigbench recommend` uses)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rigbench.analysis.recommend_model import KNEE_FRACTION, knee
from rigbench.analysis.trials import network_label, speed_figures
from rigbench.reports.chart_model import Chart, Series, hover_lines, y_scale_for
from rigbench.reports.trial_lines import Legend, LineKey, colour_key, line_key, trial_hover
from rigbench.spec import Result

#: The knee markers' colour: a mark over the measured lines, not one of them.
KNEE_COLOUR = "#111111"


@dataclass(frozen=True)
class Metric:
    """A per-trial number plotted against batch size (Figures 2-9 of seed 003)."""

    id: str
    title: str
    y_title: str
    unit: str
    value: Callable[[Result], float | None]
    interval: Callable[[Result], tuple[float, float] | None] = lambda r: None


def _gpu_memory(r: Result) -> float | None:
    # NVML's per-process figure when there is one, else the allocator's peak (as the terminal table)
    m = r.metrics
    return m.gpu_mem_peak_mib if m.gpu_mem_peak_mib is not None else m.allocator_peak_mib


METRICS: tuple[Metric, ...] = (
    Metric("speed", "Training speed", "samples/s (95% CI)", "samples/s",
           lambda r: r.metrics.samples_per_s, lambda r: r.metrics.samples_per_s_ci),
    Metric("cpu", "CPU use", "CPU % (100 = every logical core)", "% CPU",
           lambda r: r.metrics.cpu_util_pct_mean),
    Metric("gpu", "GPU use", "GPU % (NVML utilisation)", "% GPU",
           lambda r: r.metrics.gpu_util_pct_mean),
    Metric("rss", "Host memory", "peak RSS (MiB)", "MiB RSS", lambda r: r.metrics.rss_peak_mib),
    Metric("gpu_mem", "GPU memory", "peak GPU memory (MiB)", "MiB GPU", _gpu_memory),
)


def _series(members: list[tuple[Result, float]], metric: Metric, name: str, panel: str) -> Series:
    """One line in batch order, with error bars when every point has an interval."""
    members.sort(key=lambda p: (p[0].spec.batch_size, p[0].id or 0))
    s = Series(name=name, panel=panel, colour_key=colour_key(members[0][0]))
    with_ci = all(metric.interval(r) for r, _ in members)
    err_minus: list[float] = []
    err_plus: list[float] = []
    for r, y in members:
        s.x.append(r.spec.batch_size)
        s.y.append(y)
        text = f"{y:,.1f} {metric.unit}"
        ci = metric.interval(r)
        if with_ci and ci:  # with_ci: every member has an interval
            low, high = ci
            # a stored interval need not hold its figure (an import checks it against the step
            # times only): a bar's length is never negative, which matplotlib refuses outright
            err_minus.append(max(0.0, y - low))
            err_plus.append(max(0.0, high - y))
            text += f" (95% CI {low:,.1f} to {high:,.1f})"
        s.hover.append(trial_hover(r, text))
    if with_ci:
        s.err_minus, s.err_plus = err_minus, err_plus
    return s


def knee_series(lines: Sequence[Series]) -> list[Series]:
    """Per panel, the knee of each line with two or more batch sizes: the smallest batch whose
    samples/s reach KNEE_FRACTION of the line's best (one legend entry for all panels)."""
    by_panel: dict[str | None, Series] = {}
    name = f"knee ({KNEE_FRACTION:.0%} of the line's best)"
    for s in lines:
        if len(set(s.x)) < 2:
            continue
        speeds = {b: y for b, y in zip(s.x, s.y)}
        batch, best = knee(speeds)
        mark = by_panel.setdefault(s.panel, Series(name=name, panel=s.panel, mark=True, colour=KNEE_COLOUR))
        mark.x.append(batch)
        mark.y.append(speeds[batch])
        mark.hover.append(hover_lines(f"knee of {s.name}: batch {batch}, {speeds[batch]:,.1f} samples/s",
                                      f"= {speeds[batch] / speeds[best]:.0%} of batch {best}'s {speeds[best]:,.1f}"))
    return list(by_panel.values())


def metric_chart(results: Sequence[Result], metric: Metric) -> Chart | None:
    """`metric` against batch size, one panel per workload and one line per configuration and
    run; None when no successful trial has the metric (e.g. GPU % on a CPU-only run)."""
    points = [(r, y) for r in speed_figures(results) if (y := metric.value(r)) is not None]
    if not points:
        return None
    # the panel names the network (its revision too), so the legend need not
    legend = Legend([r for r, _ in points], omit=("workload", "workload_revision"))
    by_line: dict[LineKey, list[tuple[Result, float]]] = defaultdict(list)
    for r, y in points:
        by_line[line_key(r)].append((r, y))
    series = [_series(members, metric, legend.label(members[0][0]), network_label(members[0][0]))
              for members in by_line.values()]
    if metric.id == "speed":
        series += knee_series(series)
    panels = sorted({s.panel for s in series if s.panel is not None})
    scales = {p: y_scale_for([y for s in series if s.panel == p for y in s.y]) for p in panels}
    return Chart(id=metric.id, title=f"{metric.title} against batch size", x_title="batch size",
                 y_title=metric.y_title, series=series, x_scale="log2", panels=panels,
                 panel_y_scales=scales, note=legend.constant())


def batch_charts(results: Sequence[Result]) -> list[Chart]:
    """Speed, CPU %, GPU %, host and GPU memory against batch size (those with data)."""
    return [c for c in (metric_chart(results, m) for m in METRICS) if c is not None]
