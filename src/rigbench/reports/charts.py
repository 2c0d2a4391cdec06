"""Results -> chart specifications, independent of how they are drawn.

The HTML report (`html.py`, plotly) and the PNG export (`png.py`, matplotlib) draw the same
`Chart` objects (`chart_model.py`), so both always show the same numbers; the training-run
charts are in `training_charts.py`. Nothing here imports an optional
dependency. A section whose builders return no chart is left out of the page: charts for
data that does not exist yet (accuracy curves, rooflines) are never drawn empty; they are
added later as another `Section` with its own builders.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rigbench.analysis.roofline import Roof, mfu_warning, result_roofline
from rigbench.analysis.scaling import speed
from rigbench.analysis.speedups import speedups_over_cpu
from rigbench.reports.chart_model import Chart, Section, Series, hover_lines, workload_name
from rigbench.reports.energy_charts import energy_charts
from rigbench.reports.training_charts import epoch_curve_charts, train_knob_charts
from rigbench.reports.trial_lines import (
    LineKey,
    line_key,
    line_namer,
    speed_trials,
    trial_hover,
    trial_threads,
    variant_label,
)
from rigbench.spec import Result


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


def metric_chart(results: Sequence[Result], metric: Metric) -> Chart | None:
    """`metric` against batch size, one line per workload/framework/device; None when no
    successful trial has the metric (e.g. GPU % on a CPU-only run)."""
    points = [(r, y) for r in speed_trials(results) if (y := metric.value(r)) is not None]
    if not points:
        return None
    name = line_namer([r for r, _ in points])
    by_line: dict[LineKey, list[tuple[Result, float]]] = defaultdict(list)
    for r, y in points:
        by_line[line_key(r)].append((r, y))
    series = []
    for key, members in by_line.items():
        members.sort(key=lambda p: (p[0].spec.batch_size, p[0].id or 0))
        s = Series(name=name(key))
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
                err_minus.append(y - low)
                err_plus.append(high - y)
                text += f" (95% CI {low:,.1f} to {high:,.1f})"
            s.hover.append(trial_hover(r, text))
        if with_ci:
            s.err_minus, s.err_plus = err_minus, err_plus
        series.append(s)
    return Chart(id=metric.id, title=f"{metric.title} against batch size", x_title="batch size",
                 y_title=metric.y_title, series=series, x_scale="log2")


def batch_charts(results: Sequence[Result]) -> list[Chart]:
    """Speed, CPU %, GPU %, host and GPU memory against batch size (those with data)."""
    return [c for c in (metric_chart(results, m) for m in METRICS) if c is not None]


def speedup_charts(results: Sequence[Result]) -> list[Chart]:
    """Each device's samples/s over the CPU's, per workload and batch size (bars)."""
    rows = speedups_over_cpu(speed_trials(results))
    if not rows:
        return []
    precisions = {row["precision"] for row in rows}
    by_device: dict[str, Series] = {}
    for row in rows:
        name = row["device"] + (f" · {row['precision']}" if len(precisions) > 1 else "")
        s = by_device.setdefault(name, Series(name=name))
        s.x.append(f"{row['workload']} b{row['batch_size']}")
        s.y.append(row["speedup"])
        s.hover.append(hover_lines(f"{row['speedup']:.2f}x the CPU's samples/s",
                                   f"{row['workload']} b{row['batch_size']} {row['precision']}",
                                   f"{row['device']} vs cpu"))
    return [Chart(id="speedup_cpu", title="Speed-up over the CPU", x_title="workload and batch size",
                  y_title="× CPU samples/s", series=list(by_device.values()), kind="bar",
                  x_scale="category")]


def _pairs(results: Sequence[Result], group: Callable[[Result], tuple],
           vary: Callable[[Result], Any], base: Any) -> list[tuple[tuple, Result, Result]]:
    """(group, result, baseline) for each successful trial whose `vary` is not `base` and
    that has a successful baseline trial (same group, `vary` == `base`); the newest
    baseline wins when there are several."""
    ok = speed_trials(results)
    baselines = {group(r): r for r in ok if vary(r) == base}
    return [(group(r), r, baselines[group(r)]) for r in ok
            if vary(r) not in (base, None) and group(r) in baselines]


def _speedup(r: Result, baseline: Result) -> float:
    return speed(r) / speed(baseline)  # both from speed_trials: samples/s set and non-zero


def precision_charts(results: Sequence[Result]) -> list[Chart]:
    """bf16/fp16 samples/s over fp32's for the same workload, device, batch and threads."""
    pairs = _pairs(results, lambda r: (workload_name(r), r.spec.framework, r.spec.device,
                                       r.spec.batch_size, trial_threads(r), variant_label(r)),
                   lambda r: r.spec.precision, "fp32")
    if not pairs:
        return []
    by_precision: dict[str, Series] = {}
    for (workload, _framework, device, batch, _, variant), r, base in pairs:
        s = by_precision.setdefault(r.spec.precision, Series(name=r.spec.precision))
        s.x.append(f"{workload} {device} b{batch}" + (f" {variant}" if variant else ""))
        s.y.append(_speedup(r, base))
        s.hover.append(trial_hover(r, f"{_speedup(r, base):.2f}x fp32's samples/s "
                                      f"(trial {base.id})"))
    return [Chart(id="precision", title="Speed-up over fp32", x_title="workload, device, batch",
                  y_title="× fp32 samples/s", series=list(by_precision.values()), kind="bar",
                  x_scale="category")]


