"""What the report's charts and tables say beside their numbers, from an audit of the page made
from the GPU bundles: the frameworks section said "fp32 and eager" above bf16 and compiled bars,
a long subtitle ran off a half-width chart at the screenshot's 1400 px, the H100's and the
H200's roofs were drawn alike, and an MFU of 0.03% printed as "0.0%". Results are built by hand."""

from __future__ import annotations

import pytest
from rich.console import Console

from rigbench.analysis.frameworks import framework_tables
from rigbench.analysis.roofline import result_roofline
from rigbench.analysis.summary import summary_rows
from rigbench.reports.ceiling_tables import roofline_table
from rigbench.reports.cells import share
from rigbench.reports.chart_model import Chart, Series
from rigbench.reports.charts import SECTIONS
from rigbench.reports.compare_tables import framework_table
from rigbench.reports.framework_charts import framework_charts
from rigbench.reports.roofline_charts import roofline_charts
from rigbench.reports.summary_table import summary_cells
from tests.unit.test_device_identity import H100, H200, MACHINES, charts_of, on, report_results
from tests.unit.test_report_data import make_result

#: A peak that makes 1 GFLOP per sample at 3 samples/s an MFU of 0.03%.
SLOW = {"matmul_flops": {"fp32": 1e13}}


def text_of(table) -> str:
    console = Console(width=250, record=True)
    console.print(table)
    return console.export_text()


def test_a_small_share_keeps_two_significant_digits():
    assert [share(v) for v in (0.0003, 0.00182, 0.0095, 0.0182, 0.2, 1.5, 0.0, None)] == [
        "0.030%", "0.18%", "0.95%", "1.8%", "20.0%", "150.0%", "0.0%", "-"]


def test_an_mfu_of_three_hundredths_of_a_percent_is_not_zero_anywhere():
    r = make_result(speed=3.0, flops_per_sample=1e9, bytes_per_sample=1e7, params=1_000_000)
    [row] = summary_rows([r], calibrations={"": SLOW})
    assert summary_cells([row])[0]["mfu"] == "0.030%"
    [table] = framework_tables([r, *jax_twin(r)], calibrations={"": SLOW})
    assert "0.030%*" in text_of(framework_table(table))  # * : the calibrated peak
    assert " 0.030% " in text_of(roofline_table([(r, result_roofline(r, SLOW))]))
    [chart] = roofline_charts([r], {"": SLOW})
    assert "MFU 0.030% of the calibrated fp32 peak" in chart.series[0].hover[0]
    [bars] = [c for c in framework_charts([r, *jax_twin(r)], {"": SLOW}) if c.id == "frameworks"]
    assert any("MFU 0.030% of the calibrated peak" in h for s in bars.series for h in s.hover)


def jax_twin(r):
    """The same trial in JAX: a second framework, so that the frameworks chart is drawn."""
    return [r.model_copy(update={"id": (r.id or 0) + 50_000, "spec": r.spec.model_copy(update={"framework": "jax"})})]


def test_the_frameworks_section_says_what_its_bars_are():
    """Its bars include bf16 groups and compiled torch: the section says so, not "fp32 and eager"."""
    frameworks = charts_of(report_results())["frameworks"]
    assert any("bf16" in x for s in frameworks.series for x in s.x)
    assert any("compile" in s.name for s in frameworks.series)
    [section] = [s for s in SECTIONS if s.id == "frameworks"]
    assert "fp32 and eager" not in section.blurb
    assert "each precision a group of its own" in section.blurb and "compiled torch a bar of its own" in section.blurb
    assert frameworks.wide  # a group per workload, precision and batch: the page's full width


def test_a_long_subtitle_wraps_instead_of_running_off_the_chart():
    pytest.importorskip("plotly")
    from rigbench.reports import html

    note = "; ".join(f"part {i} of a long statement of what is the same" for i in range(6))
    half = html.plotly_figure(Chart("c", "t", "x", "y", [Series("a", [1], [1.0])], note=note))
    lines = half["layout"]["title"]["subtitle"]["text"].split("<br>")
    assert len(lines) > 1 and all(len(line) <= html.NOTE_CHARS for line in lines)
    assert " ".join(lines) == "same for every series: " + note  # wrapped between words, nothing lost
    short = html.plotly_figure(Chart("c", "t", "x", "y", [Series("a", [1], [1.0])], note="torch"))
    assert half["layout"]["margin"]["t"] > short["layout"]["margin"]["t"]  # room for the lines
    wide = html.plotly_figure(Chart("c", "t", "x", "y", [Series("a", [1], [1.0])], note=note, wide=True))
    assert len(wide["layout"]["title"]["subtitle"]["text"].split("<br>")) < len(lines)
    # the PNG's title as well: its note ran off a 6.4 in figure on both sides
    pytest.importorskip("matplotlib")
    from rigbench.reports import png

    title, *rest = png.title_text(Chart("c", "t", "x", "y", [], note=note), 6.4).split("\n")
    assert title == "t" and len(rest) > 1 and all(len(line) <= 6.4 * png.TITLE_CHARS_PER_INCH for line in rest)


def test_each_devices_roofs_are_drawn_in_a_style_of_their_own():
    pytest.importorskip("plotly")
    from rigbench.reports import html, png

    results = [on(m, samples_per_s=s, flops_per_sample=1e9, bytes_per_sample=1e7, params=1_000_000, precision=p)
               for m, s in (("h100", 1000.0), ("h200", 1200.0)) for p in ("fp32", "bf16")]
    chart = charts_of(results, MACHINES)["roofline"]
    roofs = {s.name: s for s in chart.series if "roof" in s.name}
    assert set(roofs) == {f"spec sheet roof · {d} · {p}" for d in (H100, H200) for p in ("bf16", "fp32")}
    figure = html.plotly_figure(chart)
    dash = {t["name"]: t["line"]["dash"] for t in figure["data"] if "roof" in t["name"]}
    # one device's roofs share a style, the two devices' differ
    assert dash[f"spec sheet roof · {H100} · fp32"] == dash[f"spec sheet roof · {H100} · bf16"]
    assert dash[f"spec sheet roof · {H100} · fp32"] != dash[f"spec sheet roof · {H200} · fp32"]
    styles = {name: png._style(chart, s, 0)["linestyle"] for name, s in roofs.items()}
    assert styles[f"spec sheet roof · {H100} · fp32"] != styles[f"spec sheet roof · {H200} · fp32"]
