"""What a chart is, independent of how it is drawn: the series, the chart, the report's
sections, and the small text helpers every chart builder uses. `charts.py` and
`training_charts.py` build these; `html.py` (plotly) and `png.py` (matplotlib) draw them.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rigbench.spec import Result

#: Series colours, in order, shared by the page and the PNGs so that both read alike.
COLOURS: tuple[str, ...] = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
                            "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")


@dataclass
class Series:
    """One line (or one set of bars): points in x order, with optional asymmetric error."""

    name: str
    x: list[Any] = field(default_factory=list)
    y: list[float] = field(default_factory=list)
    err_minus: list[float] | None = None  # distance below y (None: no error bars)
    err_plus: list[float] | None = None
    hover: list[str] = field(default_factory=list)  # HTML-escaped, lines joined by <br>
    dash: bool = False  # a reference line (e.g. ideal scaling), not a measurement
    colour: str | None = None  # a fixed colour (e.g. roofline ceilings); None: the palette's


@dataclass
class Chart:
    """A chart: `kind` is "line", "bar" or "scatter" (markers only; a `dash` series is drawn as
    a line through its points, e.g. a Pareto front); `x_scale` is "log2", "log" (base 10), "linear" or
    "category"; `y_scale` is "linear" (from zero) or "log"."""

    id: str
    title: str
    x_title: str
    y_title: str
    series: list[Series]
    kind: str = "line"
    x_scale: str = "linear"
    y_scale: str = "linear"


@dataclass
class Section:
    """A heading on the page and the builders that fill it."""

    id: str
    title: str
    blurb: str
    # build(results), or build(results, calibrations) when uses_calibrations (device name ->
    # latest calibration): two signatures, hence the `...`
    builders: tuple[Callable[..., list[Chart]], ...]
    uses_calibrations: bool = False


def hover_lines(*lines: str) -> str:
    """Hover text for one point. Plotly reads hover text as a small HTML subset, so user
    text is escaped here (plotly turns &lt; back into a literal <) and joined with <br>."""
    return "<br>".join(html.escape(line, quote=False) for line in lines if line)


def workload_name(r: Result) -> str:
    """NAME or NAME:key=value,... as a chart legend writes a workload."""
    opts = ",".join(f"{k}={v}" for k, v in sorted(r.spec.workload_options.items()))
    return f"{r.spec.workload}:{opts}" if opts else r.spec.workload