def thread_charts(results: Sequence[Result]) -> list[Chart]:
    """samples/s over the 1-thread trial's, against threads, with the ideal linear line."""
    pairs = _pairs(results, lambda r: (workload_name(r), r.spec.framework, r.spec.device,
                                       r.spec.batch_size, r.spec.precision, variant_label(r)),
                   trial_threads, 1)
    if not pairs:
        return []
    by_group: dict[tuple, Series] = {}
    for key, r, base in sorted(pairs, key=lambda p: (p[0], trial_threads(p[1]))):
        workload, framework, device, batch, precision, variant = key
        s = by_group.get(key)
        if s is None:
            name = f"{workload} · {framework} · {device} · b{batch} · {precision}" + (f" · {variant}" if variant else "")
            s = by_group[key] = Series(name=name,
                                       x=[1], y=[1.0], hover=[trial_hover(base, "1.00x (baseline)")])
        s.x.append(trial_threads(r))
        s.y.append(_speedup(r, base))
        s.hover.append(trial_hover(r, f"{_speedup(r, base):.2f}x the 1-thread samples/s"))
    # a point at every measured count: on the log x axis a two-point line would not be y = x
    counts = sorted({x for s in by_group.values() for x in s.x})
    ideal = Series(name="ideal (linear)", x=counts, y=[float(n) for n in counts],
                   hover=[hover_lines(f"ideal: {n}x") for n in counts], dash=True)
    return [Chart(id="threads", title="Thread scaling", x_title="threads",
                  y_title="× 1-thread samples/s", series=[*by_group.values(), ideal], x_scale="log2")]


def compile_layout_charts(results: Sequence[Result]) -> list[Chart]:
    """torch.compile over eager and channels-last over the contiguous layout, for otherwise
    identical trials (bars, one series per knob)."""
    series: dict[str, Series] = {}
    for knob, name in (("compile", "compile"), ("channels_last", "channels-last")):
        def rest(r: Result, knob: str = knob) -> tuple:
            other = "channels_last" if knob == "compile" else "compile"
            return (workload_name(r), r.spec.framework, r.spec.device, r.spec.batch_size,
                    r.spec.precision, trial_threads(r), getattr(r.spec, other))
        def flag(r: Result, knob: str = knob) -> Any:
            return getattr(r.spec, knob)
        for (workload, _, device, batch, precision, *_), r, base in _pairs(results, rest, flag, False):
            s = series.setdefault(name, Series(name=name))
            s.x.append(f"{workload} {device} b{batch} {precision}")
            s.y.append(_speedup(r, base))
            s.hover.append(trial_hover(r, f"{_speedup(r, base):.2f}x the samples/s without {name} "
                                          f"(trial {base.id})"))
    if not series:
        return []
    return [Chart(id="compile_layout", title="Speed-up of torch.compile and channels-last",
                  x_title="workload, device, batch, precision", y_title="× samples/s without it",
                  series=list(series.values()), kind="bar", x_scale="category")]


