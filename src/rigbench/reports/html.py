"""The self-contained HTML report: chart specs (charts.py) drawn by plotly.js in the page.

plotly.js is embedded once; each chart's traces and layout travel as one JSON document in a
`<script type="application/json">` block that the page parses, so no user text ever
becomes JavaScript source. Everything else goes through jinja2 with autoescaping.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import jinja2
from markupsafe import Markup
from plotly.offline import get_plotlyjs

from rigbench import __version__
from rigbench.reports.chart_model import COLOURS, Chart, Series
from rigbench.reports.charts import gather
from rigbench.reports.terminal import unknown_mark
from rigbench.spec import Result
from rigbench.textlimits import NAME_CHARS, clip_result, clip_value
from rigbench.units import format_bytes

_env = jinja2.Environment(loader=jinja2.PackageLoader("rigbench.reports", "templates"),
                          autoescape=True, undefined=jinja2.StrictUndefined,
                          trim_blocks=True, lstrip_blocks=True)


def _trace(chart: Chart, s: Series, colour: str) -> dict[str, Any]:
    """One plotly.js trace for a series."""
    # plotly.js reads names and category labels as a small HTML subset: escape user text.
    x = [html.escape(str(v), quote=False) for v in s.x] if chart.x_scale == "category" else s.x
    trace: dict[str, Any] = {"name": html.escape(s.name, quote=False), "x": x, "y": s.y, "text": s.hover,
                             "hovertemplate": "%{text}<extra></extra>"}
    if chart.kind == "bar":
        # the value on the bar; without a texttemplate plotly would print the hover text there
        trace.update(type="bar", marker={"color": colour}, texttemplate="%{y:.2f}×",
                     textposition="outside", cliponaxis=False)
    elif chart.kind == "scatter" and s.dash:  # a line joining marked points: open rings around them
        trace.update(type="scatter", mode="lines+markers", line={"color": s.colour or "#999999", "dash": "dash"},
                     marker={"size": 14, "symbol": "circle-open", "color": s.colour or "#999999"})
    elif chart.kind == "scatter":
        trace.update(type="scatter", mode="markers", marker={"size": 9, "color": colour})
    else:
        trace.update(type="scatter", mode="lines" if s.dash else "lines+markers",
                     line={"color": s.colour or ("#999999" if s.dash else colour),
                           "dash": "dash" if s.dash else "solid"},
                     marker={"size": 7})
    if s.err_plus is not None:
        trace["error_y"] = {"type": "data", "symmetric": False, "array": s.err_plus,
                            "arrayminus": s.err_minus, "thickness": 1.2, "width": 4}
    return trace


def _axis(chart: Chart) -> dict[str, Any]:
    """The x axis: batch sizes on a log2 scale with a tick at each measured value."""
    axis: dict[str, Any] = {"title": {"text": chart.x_title}, "zeroline": False}
    if chart.x_scale == "log2":
        ticks = sorted({x for s in chart.series for x in s.x})
        axis.update(type="log", tickvals=ticks, ticktext=[str(t) for t in ticks])
    elif chart.x_scale == "category":
        axis.update(type="category")
    elif chart.x_scale == "log":
        axis.update(type="log")
    return axis


def _y_axis(chart: Chart) -> dict[str, Any]:
    """The y axis: from zero, or log-scaled with SI-prefixed ticks (1G, 10G, 100G)."""
    axis: dict[str, Any] = {"title": {"text": chart.y_title}}
    if chart.y_scale == "log":
        axis.update(type="log", exponentformat="SI")
    else:
        axis.update(rangemode="tozero")
    return axis


def plotly_figure(chart: Chart) -> dict[str, Any]:
    """`{"id", "data", "layout"}` for Plotly.newPlot."""
    data = [_trace(chart, s, COLOURS[i % len(COLOURS)]) for i, s in enumerate(chart.series)]
    layout = {
        "title": {"text": chart.title, "font": {"size": 15}},
        "xaxis": _axis(chart), "yaxis": _y_axis(chart),
        "hovermode": "closest", "barmode": "group", "height": 380,
        "margin": {"l": 60, "r": 20, "t": 48, "b": 50},
        "legend": {"orientation": "h", "y": -0.22, "font": {"size": 11}},
        "paper_bgcolor": "#ffffff", "plot_bgcolor": "#fafafa",
    }
    return {"id": chart.id, "data": data, "layout": layout}


def safe_json(value: Any) -> str:
    """JSON that cannot end the surrounding <script> block or open a comment in it."""
    return json.dumps(value, separators=(",", ":")).replace("<", "\\u003c")


def _plotly_js() -> str:
    js = get_plotlyjs()
    # An embedded "</script" would close the block early; escaping the slash is harmless in JS.
    return js.replace("</script", "<\\/script")


def _machines(results: Sequence[Result], machines: dict[str, dict | None]) -> list[dict[str, Any]]:
    """One row per run: its machine fingerprint and the software its trials reported."""
    rows = []
    for run_id, machine in machines.items():
        members = [r for r in results if r.run_id == run_id]
        software: dict[str, str] = {}
        for r in members:
            for key, value in r.software.items():
                if value in (None, ""):
                    continue
                software.setdefault(f"{r.spec.framework} {key}" if key != r.spec.framework else key,
                                    str(value))
        m = {k: v for k, v in (machine or {}).items() if v not in (None, "")}
        gpus = [f"{g.get('name')} ({format_bytes(g.get('memory_bytes'))}, driver {g.get('driver')})"
                for g in m.get("gpus") or []]
        packages = ", ".join(f"{k} {v}" for k, v in (m.get("packages") or {}).items() if v)
        rows.append({
            "run_id": run_id, "recorded": machine is not None, "trials": len(members),
            "started": min((r.created_at for r in members), default="-")[:19].replace("T", " "),
            "fields": [
                ("host", m.get("hostname")), ("OS", m.get("os")),
                ("CPU", m.get("cpu_model")), ("architecture", m.get("cpu_arch")),
                ("cores", ", ".join(f"{m[k]} {word}" for k, word in (
                    ("cpu_cores_physical", "physical"), ("cpu_cores_logical", "logical"),
                    ("cpu_cores_usable", "usable")) if k in m) or None),
                ("RAM", format_bytes(m["ram_bytes"]) if "ram_bytes" in m else None),
                ("GPUs", "; ".join(gpus) or "no GPU"),
                ("Python", " ".join(str(m[k]) for k in ("python_implementation", "python_version")
                                    if k in m) or None),
                ("packages", packages or "-"),
                ("trial software", ", ".join(f"{k} {v}" for k, v in software.items()) or "-"),
            ],
        })
    return rows


def _trial_row(r: Result) -> dict[str, Any]:
    m = r.metrics
    speed = "-"
    if m.samples_per_s:
        speed = f"{m.samples_per_s:,.1f}"
        if m.samples_per_s_ci:
            speed += f" ±{(m.samples_per_s_ci[1] - m.samples_per_s_ci[0]) / 2:,.1f}"
    return {"id": r.id, "run_id": r.run_id, "label": r.spec.label() + unknown_mark(r.spec.workload), "status": r.status,
            "speed": speed, "noisy": bool(m.noisy), "error": r.error or "",
            "created": r.created_at[:19].replace("T", " ")}


def render(results: Sequence[Result], machines: dict[str, dict | None],
           filters: Sequence[str] = (), calibrations: dict[str, dict] | None = None) -> tuple[str, list[Chart]]:
    """The report page for `results` (machines: run id -> fingerprint or None; calibrations:
    device name -> latest calibration, for the roofline), and the charts it draws."""
    # stored text over textlimits' maxima (an old database, an old import) is shown clipped
    results = [clip_result(r) for r in results]
    machines = {run_id: clip_value(m, NAME_CHARS) for run_id, m in machines.items()}
    sections = gather(results, calibrations)
    charts = [c for _, cs in sections for c in cs]
    protocols = sorted({(r.spec.measure.warmup_steps, r.spec.measure.min_steps, r.spec.measure.min_seconds)
                        for r in results})
    page = _env.get_template("report.html.j2").render(
        version=__version__, generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        filters=list(filters), n_trials=len(results),
        n_ok=sum(r.status == "ok" for r in results),
        workloads=sorted({r.spec.workload for r in results}),
        devices=sorted({r.spec.device for r in results}),
        sections=sections, machines=_machines(results, machines), protocols=protocols,
        trials=[_trial_row(r) for r in results],
        failed=[_trial_row(r) for r in results if r.status != "ok"],
        plotly_js=Markup(_plotly_js()),
        chart_json=Markup(safe_json([plotly_figure(c) for c in charts])),
    )
    return page, charts
