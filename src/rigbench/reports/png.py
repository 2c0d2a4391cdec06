"""Each report chart as a PNG (matplotlib, Agg backend) for papers and slides."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display needed, and never pick an interactive backend in a CLI

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, MultipleLocator, NullLocator  # noqa: E402

from rigbench.reports.chart_model import COLOURS, Chart, Series, panel_title, shown, wrap_note  # noqa: E402

#: chart_model.DASHES, SYMBOLS and PATTERNS as matplotlib names them, in the same order.
LINESTYLES = ("-", ":", "--", (0, (8, 3)), "-.")
#: chart_model.REFERENCE_DASHES as matplotlib names them.
REFERENCE_LINESTYLES = ("--", ":", "-.", (0, (8, 3)))
MARKERS = ("o", "s", "D", "^", "x")
HATCHES = ("", "//", "xx", "..", "\\\\")
#: Characters of the title's lines per inch of the figure's width (11 pt at 150 dpi): a longer
#: note ran off a 6.4 in figure on both sides.
TITLE_CHARS_PER_INCH = 11.5
#: Characters of a 9 pt panel title over a panel's 3.4 in.
PANEL_TITLE_CHARS = 45


def _plain(text: str) -> str:
    """Text as matplotlib shows it literally ($ would start mathtext)."""
    return text.replace("$", r"\$")


def _draw_bars(ax: plt.Axes, chart: Chart, series: list[Series]) -> None:
    categories = list(dict.fromkeys(x for s in series for x in s.x))
    width = 0.8 / max(len(series), 1)
    for i, s in enumerate(series):
        offsets = [categories.index(x) + (i - (len(series) - 1) / 2) * width for x in s.x]
        errors = [s.err_minus, s.err_plus] if s.err_plus is not None and s.err_minus is not None else None
        ax.bar(offsets, s.y, width=width, label=_plain(s.name), color=s.colour or COLOURS[i % len(COLOURS)],
               yerr=errors, capsize=2, hatch=HATCHES[s.style % len(HATCHES)] or None)
    ax.set_xticks(range(len(categories)), [_plain(str(c)) for c in categories],
                  rotation=30 if len(categories) > 4 else 0, ha="right" if len(categories) > 4 else "center")


def _style(chart: Chart, s: Series, i: int) -> dict:
    """Line and marker style as html.py draws the series: a dash series is a reference line
    (on a scatter, it rings the points it joins); a scatter series is markers only."""
    colour = s.colour or ("0.6" if s.dash else COLOURS[i % len(COLOURS)])
    if s.mark:  # highlighted points (the knee): large open diamonds, no line
        return {"linestyle": "none", "marker": "D", "markersize": 9, "markerfacecolor": "none",
                "markeredgewidth": 1.5, "color": colour}
    if s.dash and chart.kind == "scatter":
        return {"linestyle": "--", "color": colour, "marker": "o", "markersize": 9, "markerfacecolor": "none"}
    if s.dash:
        return {"linestyle": REFERENCE_LINESTYLES[s.style % len(REFERENCE_LINESTYLES)], "color": colour}
    marker = MARKERS[s.style % len(MARKERS)]
    if chart.kind == "scatter":
        return {"linestyle": "none", "marker": marker, "markersize": 5, "color": colour}
    return {"marker": marker, "markersize": 4, "color": colour, "linestyle": LINESTYLES[s.style % len(LINESTYLES)]}


def _draw_lines(ax: plt.Axes, chart: Chart, series: list[Series], y_scale: str) -> None:
    for i, s in enumerate(series):
        style = _style(chart, s, i)
        if s.err_plus is not None and s.err_minus is not None:
            ax.errorbar(s.x, s.y, yerr=[s.err_minus, s.err_plus], capsize=3, label=_plain(s.name), **style)
        else:
            ax.plot(s.x, s.y, label=_plain(s.name), **style)
    if chart.x_scale == "log2":
        ticks = sorted({x for s in series for x in s.x})
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([str(t) for t in ticks])
    elif chart.x_scale == "log":
        ax.set_xscale("log")
    if chart.x_dtick is not None:
        ax.xaxis.set_major_locator(MultipleLocator(chart.x_dtick))
    if y_scale == "log":
        ax.set_yscale("log")


def _draw(ax: plt.Axes, chart: Chart, series: list[Series], y_scale: str) -> None:
    if chart.kind == "bar":
        _draw_bars(ax, chart, series)
        if y_scale == "log":
            ax.set_yscale("log")
    else:
        _draw_lines(ax, chart, series, y_scale)
    if y_scale != "log":
        ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)


def title_text(chart: Chart, width_in: float) -> str:
    """The title, then what is the same for every series, wrapped to a figure `width_in` wide."""
    note = wrap_note(f"same for every series: {chart.note}", int(width_in * TITLE_CHARS_PER_INCH)) if chart.note else []
    return "\n".join([chart.title, *note])


def write_png(chart: Chart, path: Path) -> Path:
    """Draw one chart to `path` at 150 dpi (6.4 x 4 in; small multiples a 4-wide grid of
    panels), with the legend below the plot area, outside it, one entry per name."""
    chart = shown(chart)  # a stored ESC drawn as \x1b, not a glyph the font lacks
    panels: list[str | None] = list(chart.panels) or [None]  # None: one plot of every series
    columns = min(4, len(panels))
    rows = -(-len(panels) // columns)
    size = (6.4, 4.0) if len(panels) == 1 else (3.4 * columns, 2.8 * rows)
    fig, axes = plt.subplots(rows, columns, figsize=size, dpi=150, squeeze=False)
    try:
        for i, panel in enumerate(panels):
            ax = axes[i // columns][i % columns]
            series = [s for s in chart.series if s.panel == panel] if panel is not None else chart.series
            _draw(ax, chart, series, chart.panel_y_scales.get(panel, chart.y_scale) if panel else chart.y_scale)
            if panel is not None:
                ax.set_title(_plain(panel_title(panel, PANEL_TITLE_CHARS)), fontsize=9)
            if i // columns == rows - 1 or panel is None:
                ax.set_xlabel(chart.x_title)
            if i % columns == 0:
                ax.set_ylabel(chart.y_title)
        for j in range(len(panels), rows * columns):
            axes[j // columns][j % columns].axis("off")
        fig.suptitle(_plain(title_text(chart, fig.get_figwidth())), fontsize=11)
        handles: dict[str, Any] = {}
        for ax in axes.flat:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(label, handle)  # one entry per name, across panels
        if not handles:
            fig.tight_layout()
        else:
            # columns as wide as the longest name (about 5.5 px a character at 6 pt and 150 dpi,
            # and the handle and gaps)
            entry_px = 90 + 5.5 * max(len(label) for label in handles)
            ncol = max(1, min(len(handles), int(fig.get_figwidth() * 150 * 0.95 // entry_px)))
            legend_in = 0.3 + 0.17 * -(-len(handles) // ncol)
            # the legend gets room of its own below the x ticks tight_layout makes room for: the
            # figure grows by it (rotated workload names ran into a legend laid over their room)
            plot_in = fig.get_figheight()
            fig.set_figheight(plot_in + legend_in)
            fig.tight_layout(rect=(0, legend_in / (plot_in + legend_in), 1, 1))
            fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=ncol, fontsize=6,
                       frameon=False, bbox_to_anchor=(0.5, 0.0))
        fig.savefig(path, format="png")
    finally:
        plt.close(fig)
    return path


def write_pngs(charts: Sequence[Chart], directory: str | Path) -> list[Path]:
    """One `<chart id>.png` per chart in `directory` (created if needed)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    return [write_png(chart, out / f"{chart.id}.png") for chart in charts]
