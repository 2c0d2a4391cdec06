"""Frameworks side by side (`compare --frameworks`, seed 003's Table 5 and Figures 5-9):
grouped bars of steps/s per workload, one bar per device and framework (and setting: threads
asked for, a compiled step), and the thesis's own Table 5 beside our CIFAR-10 CNN at the same
batch. The rows come from analysis/frameworks.py, the same as the command's, so page and
terminal agree; a device is named as the rows name it (`device_shown`: an H100 and an H200 are
two bars even though both are `cuda:0`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rigbench.analysis.frameworks import FrameworkRow, FrameworkTable, framework_tables, settings
from rigbench.analysis.trials import Machines, trials_text
from rigbench.reports.cells import rate, share
from rigbench.reports.chart_model import Chart, Series, hover_lines, y_scale_for
from rigbench.reports.scaling_charts import PUBLISHED_COLOURS, PUBLISHED_LABELS
from rigbench.spec import Result


def _hover(row: FrameworkRow, table: FrameworkTable) -> str:
    def part(label: str, value: float | None, unit: str) -> str:
        return f"{label} {value:,.1f}{unit}" if value is not None else ""
    return hover_lines(f"{rate(row.steps_per_s)} steps/s", f"{_x(table)} · "
                       f"{row.framework}{settings(row)} · {row.device_shown}",
                       part("", row.tokens_per_s, " tokens/s").strip(),
                       f"MFU {share(row.mfu)} of the {row.mfu_source} peak" if row.mfu is not None else "",
                       part("CPU", row.cpu_pct, "%"), part("GPU", row.gpu_pct, "%"),
                       part("host", row.host_mem_mib, " MiB"), part("GPU memory", row.gpu_mem_mib, " MiB"),
                       trials_text(row.trials) if row.trials else row.source)


def _x(table: FrameworkTable) -> str:
    """The bar group's label: workload and batch, and the precision where it is not fp32."""
    precision = "" if table.precision == "fp32" else f" {table.precision}"
    return f"{table.label or table.workload} b{table.batch_size}{precision}"


def _ours(tables: list[FrameworkTable]) -> Chart:
    series: dict[str, Series] = {}
    for t in tables:
        for row in t.ours:
            key = f"{row.device_shown} · {row.framework}"  # the page-wide colour of device and framework
            extra = settings(row)  # threads asked for, a compiled step: a series of its own
            s = series.setdefault(key + extra, Series(name=f"{row.framework}{extra} · {row.device_shown}",
                                                      colour_key=key))
            s.x.append(_x(t))
            s.y.append(row.steps_per_s)
            s.hover.append(_hover(row, t))
    values = [y for s in series.values() for y in s.y]
    return Chart(id="frameworks", title="Frameworks side by side: training steps/s per workload",
                 x_title="workload and batch", y_title="steps/s", series=list(series.values()), kind="bar",
                 x_scale="category", y_scale=y_scale_for(values), bar_format=".3g", bar_suffix="", wide=True,
                 note="the newest run of each configuration, as rigbench compare --frameworks prints it; "
                      "a group is fp32 where its label names no precision")


def _table5(table: FrameworkTable) -> Chart:
    """Ours and the thesis's, per device (x) and framework (bars; ours at other settings, e.g.
    compiled, a bar of their own)."""
    series: dict[str, Series] = {}
    for row in table.ours + table.published:
        ours = row.source == "ours"
        device = row.device_shown if ours else f"{row.device} ({PUBLISHED_LABELS.get(row.source, row.source)})"
        colour_key = f"{row.device_shown} · {row.framework}" if ours else None
        key = f"{colour_key}{settings(row)}" if ours else row.framework
        colour = None if ours else PUBLISHED_COLOURS[len([s for s in series.values() if s.colour]) % len(PUBLISHED_COLOURS)]
        # ours named by device too: the legend tells apart torch on two GPUs, as the colours do
        name = f"{row.framework}{settings(row)} · {row.device_shown}" if ours else row.framework
        s = series.get(key) or series.setdefault(key, Series(name=name, colour_key=colour_key, colour=colour))
        s.x.append(device)
        s.y.append(row.steps_per_s)
        s.hover.append(_hover(row, table))
    return Chart(id="frameworks_table5", title=f"{table.workload} at batch {table.batch_size} beside the thesis's "
                 f"Table 5", x_title="device", y_title="steps/s", series=list(series.values()), kind="bar",
                 x_scale="category", y_scale=y_scale_for([y for s in series.values() for y in s.y]),
                 bar_format=".3g", bar_suffix="",
                 note="grey: Yin 2020, Table 5 (CIFAR-10 CNN, Windows 10 laptop); coloured: ours")


def framework_charts(results: Sequence[Result], calibrations: Mapping[str, dict[str, Any]] | None = None,
                     machines: Machines | None = None) -> list[Chart]:
    """The grouped bars where more than one framework was measured on some workload (each set
    of a workload's options its own group: `gpt` and `gpt:preset=small`), and the thesis's
    Table 5 beside ours where its workload was measured at its batch. `calibrations` (device
    name -> latest calibration) give the hover's MFU where the spec sheet has no peak;
    `machines` (run id -> fingerprint) tell two machines' devices of one name apart."""
    tables = framework_tables(results, calibrations=calibrations, machines=machines)
    charts = []
    if any(len(t.frameworks) > 1 for t in tables):
        charts.append(_ours(tables))
    charts += [_table5(t) for t in tables if t.published]
    return charts
