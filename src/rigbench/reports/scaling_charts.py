"""Speed-up charts over a baseline: the GPU:CPU ratio per workload beside the published ones
(seed 003's Table 5 and Figures, Shi et al. 2016), and reduced precision, threads,
torch.compile and channels-last over their defaults for otherwise identical trials."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from statistics import median
from typing import Any

from rigbench.analysis.published_ratios import published_gpu_cpu_ratios
from rigbench.analysis.scaling import speed
from rigbench.analysis.speedups import speedups_over_cpu
from rigbench.reports.chart_model import Chart, Series, hover_lines, workload_name, y_scale_for
from rigbench.reports.trial_lines import speed_trials, trial_hover, trial_threads, variant_label
from rigbench.spec import Result

#: Published bars are grey, so this machine's (coloured as its device everywhere) stand out.
PUBLISHED_COLOURS = ("#7f7f7f", "#b0b0b0", "#595959", "#c9c9c9", "#959595", "#404040")
#: How a bar's legend names each published source (analysis/published.SOURCES cites them fully).
PUBLISHED_LABELS = {"yin2020": "Yin 2020", "shi2016": "Shi et al. 2016", "community": "community"}


def speedup_charts(results: Sequence[Result]) -> list[Chart]:
    """Per workload, each device's samples/s over the CPU's for the same configuration (the
    median over the configurations measured on both, the range as error bars), and beside it
    each published GPU:CPU ratio of the workload's closest published network."""
    rows = speedups_over_cpu(speed_trials(results))
    if not rows:
        return []
    workloads = sorted({row["workload_label"] for row in rows})
    ours: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    frameworks = {row["framework"] for row in rows}
    for row in rows:
        device = f"{row['device_name'] or row['device']} · {row['framework']}"
        ours[device][row["workload_label"]].append(row)
    series = []
    for device, by_workload in ours.items():
        # the colour of this device and framework everywhere on the page
        s = Series(name=device if len(frameworks) > 1 else device.rsplit(" · ", 1)[0],
                   err_minus=[], err_plus=[], colour_key=device)
        for workload in workloads:
            found = [row["speedup"] for row in by_workload.get(workload, [])]
            if not found:
                continue
            mid = median(found)
            s.x.append(workload)
            s.y.append(mid)
            s.err_minus.append(mid - min(found))  # type: ignore[union-attr]
            s.err_plus.append(max(found) - mid)  # type: ignore[union-attr]
            s.hover.append(hover_lines(
                f"{mid:.2f}x the CPU's samples/s (median of {len(found)})", f"{workload}: {device} vs cpu",
                *(f"b{row['batch_size']} {row['precision']}: {row['speedup']:.2f}x (trial {row['trial']} "
                  f"vs {row['base_trial']})" for row in by_workload[workload])))
        series.append(s)
    published = [p for p in published_gpu_cpu_ratios() if p.workload in workloads]
    by_source: dict[tuple[str, str], Series] = {}
    for p in published:
        key = (p.source, p.gpu)
        colour = PUBLISHED_COLOURS[len(by_source) % len(PUBLISHED_COLOURS)]
        s = by_source.get(key) or by_source.setdefault(key, Series(
            name=f"{PUBLISHED_LABELS.get(p.source, p.source)}: {p.gpu}", err_minus=[], err_plus=[], colour=colour))
        s.x.append(p.workload)
        s.y.append(p.ratio)
        s.err_minus.append(p.ratio - p.low)  # type: ignore[union-attr]
        s.err_plus.append(p.high - p.ratio)  # type: ignore[union-attr]
        s.hover.append(hover_lines(f"published {p.ratio:.2f}x (median of {len(p.pairs)}; "
                                   f"{p.low:.1f}x to {p.high:.1f}x)", f"{p.gpu} over {p.cpu}",
                                   f"{p.network} ({p.closeness} as {p.workload})", p.citation, *p.pairs))
    series += by_source.values()
    return [Chart(id="speedup_cpu", title="GPU:CPU speed-up per workload, ours beside the published",
                  x_title="workload", y_title="× CPU samples/s (median; bars: range)", series=series,
                  kind="bar", x_scale="category", y_scale=y_scale_for([y for s in series for y in s.y]))]


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


