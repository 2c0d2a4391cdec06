"""The self-contained HTML report: chart specs (charts.py) drawn by plotly.js in the page.

plotly.js is embedded once; each chart's traces and layout travel as one JSON document in a
`<script type="application/json">` block that the page parses, so no user text ever
becomes JavaScript source. Everything else goes through jinja2 with autoescaping.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import jinja2
from markupsafe import Markup
from plotly.offline import get_plotlyjs

from rigbench import __version__
from rigbench.analysis.contention import BUSY_OTHERS_PCT, is_busy
from rigbench.analysis.summary import device_names_once, machines_once, summary_rows
from rigbench.analysis.trials import speed_figures
from rigbench.json_text import strict_json
from rigbench.reports.cells import interval, rate, unknown_mark
from rigbench.reports.chart_model import (
    COLOURS,
    DASHES,
    LOG_RANGE,
    PATTERNS,
    REFERENCE_DASHES,
    SYMBOLS,
    Chart,
    Series,
    panel_title,
    shown,
    wrap_note,
)
from rigbench.reports.charts import gather
from rigbench.reports.summary_table import machine_cards, summary_cells
from rigbench.spec import Result
from rigbench.textlimits import NAME_CHARS, clip_result, clip_value, visible


def _literal(value: Any) -> Any:
    """What the template prints of `value`: text with its control characters written out
    (textlimits.visible: a stored ESC as `\\x1b`, not a raw byte in the page), then escaped by
    autoescaping; Markup (plotly.js, the charts' JSON) as it is."""
    return visible(value) if isinstance(value, str) and not isinstance(value, Markup) else value


_env = jinja2.Environment(loader=jinja2.PackageLoader("rigbench.reports", "templates"),
                          autoescape=True, undefined=jinja2.StrictUndefined, finalize=_literal,
                          trim_blocks=True, lstrip_blocks=True)


def _trace(chart: Chart, s: Series, colour: str) -> dict[str, Any]:
    """One plotly.js trace for a series."""
    # plotly.js reads names and category labels as a small HTML subset: escape user text.
    x = [html.escape(str(v), quote=False) for v in s.x] if chart.x_scale == "category" else s.x
    name = html.escape(s.name, quote=False)
    trace: dict[str, Any] = {"name": name, "legendgroup": name, "x": x, "y": s.y, "text": s.hover,
                             "hovertemplate": "%{text}<extra></extra>"}
    if chart.kind == "bar":
        # the value on the bar; without a texttemplate plotly would print the hover text there
        # bars of one colour (one device and framework) differ by their fill's pattern
        pattern = {"pattern": {"shape": PATTERNS[s.style % len(PATTERNS)]}} if s.style else {}
        trace.update(type="bar", marker={"color": colour, **pattern},
                     texttemplate=f"%{{y:{chart.bar_format}}}{chart.bar_suffix}", textposition="outside",
                     cliponaxis=False)
    elif s.mark:  # highlighted points over the lines (the knee): large open diamonds
        trace.update(type="scatter", mode="markers",
                     marker={"size": 15, "symbol": "diamond-open", "color": s.colour or "#111111",
                             "line": {"width": 2}})
    elif chart.kind == "scatter" and s.dash:  # a line joining marked points: open rings around them
        trace.update(type="scatter", mode="lines+markers", line={"color": s.colour or "#999999", "dash": "dash"},
                     marker={"size": 14, "symbol": "circle-open", "color": s.colour or "#999999"})
    elif chart.kind == "scatter":
        trace.update(type="scatter", mode="markers",
                     marker={"size": 9, "color": colour, "symbol": SYMBOLS[s.style % len(SYMBOLS)]})
    else:
        dashes = REFERENCE_DASHES if s.dash else DASHES  # a reference line's style: its builder's
        trace.update(type="scatter", mode="lines" if s.dash else "lines+markers",
                     line={"color": s.colour or ("#999999" if s.dash else colour),
                           "dash": dashes[s.style % len(dashes)]},
                     marker={"size": 7, "symbol": SYMBOLS[s.style % len(SYMBOLS)]})
    if s.err_plus is not None:
        trace["error_y"] = {"type": "data", "symmetric": False, "array": s.err_plus,
                            "arrayminus": s.err_minus, "thickness": 1.2, "width": 4}
    return trace


def _axis(chart: Chart, series: Sequence[Series] | None = None) -> dict[str, Any]:
    """The x axis: batch sizes on a log2 scale with a tick at each measured value."""
    # automargin: long or rotated tick labels push the margin out instead of the title over them
    axis: dict[str, Any] = {"title": {"text": chart.x_title}, "zeroline": False, "automargin": True}
    if chart.x_scale == "log2":
        ticks = sorted({x for s in (chart.series if series is None else series) for x in s.x})
        axis.update(type="log", tickvals=ticks, ticktext=[str(t) for t in ticks])
    elif chart.x_scale == "category":
        axis.update(type="category")
    elif chart.x_scale == "log":
        axis.update(type="log")
    if chart.x_dtick is not None:
        axis.update(dtick=chart.x_dtick, tick0=chart.x_dtick)
    return axis


def _y_axis(chart: Chart, scale: str | None = None, series: Sequence[Series] | None = None) -> dict[str, Any]:
    """The y axis: from zero, or log-scaled with SI-prefixed ticks (1G, 10G, 100G): a label per
    decade where the values span one or more (the speed panels' log rule, LOG_RANGE); within
    less (a CPU's roofline points without ceilings, 1.0G to 4.8G) plotly's labels between decades
    too, where one per decade left one label on the axis, or none."""
    axis: dict[str, Any] = {"title": {"text": chart.y_title}, "automargin": True}
    if (scale or chart.y_scale) == "log":
        axis.update(type="log", exponentformat="SI")
        values = [y for s in (chart.series if series is None else series) for y in s.y if y and y > 0]
        if not values or max(values) > LOG_RANGE * min(values):
            axis.update(dtick=1)
    else:
        axis.update(rangemode="tozero")
    return axis


#: Small multiples: at most this many panels side by side, each this many pixels high.
PANEL_COLUMNS = 4
PANEL_HEIGHT = 250
#: The characters of bold 13 px panel titles across the page (about 32 a panel, 4 abreast).
PANEL_TITLE_CHARS = 130
#: The width a chart's legend wraps in, half-width and full-width (`Chart.wide`, panels): what
#: they have in a window 1,000 px wide; wider windows leave some room under the legend.
LEGEND_WIDTH_PX = 560
WIDE_LEGEND_WIDTH_PX = 880
#: A legend row's height as plotly draws it at the legend's 11 px font (measured in Chromium).
LEGEND_ROW_PX = 29
#: The characters of a subtitle line on a half-width chart (about 620 px at the screenshot's
#: 1400 px, 520 px at the narrowest grid column; 12 px text); a full-width chart's take twice
#: as many. Plotly does not wrap a subtitle: one longer line ran off the chart.
NOTE_CHARS = 85
#: Pixels a subtitle's each further line adds to the top margin.
NOTE_LINE_PX = 16


def _panel_layout(chart: Chart, data: list[dict[str, Any]], layout: dict[str, Any]) -> None:
    """Lay `data` out in one subplot per panel (a grid, PANEL_COLUMNS wide) with the panel's
    name above it, its own x ticks and y scale; axis titles once, on the outer panels."""
    columns = min(PANEL_COLUMNS, len(chart.panels))
    rows = -(-len(chart.panels) // columns)
    layout.update(grid={"rows": rows, "columns": columns, "pattern": "independent",
                        "xgap": 0.07, "ygap": 0.32 if rows > 1 else 0.2},
                  height=rows * PANEL_HEIGHT + 150)
    layout.pop("xaxis")
    layout.pop("yaxis")
    annotations = []
    for i, panel in enumerate(chart.panels):
        n = "" if i == 0 else str(i + 1)
        members = [s for s in chart.series if s.panel == panel]
        x, y = _axis(chart, members), _y_axis(chart, chart.panel_y_scales.get(panel), members)
        if i < len(chart.panels) - columns:  # not the bottom row: the x title once below
            x["title"] = {"text": ""}
        if i % columns:
            y["title"] = {"text": ""}
        layout[f"xaxis{n}"], layout[f"yaxis{n}"] = x, y
        title = panel_title(panel, PANEL_TITLE_CHARS // columns)
        annotations.append({"text": f"<b>{html.escape(title, quote=False)}</b>", "showarrow": False,
                            **({"hovertext": html.escape(panel, quote=False)} if title != panel else {}),
                            "xref": f"x{n} domain", "yref": f"y{n} domain", "x": 0.5, "y": 1.02,
                            "xanchor": "center", "yanchor": "bottom", "font": {"size": 13}})
        for trace, s in zip(data, chart.series):
            if s.panel == panel:
                trace.update(xaxis=f"x{n}", yaxis=f"y{n}")
    layout["annotations"] = annotations


def legend_rows(names: Sequence[str], width: int) -> int:
    """The rows a horizontal legend of `names` takes `width` px wide: each entry about 7 px a
    character and its symbol's, placed left to right, and one that does not fit in what is left
    of a row starting the next, as plotly wraps them. (Counting characters alone, 15 entries of
    50 characters made 11 rows where plotly drew 15, and the H200s' cnn energy legend scrolled.)"""
    rows, left = 0, 0
    for name in names:
        entry = (len(name) + 6) * 7
        if entry > left:
            rows, left = rows + 1, width
        left -= entry
    return rows


def plotly_figure(chart: Chart) -> dict[str, Any]:
    """`{"id", "data", "layout"}` for Plotly.newPlot."""
    chart = shown(chart)
    data = [_trace(chart, s, s.colour or COLOURS[i % len(COLOURS)]) for i, s in enumerate(chart.series)]
    seen: set[str] = set()
    for trace in data:  # one legend entry per name (a name recurs across panels and runs)
        trace["showlegend"] = trace["name"] not in seen
        seen.add(trace["name"])
    title: dict[str, Any] = {"text": chart.title, "font": {"size": 15}}
    note = wrap_note("same for every series: " + chart.note, NOTE_CHARS * (2 if chart.wide else 1)) if chart.note else []
    if note:
        title["subtitle"] = {"text": "<br>".join(html.escape(line, quote=False) for line in note),
                             "font": {"size": 12, "color": "#5b6475"}}
    layout: dict[str, Any] = {
        "title": title,
        "xaxis": _axis(chart), "yaxis": _y_axis(chart),
        "hovermode": "closest", "barmode": "group", "height": chart.height or 380,
        # the top margin leaves the title (and subtitle) clear of the toolbar, shown on hover
        "margin": {"l": 64, "r": 20, "t": 84 + NOTE_LINE_PX * (len(note) - 1) if note else 60, "b": 60},
        "paper_bgcolor": "#ffffff", "plot_bgcolor": "#fafafa",
    }
    if chart.panels:
        _panel_layout(chart, data, layout)
    layout["height"] += NOTE_LINE_PX * max(len(note) - 1, 0)  # the subtitle's lines take room, not the plot's
    # The legend below the plot area, in the margin made for it, so it never covers a point
    # nor scrolls: rows estimated from the names' length.
    rows = legend_rows([t["name"] for t in data if t["showlegend"]],
                       WIDE_LEGEND_WIDTH_PX if chart.wide or chart.panels else LEGEND_WIDTH_PX)
    layout["legend"] = {"orientation": "h", "x": 0, "xanchor": "left", "y": 0, "yanchor": "bottom",
                        "yref": "container", "font": {"size": 11},
                        "maxheight": 1}  # plotly's default, half the chart's height, scrolled a long legend
    layout["margin"]["b"] += LEGEND_ROW_PX * rows
    layout["height"] += LEGEND_ROW_PX * rows
    return {"id": chart.id, "data": data, "layout": layout}


def safe_json(value: Any) -> str:
    """JSON that cannot end the surrounding <script> block or open a comment in it, and that
    JSON.parse reads (no Infinity: json_text)."""
    return strict_json(value, separators=(",", ":")).replace("<", "\\u003c")


def _plotly_js() -> str:
    js = get_plotlyjs()
    # An embedded "</script" would close the block early; escaping the slash is harmless in JS.
    return js.replace("</script", "<\\/script")


def _trial_row(r: Result) -> dict[str, Any]:
    m = r.metrics
    speed = interval(m.samples_per_s, m.samples_per_s_ci) if m.samples_per_s else "-"
    return {"id": r.id, "run_id": r.run_id, "label": r.spec.label() + unknown_mark(r.spec.workload), "status": r.status,
            "speed": speed, "noisy": bool(m.noisy), "busy": is_busy(m), "error": r.error or "",
            "tokens": "" if m.tokens_per_s is None else f"{rate(m.tokens_per_s)} tokens/s",
            "created": r.created_at[:19].replace("T", " ")}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _num(value: float | None, fmt: str = "{:,.1f}") -> str:
    return "-" if value is None else fmt.format(value)


def _rate(value: float | None, unit: str) -> str:
    return "-" if value is None else f"{rate(value)} {unit}"


def _parallel_row(r: Result) -> dict[str, Any]:
    """A data-parallel trial's aggregation (analysis/ranks.py) and each rank's record."""
    m = r.metrics
    return {
        "id": r.id, "label": r.spec.label(), "processes": r.spec.world_size, "global_batch": m.global_batch,
        "speed": _trial_row(r)["speed"], "straggler": _num(m.straggler_ratio, "{:.2f}"), "comm": _pct(m.comm_share),
        # as results show rounds them: 0.0274 ms, not "0.0 ms" (one rank's all-reduce on an H200)
        "busbw": _rate(m.allreduce_busbw_gbs, "GB/s"), "allreduce": _rate(m.allreduce_grad_ms, "ms"),
        "rss": f"{_num(m.rank_rss_peak_mib_max, '{:,.0f}')} / {_num(m.rank_rss_peak_mib_sum, '{:,.0f}')}",
        "identical": {True: "yes", False: "NO", None: "-"}[m.replicas_identical],
        "ranks": [{"rank": k.rank, "host": k.host or "-", "status": k.status + (" (stopped)" if k.collateral else ""),
                   "step": _num(k.step_time_ms_mean, "{:.2f}"), "nosync": _num(k.nosync_step_time_ms_median, "{:.2f}"),
                   "comm": _pct(k.comm_share), "rss": _num(k.rss_peak_mib, "{:,.0f}"), "cpu": _num(k.cpu_util_pct)}
                  for k in r.ranks],
    }


def render(results: Sequence[Result], machines: dict[str, dict | None],
           filters: Sequence[str] = (), calibrations: dict[str, dict] | None = None,
           commands: dict[str, str] | None = None,
           recommendations: dict[str, str] | None = None) -> tuple[str, list[Chart]]:
    """The report page for `results` (machines: run id -> fingerprint or None; calibrations:
    device name -> latest calibration, for MFU and the roofline; commands: run id -> its
    command line; recommendations: workload -> `analysis.summary.recommendation_text`), and
    the charts it draws."""
    # stored text over textlimits' maxima (an old database, an old import) is shown clipped
    results = [clip_result(r) for r in results]
    machines = {run_id: clip_value(m, NAME_CHARS) for run_id, m in machines.items()}
    commands = {run_id: clip_value(c, NAME_CHARS) for run_id, c in (commands or {}).items()}
    sections = gather(results, calibrations, machines)
    charts = [c for _, cs in sections for c in cs]
    # the timing protocols of the speed trials the page draws: not a training run's or a
    # max-batch probe's (2 steps, 0 s), which the Method's protocol line does not describe
    protocols = sorted({(r.spec.measure.warmup_steps, r.spec.measure.min_steps, r.spec.measure.min_seconds)
                        for r in speed_figures(results)})
    summary = summary_cells(summary_rows(results, calibrations, recommendations, machines))
    entries = machines_once(results, machines)
    serials = set().union(*(e.gpu_serials for e in entries))
    listed = sum(len((e.fingerprint or {}).get("gpus") or []) for e in entries)
    page = _env.get_template("report.html.j2").render(
        version=__version__, generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        filters=list(filters), n_trials=len(results),
        n_ok=sum(r.status == "ok" for r in results),
        workloads=sorted({r.spec.workload for r in results}),
        devices=device_names_once(results, machines),  # by model: an H100's and an H200's are both cuda:0
        summary=summary, any_recommendation=any(row["recommendation"] for row in summary),
        # a page whose every headline ran on the CPU would read "1.00× (the CPU is fastest)" per row
        any_speedup=not all(row["on_cpu"] for row in summary),
        sections=sections, machines=machine_cards(entries, results, commands),
        gpu_serials=len(serials) if len(serials) > listed else 0,
        n_runs=len(machines), protocols=protocols, busy_pct=f"{BUSY_OTHERS_PCT:g}",
        n_busy=sum(is_busy(r.metrics) for r in results),
        trials=[_trial_row(r) for r in results],
        failed=[_trial_row(r) for r in results if r.status != "ok"],
        parallel=[_parallel_row(r) for r in results if r.ranks],
        plotly_js=Markup(_plotly_js()),
        chart_json=Markup(safe_json([plotly_figure(c) for c in charts])),
    )
    return page, charts
