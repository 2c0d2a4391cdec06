"""Speed-up charts over a baseline: the GPU:CPU ratio per workload beside the published ones
(seed 003's Table 5 and Figures, Shi et al. 2016), and reduced precision, threads,
torch.compile and channels-last over their defaults for otherwise identical trials.

A device is its id, model and machine (analysis/trials.device_key): an H100's and an H200's
trials are both `cuda:0`, and each GPU is a bar (or line) of its own, named by its model
(analysis/device_names.DeviceNames). A bar chart's series is one variant on one device and
framework, named by the variant and by those of framework and device that vary in the chart
(trial_lines.Legend's rule), coloured as that device and framework are on the whole page;
its bars stand at their configuration's label, never two at one label (plotly stacks the bars of
one trace at one category: torch's, JAX's and Keras's bf16 over fp32 once read as one bar)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from statistics import median
from typing import Any, NamedTuple

from rigbench.analysis.device_names import DeviceNames
from rigbench.analysis.published_ratios import published_gpu_cpu_ratios
from rigbench.analysis.speedups import speedups_over_cpu
from rigbench.analysis.trials import Machines, RunSpeed, device_key, newest_run_speeds, speed_figures
from rigbench.reports.chart_model import Chart, Series, hover_lines, workload_name, y_scale_for
from rigbench.reports.trial_lines import trial_hover, trial_threads, variant_label
from rigbench.spec import Result

#: Published bars are grey, so this machine's (coloured as its device everywhere) stand out.
PUBLISHED_COLOURS = ("#7f7f7f", "#b0b0b0", "#595959", "#c9c9c9", "#959595", "#404040")
#: How a bar's legend names each published source (analysis/published.SOURCES cites them fully).
PUBLISHED_LABELS = {"yin2020": "Yin 2020", "shi2016": "Shi et al. 2016", "community": "community"}


def speedup_charts(results: Sequence[Result], machines: Machines | None = None) -> list[Chart]:
    """Per workload, each device's samples/s over the CPU's for the same configuration (the
    median over the configurations measured on both, the range as error bars; with `machines`,
    run id -> fingerprint, the CPU of the device's own machine only), and beside it each
    published GPU:CPU ratio of the workload's closest published network."""
    rows = speedups_over_cpu(speed_figures(results), machines)
    if not rows:
        return []
    workloads = sorted({row["workload_label"] for row in rows})
    ours: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    frameworks = {row["framework"] for row in rows}
    for row in rows:
        device = f"{row['device_label']} · {row['framework']}"
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
           vary: Callable[[Result], Any], base: Any,
           machines: Machines | None) -> list[tuple[tuple, RunSpeed, RunSpeed]]:
    """(group, configuration, baseline) for each configuration whose `vary` is not `base` and
    whose group has a baseline (`vary` == `base`), on one device (`device_key`, added to every
    group here). Each is its newest run's successful trials (`newest_run_speeds`): repeats count
    together, as in `rigbench scaling`."""
    configs = newest_run_speeds(speed_figures(results),
                                lambda r: ((*group(r), device_key(r, machines)), vary(r)))
    baselines = {g: side for (g, v), side in configs.items() if v == base}
    return [(g, side, baselines[g]) for (g, v), side in configs.items()
            if v not in (base, None) and g in baselines]


def _speedup(side: RunSpeed, baseline: RunSpeed) -> float:
    return side.samples_per_s / baseline.samples_per_s  # both from speed_figures: samples/s set and non-zero


def _add_bar(s: Series, x: Any, side: RunSpeed, baseline: RunSpeed, what: str) -> None:
    """One point of a speed-up series: the ratio of the two means, with error bars from the
    slowest trial over the fastest baseline trial to the fastest over the slowest where either
    side has repeats (zero-length where neither has), and the trials named in the hover."""
    ratio = _speedup(side, baseline)
    low, high = min(side.speeds) / max(baseline.speeds), max(side.speeds) / min(baseline.speeds)
    s.x.append(x)
    s.y.append(ratio)
    s.err_minus = [*(s.err_minus or []), ratio - low]
    s.err_plus = [*(s.err_plus or []), high - ratio]
    text = f"{ratio:.2f}x {what}"
    if len(side.trials) > 1 or len(baseline.trials) > 1:
        text += (f" (mean of {len(side.trials)} over mean of {len(baseline.trials)}; "
                 f"trials {low:.2f}x to {high:.2f}x)")
    s.hover.append(trial_hover(side.newest, f"{text}; baseline trial(s) {_ids(baseline)}"))


def _ids(side: RunSpeed) -> str:
    return ", ".join(map(str, side.ids)) or "-"


class _Bar(NamedTuple):
    """One bar of a speed-up chart: its variant (bf16, compile), framework and device (its
    series), its label, and the ratio."""

    variant: str
    framework: str
    device: str
    x: str
    threads: int | None
    side: RunSpeed
    base: RunSpeed
    what: str


def _bar_series(bars: Sequence[_Bar]) -> list[Series]:
    """One series per variant, framework and device, named by the variant and by the framework
    and device where the chart has more than one (legends name only what varies); its bars at
    their labels. Where two bars of one series would share a label (the same configuration at
    two thread counts), every label of the chart names the threads too. No error bars where no
    bar has repeats (`_bars`)."""
    several_frameworks = len({b.framework for b in bars}) > 1
    several_devices = len({b.device for b in bars}) > 1

    def name(b: _Bar) -> str:
        return " · ".join([b.variant, *([b.framework] if several_frameworks else []),
                           *([b.device] if several_devices else [])])

    labels = [b.x for b in bars]
    if len({(name(b), b.x) for b in bars}) < len(bars):
        labels = [b.x + (f" t{b.threads}" if b.threads is not None else "") for b in bars]
    series: dict[str, Series] = {}
    for bar, label in zip(bars, labels, strict=True):
        s = series.setdefault(name(bar), Series(name=name(bar), colour_key=f"{bar.device} · {bar.framework}"))
        _add_bar(s, label, bar.side, bar.base, bar.what)
    return _bars(series.values())


