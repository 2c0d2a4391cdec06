"""What a chart is, independent of how it is drawn: the series, the chart, the report's
sections, and the small text helpers every chart builder uses. `charts.py` and
`training_charts.py` build these; `html.py` (plotly) and `png.py` (matplotlib) draw them.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from rigbench.analysis.trials import workload_label
from rigbench.spec import Result
from rigbench.textlimits import visible

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
    panel: str | None = None  # the small-multiples panel it is drawn in (Chart.panels)
    #: What picks the colour, page-wide: "DEVICE · FRAMEWORK" for measured trials (one colour
    #: per device and framework in every chart); None: the name. Series of one colour in a
    #: chart differ by `style` (dash and marker), set by `assign_colours`; a reference line's
    #: (`dash`) is its builder's: REFERENCE_DASHES (a roofline's ceilings, one style per device).
    colour_key: str | None = None
    style: int = 0
    mark: bool = False  # highlighted points (e.g. the throughput knee): large markers, no line


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
    #: Small multiples: the panels in order (one per workload); each series names its panel.
    #: A panel's y axis is "log" where its values span more than 10x (`panel_y_scales`).
    panels: list[str] = field(default_factory=list)
    panel_y_scales: dict[str, str] = field(default_factory=dict)
    note: str = ""  # what is the same for every series, stated once above the chart
    height: int | None = None  # pixels, when the default (380) is too small to read it
    wide: bool = False  # drawn across the page's full width (as small multiples are): many bar groups
    x_dtick: float | None = None  # a tick every this many x units (1 on an epoch axis)
    #: How a bar's value is printed on it: a d3 number format and a suffix (bar charts only).
    bar_format: str = ".2f"
    bar_suffix: str = "×"


#: A y axis becomes logarithmic where its largest value exceeds its smallest by more than this.
LOG_RANGE = 10.0


def y_scale_for(values: list[float]) -> str:
    """"log" when the positive `values` span more than LOG_RANGE, else "linear"."""
    positive = [v for v in values if v > 0]
    return "log" if positive and max(positive) > LOG_RANGE * min(positive) else "linear"


#: Line dashes and marker symbols (plotly's names; png.py maps them) that tell apart the series
#: of one colour in a chart, e.g. fp32 and bf16 on one device.
DASHES = ("solid", "dot", "dash", "longdash", "dashdot")
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x")
#: Reference lines (`Series.dash`) of one chart told apart by their `style`, e.g. each device's
#: roofline ceilings; style 0 is the plain dash every other reference line is drawn in.
REFERENCE_DASHES = ("dash", "dot", "dashdot", "longdash")
#: Bar fills (plotly's pattern shapes; png.py maps them to hatches) that tell apart the bars of
#: one colour in a chart, e.g. eager and compiled torch on one GPU.
PATTERNS = ("", "/", "x", ".", "\\")


def assign_colours(charts: list[Chart]) -> None:
    """One colour per colour key (device and framework; else the name) across every chart of
    the page, in order of first appearance, and within a chart a style per name among the
    series of one colour; fixed colours are kept."""
    palette: dict[str, str] = {}
    for chart in charts:
        names: dict[str, list[str]] = {}
        for s in chart.series:
            if s.colour is None and not s.dash and not s.mark:
                key = s.colour_key or s.name
                s.colour = palette.setdefault(key, COLOURS[len(palette) % len(COLOURS)])
                styles = names.setdefault(key, [])
                if s.name not in styles:
                    styles.append(s.name)
                s.style = styles.index(s.name)


@dataclass
class Section:
    """A heading on the page and the builders that fill it."""

    id: str
    title: str
    blurb: str
    # build(results), with calibrations=... when uses_calibrations (device name -> latest
    # calibration) and machines=... when uses_machines (run id -> fingerprint: which machine's
    # device a trial ran on, trials.device_key): several signatures, hence the `...`
    builders: tuple[Callable[..., list[Chart]], ...]
    uses_calibrations: bool = False
    uses_machines: bool = False


def _shown_text(value: Any) -> Any:
    return visible(value) if isinstance(value, str) else value


def shown(chart: Chart) -> Chart:
    """`chart` with every text a drawer shows (titles, note, panel and series names, category
    labels, hover text) passed through textlimits.visible, as the terminal shows stored text: a
    stored ESC becomes `\\x1b` instead of a raw byte in the page or a glyph matplotlib lacks.
    Both html.py and png.py draw what this returns. visible() writes out only control
    characters, so text that hover_lines already HTML-escaped is not escaped twice."""
    series = [replace(s, name=visible(s.name), x=[_shown_text(x) for x in s.x], hover=[visible(h) for h in s.hover],
                      panel=_shown_text(s.panel)) for s in chart.series]
    return replace(chart, title=visible(chart.title), x_title=visible(chart.x_title), y_title=visible(chart.y_title),
                   note=visible(chart.note), panels=[visible(p) for p in chart.panels],
                   panel_y_scales={visible(k): v for k, v in chart.panel_y_scales.items()}, series=series)


def wrap_note(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` characters, broken between words (a longer word
    alone on its line): a chart's note, which neither plotly nor matplotlib wraps."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def panel_title(name: str, limit: int) -> str:
    """A small-multiples panel's title (its workload) cut to `limit` characters with "…": a
    longer one ran over its neighbours' (`NAME:key=value,...` of a few options; textlimits lets a
    stored name have 256 characters). The page shows it whole on hover."""
    return name if len(name) <= limit else name[:limit - 1] + "…"


def hover_lines(*lines: str) -> str:
    """Hover text for one point. Plotly reads hover text as a small HTML subset, so user
    text is escaped here (plotly turns &lt; back into a literal <) and joined with <br>."""
    return "<br>".join(html.escape(line, quote=False) for line in lines if line)


def workload_name(r: Result) -> str:
    """NAME or NAME:key=value,... as a chart legend writes a workload (analysis.trials' rule)."""
    return workload_label(r)
