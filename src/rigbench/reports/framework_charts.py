"""Frameworks side by side (`compare --frameworks`, seed 003's Table 5 and Figures 5-9):
grouped bars of steps/s per workload, one bar per device and framework, and the thesis's own
Table 5 beside this machine's CIFAR-10 CNN at the same batch. The rows come from
analysis/frameworks.py, the same as the command's, so page and terminal agree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rigbench.analysis.frameworks import FrameworkRow, FrameworkTable, framework_tables, settings
from rigbench.analysis.trials import trials_text
from rigbench.reports.cells import rate
from rigbench.reports.chart_model import Chart, Series, hover_lines, y_scale_for
from rigbench.reports.scaling_charts import PUBLISHED_COLOURS, PUBLISHED_LABELS
from rigbench.spec import Result


def _hover(row: FrameworkRow, table: FrameworkTable) -> str:
    def part(label: str, value: float | None, unit: str) -> str:
        return f"{label} {value:,.1f}{unit}" if value is not None else ""
    return hover_lines(f"{rate(row.steps_per_s)} steps/s", f"{_x(table)} · "
                       f"{row.framework} · {row.device_name}", part("", row.tokens_per_s, " tokens/s").strip(),
                       f"MFU {row.mfu:.1%} of the {row.mfu_source} peak" if row.mfu is not None else "",
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
            key = f"{row.device_name} · {row.framework}"  # the page-wide colour of device and framework
            extra = settings(row)  # threads asked for, a compiled step: a series of its own
            s = series.setdefault(key + extra, Series(name=f"{row.framework}{extra} · {row.device_name}",
                                                      colour_key=key))
            s.x.append(_x(t))
            s.y.append(row.steps_per_s)
            s.hover.append(_hover(row, t))
    values = [y for s in series.values() for y in s.y]
    return Chart(id="frameworks", title="Frameworks side by side: training steps/s per workload",
                 x_title="workload and batch", y_title="steps/s", series=list(series.values()), kind="bar",
                 x_scale="category", y_scale=y_scale_for(values), bar_format=".3g", bar_suffix="",
                 note="fp32 unless the label names a precision; the newest result of each configuration (rigbench compare --frameworks)")


def _table5(table: FrameworkTable) -> Chart:
    """Ours and the thesis's, per device (x) and framework (bars)."""
    series: dict[str, Series] = {}
    for row in table.ours + table.published:
        ours = row.source == "ours"
        device = row.device_name if ours else f"{row.device} ({PUBLISHED_LABELS.get(row.source, row.source)})"
        key = f"{row.device_name} · {row.framework}" if ours else row.framework
        colour = None if ours else PUBLISHED_COLOURS[len([s for s in series.values() if s.colour]) % len(PUBLISHED_COLOURS)]
        s = series.get(key) or series.setdefault(key, Series(name=row.framework, colour_key=key if ours else None,
                                                             colour=colour))
        s.x.append(device)
        s.y.append(row.steps_per_s)
        s.hover.append(_hover(row, table))
    return Chart(id="frameworks_table5", title=f"{table.workload} at batch {table.batch_size} beside the thesis's "
                 f"Table 5", x_title="device", y_title="steps/s", series=list(series.values()), kind="bar",
                 x_scale="category", y_scale=y_scale_for([y for s in series.values() for y in s.y]),
                 bar_format=".3g", bar_suffix="",
                 note="grey: Yin 2020, Table 5 (CIFAR-10 CNN, Windows 10 laptop); coloured: this machine")


def framework_charts(results: Sequence[Result],
                     calibrations: Mapping[str, dict[str, Any]] | None = None) -> list[Chart]:
    """The grouped bars where more than one framework was measured on some workload (each set
    of a workload's options its own group: `gpt` and `gpt:preset=small`), and the thesis's
    Table 5 beside ours where its workload was measured at its batch. `calibrations` (device
    name -> latest calibration) give the hover's MFU where the spec sheet has no peak."""
    tables = framework_tables(results, calibrations=calibrations)
    charts = []
    if any(len(t.frameworks) > 1 for t in tables):
        charts.append(_ours(tables))
    charts += [_table5(t) for t in tables if t.published]
    return charts
