"""Each report chart as a PNG (matplotlib, Agg backend) for papers and slides."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display needed, and never pick an interactive backend in a CLI

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, NullLocator  # noqa: E402

from rigbench.reports.chart_model import COLOURS, Chart, Series  # noqa: E402


def _plain(text: str) -> str:
    """Text as matplotlib shows it literally ($ would start mathtext)."""
    return text.replace("$", r"\$")


def _draw_bars(ax: plt.Axes, chart: Chart) -> None:
    categories = list(dict.fromkeys(x for s in chart.series for x in s.x))
    width = 0.8 / max(len(chart.series), 1)
    for i, s in enumerate(chart.series):
        offsets = [categories.index(x) + (i - (len(chart.series) - 1) / 2) * width for x in s.x]
        ax.bar(offsets, s.y, width=width, label=_plain(s.name), color=COLOURS[i % len(COLOURS)])
    ax.set_xticks(range(len(categories)), [_plain(str(c)) for c in categories],
                  rotation=30 if len(categories) > 4 else 0, ha="right" if len(categories) > 4 else "center")


def _style(chart: Chart, s: Series, i: int) -> dict:
    """Line and marker style as html.py draws the series: a dash series is a reference line
    (on a scatter, it rings the points it joins); a scatter series is markers only."""
    colour = s.colour or ("0.6" if s.dash else COLOURS[i % len(COLOURS)])
    if s.dash and chart.kind == "scatter":
        return {"linestyle": "--", "color": colour, "marker": "o", "markersize": 9, "markerfacecolor": "none"}
    if s.dash:
        return {"linestyle": "--", "color": colour}
    if chart.kind == "scatter":
        return {"linestyle": "none", "marker": "o", "markersize": 5, "color": colour}
    return {"marker": "o", "markersize": 4, "color": colour}


def _draw_lines(ax: plt.Axes, chart: Chart) -> None:
    for i, s in enumerate(chart.series):
        style = _style(chart, s, i)
        if s.err_plus is not None and s.err_minus is not None:
            ax.errorbar(s.x, s.y, yerr=[s.err_minus, s.err_plus], capsize=3, label=_plain(s.name), **style)
        else:
            ax.plot(s.x, s.y, label=_plain(s.name), **style)
    if chart.x_scale == "log2":
        ticks = sorted({x for s in chart.series for x in s.x})
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([str(t) for t in ticks])
    elif chart.x_scale == "log":
        ax.set_xscale("log")
    if chart.y_scale == "log":
        ax.set_yscale("log")


def write_png(chart: Chart, path: Path) -> Path:
    """Draw one chart to `path` (6.4 x 4 in at 150 dpi)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=150)
    try:
        (_draw_bars if chart.kind == "bar" else _draw_lines)(ax, chart)
        ax.set_title(chart.title)
        ax.set_xlabel(chart.x_title)
        ax.set_ylabel(chart.y_title)
        if chart.y_scale != "log":
            ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        fig.savefig(path, format="png")
    finally:
        plt.close(fig)
    return path


def write_pngs(charts: Sequence[Chart], directory: str | Path) -> list[Path]:
    """One `<chart id>.png` per chart in `directory` (created if needed)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    return [write_png(chart, out / f"{chart.id}.png") for chart in charts]