def _bars(series: Iterable[Series]) -> list[Series]:
    """The series, without error bars where every point's are zero (no repeats anywhere)."""
    shown = list(series)
    for s in shown:
        if not any((s.err_minus or []) + (s.err_plus or [])):
            s.err_minus = s.err_plus = None
    return shown


def precision_charts(results: Sequence[Result], machines: Machines | None = None) -> list[Chart]:
    """bf16/fp16 samples/s over fp32's for the same workload, framework, device, batch and
    threads: a series per precision, framework and device, its bars at workload and batch."""
    pairs = _pairs(results, lambda r: (workload_name(r), r.spec.framework, r.spec.batch_size, trial_threads(r),
                                       variant_label(r)), lambda r: r.spec.precision, "fp32", machines)
    if not pairs:
        return []
    names = DeviceNames(speed_figures(results), machines)
    bars = []
    for (workload, framework, batch, threads, variant, _), side, base in pairs:
        device = names(side.newest)
        bars.append(_Bar(side.newest.spec.precision, framework, device, f"{workload} b{batch}" + (f" {variant}" if variant else ""), threads, side, base,
                         "fp32's samples/s"))
    return [Chart(id="precision", title="Speed-up over fp32", x_title="workload and batch",
                  y_title="× fp32 samples/s", series=_bar_series(bars), kind="bar", x_scale="category")]


def thread_charts(results: Sequence[Result], machines: Machines | None = None) -> list[Chart]:
    """samples/s over the 1-thread trial's, against threads, with the ideal linear line."""
    pairs = _pairs(results, lambda r: (workload_name(r), r.spec.framework, r.spec.batch_size, r.spec.precision,
                                       variant_label(r)), trial_threads, 1, machines)
    if not pairs:
        return []
    names = DeviceNames(speed_figures(results), machines)
    by_group: dict[tuple, Series] = {}
    for key, side, base in sorted(pairs, key=lambda p: (p[0][:-1], names(p[1].newest),
                                                         trial_threads(p[1].newest) or 0)):
        workload, framework, batch, precision, variant, _ = key
        device = names(side.newest)
        s = by_group.get(key)
        if s is None:
            name = f"{workload} · {framework} · {device} · b{batch} · {precision}" + (f" · {variant}" if variant else "")
            # the baseline's own point: 1 by definition, its trials' spread around their mean
            mean = base.samples_per_s
            s = by_group[key] = Series(name=name, x=[1], y=[1.0], err_minus=[1 - min(base.speeds) / mean],
                                       err_plus=[max(base.speeds) / mean - 1],
                                       hover=[trial_hover(base.newest, f"1.00x (baseline; trials {_ids(base)})")])
        _add_bar(s, trial_threads(side.newest), side, base, "the 1-thread samples/s")
    # a point at every measured count: on the log x axis a two-point line would not be y = x
    counts = sorted({x for s in by_group.values() for x in s.x})
    ideal = Series(name="ideal (linear)", x=counts, y=[float(n) for n in counts],
                   hover=[hover_lines(f"ideal: {n}x") for n in counts], dash=True)
    return [Chart(id="threads", title="Thread scaling", x_title="threads",
                  y_title="× 1-thread samples/s", series=[*_bars(by_group.values()), ideal], x_scale="log2")]


def compile_layout_charts(results: Sequence[Result], machines: Machines | None = None) -> list[Chart]:
    """torch.compile over eager and channels-last over the contiguous layout, for otherwise
    identical trials (bars: one series per compile mode, and one for channels-last, on each
    framework and device)."""
    names = DeviceNames(speed_figures(results), machines)
    bars = []
    for knob, off in (("compile", "off"), ("channels_last", False)):
        other = "channels_last" if knob == "compile" else "compile"
        def rest(r: Result, other: str = other) -> tuple:
            return (workload_name(r), r.spec.framework, r.spec.batch_size, r.spec.precision, trial_threads(r),
                    getattr(r.spec, other))
        def flag(r: Result, knob: str = knob) -> Any:
            return getattr(r.spec, knob)
        for (workload, framework, batch, precision, threads, _, _), side, base in _pairs(results, rest, flag, off,
                                                                                         machines):
            # each compile mode against eager is a series of its own, as each precision is; the
            # other knob's setting, where it is on, names the bar's configuration
            name = side.newest.spec.compile_label if knob == "compile" else "channels-last"
            on = ("channels-last" if side.newest.spec.channels_last else "") if knob == "compile" \
                else (side.newest.spec.compile_label if side.newest.spec.compiled else "")
            device = names(side.newest)
            bars.append(_Bar(name, framework, device, f"{workload} b{batch} {precision}" + (f" {on}" if on else ""), threads, side, base,
                             f"the samples/s without {name}"))
    if not bars:
        return []
    return [Chart(id="compile_layout", title="Speed-up of torch.compile and channels-last",
                  x_title="workload, batch, precision", y_title="× samples/s without it",
                  series=_bar_series(bars), kind="bar", x_scale="category")]


