"""The report's energy charts from hand-made Results: per workload, lines and points, the
Pareto front, and no section at all without measured energy."""

import pytest

from rigbench.reports.charts import gather
from rigbench.reports.html import plotly_figure
from tests.unit.test_report_data import charts_by_id, make_result, series


def energy_results():
    """cnn on cpu in fp32 and bf16 at two batches, plus an mlp trial; (samples/s, J/sample)."""
    return [make_result(batch=8, speed=100.0, energy_per_sample_j=0.05),
            make_result(batch=16, speed=150.0, energy_per_sample_j=0.04),
            make_result(batch=8, speed=120.0, precision="bf16", energy_per_sample_j=0.03),
            make_result(batch=16, speed=140.0, precision="bf16", energy_per_sample_j=0.045),
            make_result(workload="mlp", batch=16, speed=300.0, energy_per_sample_j=0.01),
            make_result(batch=32, speed=200.0, energy_note="no RAPL"),  # not measured: not drawn
            make_result(batch=32, status="crash", error="boom")]


def test_energy_against_batch_one_line_per_precision_per_workload():
    charts = charts_by_id(energy_results())
    # per workload, lines named by what differs (precision), the rest stated once
    assert series(charts["energy_batch_cnn"]) == {"fp32": ([8, 16], [0.05, 0.04]), "bf16": ([8, 16], [0.03, 0.045])}
    assert charts["energy_batch_cnn"].note == "cpu · torch · 1 thread · eager"
    assert series(charts["energy_batch_mlp"]) == {"cpu": ([16], [0.01])}
    assert charts["energy_batch_cnn"].x_scale == "log2"
    assert "40 mJ/sample at 150.0 samples/s" in charts["energy_batch_cnn"].series[0].hover[1]


def test_time_against_energy_marks_the_pareto_front():
    chart = charts_by_id(energy_results())["energy_pareto_cnn"]
    assert chart.kind == "scatter" and [s.name for s in chart.series] == ["fp32", "bf16", "Pareto front"]
    assert series(chart)["fp32"] == ([100.0, 150.0], [0.05, 0.04])
    # fp32 b8 (100/s, 50 mJ) is beaten by everything; bf16 b16 (140/s, 45 mJ) by fp32 b16 (150/s, 40 mJ)
    front = chart.series[-1]
    assert (front.x, front.y, front.dash) == ([120.0, 150.0], [0.03, 0.04], True)
    assert "Pareto front: 30 mJ/sample" in front.hover[0]
    one = charts_by_id(energy_results())["energy_pareto_mlp"]
    assert series(one)["Pareto front"] == ([300.0], [0.01])  # one point is its own front


def test_scatter_draws_markers_and_the_front_as_a_dashed_line():
    figure = plotly_figure(charts_by_id(energy_results())["energy_pareto_cnn"])
    assert [t["mode"] for t in figure["data"]] == ["markers", "markers", "lines+markers"]
    assert figure["data"][-1]["line"]["dash"] == "dash"
    # speeds within 10x (100 to 150 samples/s) on a linear axis: a log one drew the H200's one
    # dcgan trial between ticks 800 and 70k; a CPU beside a GPU on a log one
    assert "type" not in figure["layout"]["xaxis"]
    assert "speed against energy per sample" in figure["layout"]["title"]["text"]
    gpu = make_result(device="cuda:0", batch=16, speed=3000.0, energy_per_sample_j=0.002)
    wide = plotly_figure(charts_by_id([*energy_results(), gpu])["energy_pareto_cnn"])
    assert wide["layout"]["xaxis"]["type"] == "log"


def test_no_energy_section_without_measured_energy():
    results = [make_result(batch=8, energy_note="cpu: RAPL unavailable"), make_result(batch=16)]
    assert "energy" not in [section.id for section, _ in gather(results)]
    sections = {section.id: charts for section, charts in gather(energy_results())}
    assert [c.id for c in sections["energy"]] == ["energy_batch_cnn", "energy_pareto_cnn",
                                                  "energy_batch_mlp", "energy_pareto_mlp"]


@pytest.mark.parametrize("options,chart_id", [({"depth": 56}, "energy_batch_resnet-depth-56")])
def test_chart_ids_are_file_names(options, chart_id):
    r = make_result(workload="resnet", options=options, energy_per_sample_j=0.02)
    assert chart_id in charts_by_id([r])