# --------------------------------------------------------------------------- roofline

#: Ceiling colours: spec-sheet roofs dark, calibrated (measured here) roofs light.
ROOF_COLOURS = {"spec": "#333333", "calibrated": "#b0b0b0"}


def _roof_series(source: str, device: str, precision: str, peak: float | None,
                 bandwidth: float | None, lo: float, hi: float) -> Series | None:
    """The ceiling min(peak, x * bandwidth) over [lo, hi] as a dashed line (a flat or
    diagonal line when only one of them is known)."""
    if peak is None and bandwidth is None:
        return None
    xs = [lo, hi]
    if peak is not None and bandwidth is not None and lo < peak / bandwidth < hi:
        xs = [lo, peak / bandwidth, hi]  # the ridge point
    ys = [min(v for v in (peak, None if bandwidth is None else x * bandwidth) if v is not None) for x in xs]
    label = "spec sheet" if source == "spec" else "calibrated"
    what = ", ".join(t for t in (f"peak {peak / 1e12:.3g} TFLOP/s" if peak else "",
                                 f"bandwidth {bandwidth / 1e9:.3g} GB/s" if bandwidth else "") if t)
    return Series(name=f"{label} roof · {device} · {precision}", x=xs, y=ys, dash=True,
                  colour=ROOF_COLOURS[source],
                  hover=[hover_lines(f"{label} ceiling {y / 1e12:.3g} TFLOP/s at {x:.3g} FLOP/byte",
                                     f"{device} {precision}: {what}") for x, y in zip(xs, ys)])


def roofline_charts(results: Sequence[Result], calibrations: dict[str, dict[str, Any]]) -> list[Chart]:
    """Achieved FLOP/s against arithmetic intensity on log-log axes, one line per
    workload/framework/device (points in batch order), and each device's ceilings."""
    points = []
    for r in speed_trials(results):
        roof = result_roofline(r, calibrations.get(r.device_name or ""))
        if roof.achieved_flops and roof.intensity:
            points.append((r, roof, roof.intensity, roof.achieved_flops))
    if not points:
        return []
    name = line_namer([r for r, *_ in points])
    by_line: dict[LineKey, Series] = {}
    for r, roof, intensity, flops in sorted(points, key=lambda p: (p[0].spec.batch_size, p[0].id or 0)):
        s = by_line.setdefault(line_key(r), Series(name=name(line_key(r))))
        s.x.append(intensity)
        s.y.append(flops)
        mfu = [f"MFU {src.mfu:.1%} of the {src.source} {r.spec.precision} peak"
               for src in (roof.spec, roof.calibrated) if src is not None and src.mfu is not None]
        s.hover.append(trial_hover(r, f"{flops / 1e12:.3g} TFLOP/s at "
                                      f"{intensity:.3g} FLOP/byte" + (" · " + "; ".join(mfu) if mfu else ""))
                       + "".join("<br>" + hover_lines(f"WARNING: {w}") for w in roof.warnings))
    roofs: dict[tuple[str, str, str], tuple[float | None, float | None]] = {}
    worst: dict[tuple[str, str, str], Roof] = {}  # the highest MFU above 100% per roof
    for r, roof, *_ in points:
        for src in (roof.spec, roof.calibrated):
            if src is None or src.mfu is None or not mfu_warning(src, r.spec.precision):
                continue
            key = (r.device_name or r.spec.device, r.spec.precision, src.source)
            if key not in worst or src.mfu > (worst[key].mfu or 0.0):
                worst[key] = src
    for r, roof, *_ in points:
        for src in (roof.spec, roof.calibrated):
            if src is not None:
                roofs[(src.source, r.device_name or r.spec.device, r.spec.precision)] = (src.peak_flops, src.bandwidth_bytes_s)
    xs = [intensity for _, _, intensity, _ in points] + [p / b for p, b in roofs.values() if p and b]
    lo, hi = min(xs) / 4, max(xs) * 4
    ceilings = [c for (source, device, precision), (peak, bw) in sorted(roofs.items())
                if (c := _roof_series(source, device, precision, peak, bw, lo, hi)) is not None]
    # An MFU above 100% is stated on the chart itself, not only in a hover: the roof is wrong.
    warnings = "; ".join(f"{device}: {mfu_warning(src, precision)}" for (device, precision, _), src in sorted(worst.items()))
    return [Chart(id="roofline", title="Roofline: achieved FLOP/s against arithmetic intensity"
                  + (f" · WARNING: {warnings}" if warnings else ""),
                  x_title="arithmetic intensity (FLOP per byte, estimated traffic)",
                  y_title="achieved FLOP/s (counted FLOPs)", series=[*by_line.values(), *ceilings],
                  x_scale="log", y_scale="log")]


SECTIONS: tuple[Section, ...] = (
    Section("batch", "Speed and resources against batch size",
            "One line per workload, framework and device. Error bars on speed are the "
            "bootstrap 95% confidence interval of the median step time. Failed trials are "
            "not drawn; they are listed at the end.", (batch_charts,)),
    Section("speedup", "Speed-up over the CPU",
            "Each device's samples/s divided by the CPU's for the same workload, batch size "
            "and precision.", (speedup_charts,)),
    Section("scaling", "Precision, thread, compile and layout scaling",
            "Reduced precision (tf32, bf16, fp16) over fp32, more threads over one, torch.compile "
            "over eager and channels-last over the default layout, each for otherwise identical "
            "trials (`rigbench scaling`).", (precision_charts, thread_charts, compile_layout_charts)),
    Section("energy", "Energy",
            "Measured energy per sample (GPU counter, RAPL: see energy_method in each trial), per "
            "workload: against batch size, one line per device, precision and framework; and "
            "against training speed, where the dashed Pareto front joins the trials that no other "
            "trial beats on both speed and energy per sample. Only trials whose energy was "
            "measured are drawn; estimates never are.", (energy_charts,)),
    Section("training", "Training on real data",
            "Runs of `rigbench train`: held-out accuracy after the last epoch and training time "
            "to the target accuracy (evaluation excluded) against learning rate and batch size, "
            "and the loss and accuracy of every epoch.", (train_knob_charts, epoch_curve_charts)),
    Section("roofline", "Roofline",
            "Achieved training FLOP/s (counted FLOPs x samples/s) against arithmetic intensity "
            "(counted FLOPs per estimated byte moved, see docs/COMPARING.md), with each device's "
            "ceilings: min(peak, intensity x memory bandwidth) from the spec sheet (dark) and "
            "from `rigbench calibrate` (light), where known.", (roofline_charts,),
            uses_calibrations=True),
    # Published comparisons go here as a new Section once results carry their data; until
    # then it must not appear at all.
)


def gather(results: Sequence[Result], calibrations: dict[str, dict[str, Any]] | None = None,
           ) -> list[tuple[Section, list[Chart]]]:
    """The sections that have at least one chart, with their charts, in page order.
    `calibrations`: device name -> its latest calibration (store/calibrations.device_calibrations)."""
    out = []
    for section in SECTIONS:
        extra = (calibrations or {},) if section.uses_calibrations else ()
        charts = [chart for build in section.builders for chart in build(results, *extra)]
        if charts:
            out.append((section, charts))
    return out
