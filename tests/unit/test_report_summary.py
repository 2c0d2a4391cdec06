"""The report's headline (analysis/summary.py), its legend rule (reports/trial_lines.Legend),
the published GPU:CPU ratios and the recommendation found from stored commands, by hand."""

import csv
import sys
from importlib import resources
from statistics import median

import pytest

from rigbench.analysis.published_ratios import published_gpu_cpu_ratios
from rigbench.analysis.recommend_model import Line
from rigbench.analysis.summary import machines_once, recommendation_text, summary_rows
from rigbench.api.comparison import machine_text
from rigbench.api.results import recommend_target
from rigbench.fingerprint import machine_key
from rigbench.reports.chart_model import COLOURS, Chart, Series, assign_colours, y_scale_for
from rigbench.reports.summary_table import format_duration, machine_cards, summary_cells
from rigbench.reports.trial_lines import Legend
from rigbench.spec import MeasureOptions
from tests.unit.test_report_data import make_result

H100 = "NVIDIA H100 80GB HBM3"


def headline_results():
    gpu = make_result(device="cuda:0", batch=16, speed=1800.0, precision="bf16", gpu_mem_peak_mib=900.0,
                      flops_per_sample=1e9).model_copy(update={"device_name": H100})
    return [make_result(batch=8, speed=100.0), make_result(batch=16, speed=150.0), gpu,
            make_result(device="cuda:0", batch=64, status="oom"),
            make_result(workload="mlp", batch=16, speed=300.0)]


def test_summary_is_the_fastest_trial_per_workload_with_its_figures():
    results = headline_results()
    cnn, mlp = summary_rows(results)
    assert cnn.workload == "cnn" and cnn.best is results[2] and cnn.trials == 3
    assert cnn.epoch_seconds == pytest.approx(50_000 / 1800)  # CIFAR-10's training set
    assert cnn.cpu_base.trials == (results[1],) and cnn.speedup_over_cpu == pytest.approx(12.0)
    assert (cnn.peak_memory_mib, cnn.memory_kind) == (900.0, "device")
    # 1e9 FLOPs x 1800 samples/s over the H100's bf16 spec-sheet peak (989.4 TFLOP/s)
    assert cnn.mfu == pytest.approx(1.8e12 / 989.4e12) and cnn.mfu_source == "spec"
    # the CPU is the only device: the speed-up is 1, memory the process's RSS, no known peak
    assert mlp.best is results[4] and mlp.speedup_over_cpu == pytest.approx(1.0)
    assert (mlp.peak_memory_mib, mlp.memory_kind, mlp.mfu) == (400.0, "RSS", None)
    assert mlp.epoch_seconds == pytest.approx(60_000 / 300)


def test_the_cpu_base_is_the_best_trials_own_machine_only():
    gpu_host = make_result(device="cuda:0", speed=1000.0, run_id="gpu")
    here, there = make_result(speed=50.0, run_id="gpu"), make_result(speed=200.0, run_id="laptop")
    machines = {"gpu": {"hostname": "a", "cpu_model": "Xeon"}, "laptop": {"hostname": "b", "cpu_model": "EPYC"}}
    [row] = summary_rows([gpu_host, here, there], machines=machines)
    assert row.cpu_base.trials == (here,) and row.speedup_over_cpu == pytest.approx(20.0)
    # none on its own machine: no speed-up (the chart's rule), never over the laptop's CPU
    [row] = summary_rows([gpu_host, there], machines=machines)
    assert row.cpu_base is None and row.speedup_over_cpu is None and row.cpu_elsewhere
    [row] = summary_rows([gpu_host, here, there])  # without machines: the fastest CPU trial
    assert row.cpu_base.trials == (there,)  # the newer run of the same configuration


def test_a_configuration_is_the_mean_of_its_newest_runs_repeats():
    """Repeats of one run count as their geometric mean, so a lucky repeat does not make a configuration
    the headline; an older run of a configuration is superseded; MFU, tokens/s and the speed-up
    read the mean; the peak memory is the highest of the repeats."""
    gpt = {"workload": "gpt", "flops_per_sample": 1e9}
    b8 = [make_result(batch=8, speed=s, run_id="r2", tokens_per_s=64 * s, rss_peak_mib=m, **gpt)
          for s, m in ((250.0, 500.0), (500.0, 700.0), (1000.0, 600.0))]  # geometric mean 500
    # its fastest trial beats b8's, but its geometric mean is 469
    b16 = [make_result(batch=16, speed=s, run_id="r2", tokens_per_s=64 * s, **gpt) for s in (200.0, 1100.0)]
    old = make_result(batch=8, speed=900.0, run_id="r1", **gpt)  # an older run of b8: superseded
    old = old.model_copy(update={"id": 0})
    [row] = summary_rows([old, *b8, *b16], calibrations={"": {"matmul_flops": {"fp32": 1e13}}})
    assert row.configuration.trials == tuple(b8) and row.best is b8[-1] and row.trials == 6
    assert row.samples_per_s == pytest.approx(500.0) and row.configuration.tokens_per_s == pytest.approx(64 * 500.0)
    assert row.speedup_over_cpu == pytest.approx(1.0) and row.cpu_base is row.configuration
    assert row.mfu == pytest.approx(1e9 * 500.0 / 1e13) and row.mfu_source == "calibrated"
    assert (row.peak_memory_mib, row.memory_kind) == (700.0, "RSS")
    [cell] = summary_cells([row])
    assert (cell["samples_per_s"], cell["tokens_per_s"]) == ("500", "32,000 tokens/s")
    ids = ", ".join(str(r.id) for r in b8)
    assert cell["samples_note"] == f"mean of trials {ids}" and cell["speedup"].startswith("1.00×")
    assert cell["speedup_note"].startswith(f"over CPU mean of trials {ids} (500 samples/s")
    # a GPU configuration's repeats over the CPU configuration's: a ratio of means
    gpus = [make_result(batch=8, device="cuda:0", speed=s, run_id="r2", **gpt) for s in (2500.0, 10000.0)]
    [row] = summary_rows([*b8, *gpus])
    assert row.speedup_over_cpu == pytest.approx(10.0) and summary_cells([row])[0]["speedup"] == "10.00×"


def test_summary_leaves_out_failures_training_runs_and_probes_and_splits_revisions():
    probe = make_result(speed=9e9)
    probe.spec = probe.spec.model_copy(update={"kind": "probe"})
    old = make_result(workload="catsdogs", speed=5.0)
    old.spec = old.spec.model_copy(update={"workload_revision": 1})  # catsdogs is revision 2 now
    rows = summary_rows([make_result(speed=10.0), make_result(status="crash"), probe, old,
                         make_result(workload="catsdogs", speed=2.0)])
    assert [(r.workload, r.samples_per_s) for r in rows] == [
        ("catsdogs", 2.0), ("catsdogs (revision 1)", 5.0), ("cnn", 10.0)]
    assert summary_rows([make_result(status="crash")]) == []


def test_summary_cells_as_the_page_shows_them():
    [cnn, mlp] = summary_cells(summary_rows(headline_results(), recommendations={"mlp": "cpu, batch 16: why"}))
    assert cnn["device"] == f"{H100} (cuda:0)" and cnn["config"] == "torch · bf16 · eager · batch 16 · 1 thread"
    assert (cnn["samples_per_s"], cnn["speedup"], cnn["memory"], cnn["mfu"]) == ("1,800", "12.00×", "900 MiB", "0.18%")
    # as `results list` rounds them: 3 significant digits below 100 (0.368, not "0.4")
    [slow] = summary_cells(summary_rows([make_result(speed=0.368)]))
    assert (slow["samples_per_s"], slow["speedup_note"]) == ("0.368", f"over CPU trial {slow['trial']} (0.368 samples/s, cpu)")
    # a figure of `run --quick` says so where it is the answer, as the Method does (a smoke run)
    quick = make_result(speed=50.0)
    quick.spec = quick.spec.model_copy(update={"measure": MeasureOptions(min_steps=3, min_seconds=0.5)})
    busy_quick = quick.model_copy(update={"id": quick.id + 1000, "metrics": quick.metrics.model_copy(update={"others_cpu_pct_mean": 60.0})})
    assert summary_cells(summary_rows([quick]))[0]["samples_note"] == f"trial {quick.id} (quick)"
    assert summary_cells(summary_rows([busy_quick]))[0]["samples_note"] == f"trial {busy_quick.id} (busy, quick)"
    assert cnn["epoch"] == "27.8 s" and cnn["recommendation"] == ""
    assert cnn["tokens_per_s"] == ""  # no language model: no tokens/s
    [gpt] = summary_cells(summary_rows([make_result(workload="gpt", batch=8, speed=250.0, tokens_per_s=16_000.0)]))
    assert (gpt["workload"], gpt["samples_per_s"], gpt["tokens_per_s"]) == ("gpt", "250", "16,000 tokens/s")
    assert mlp["speedup"].startswith("1.00×") and mlp["recommendation"] == "cpu, batch 16: why"
    assert [format_duration(s) for s in (59.5, 600, 7200, 200_000, None)] == ["59.5 s", "10.0 min", "2.0 h", "2.3 days", "-"]


def test_machines_are_described_once_with_their_runs():
    a = {"hostname": "vm", "cpu_model": "Xeon", "cpu_cores_logical": 16, "ram_bytes": 1, "kernel": "1",
         "gpus": [{"name": "H100", "uuid": "GPU-1"}]}
    same = {**a, "kernel": "2", "gpus": [{"name": "H100", "uuid": "GPU-2"}]}  # another session, another card
    other = {"hostname": "vm", "cpu_model": "EPYC", "cpu_cores_logical": 2, "ram_bytes": 1, "gpus": []}
    results = [make_result(run_id="r1"), make_result(run_id="r2"), make_result(run_id="r2"), make_result(run_id="r3")]
    entries = machines_once(results, {"r1": a, "r2": other, "r3": same, "r4": None})
    assert [(e.run_ids, e.trials) for e in entries] == [(["r1", "r3"], 2), (["r2"], 2), (["r4"], 0)]
    assert entries[0].fingerprint == same and entries[2].fingerprint is None


def test_one_host_name_on_two_cpu_generations_is_two_machines():
    # The dev VM keeps its host name and masked model name ("AMD EPYC") across CPU generations:
    # AVX2 only on 2026-11-23, AVX-512 on 2026-11-26, where mlp trained 3x as fast.
    avx2 = {"hostname": "vm", "cpu_model": "AMD EPYC", "cpu_cores_logical": 2, "ram_bytes": 1, "gpus": [],
            "cpu_flags": {"avx2": True, "avx512f": False, "avx512_bf16": False}}
    avx512 = {**avx2, "cpu_flags": {"avx2": True, "avx512f": True, "avx512_bf16": True}, "kernel": "other"}
    entries = machines_once([make_result(run_id="r1"), make_result(run_id="r2")], {"r1": avx2, "r2": avx512})
    assert [e.run_ids for e in entries] == [["r1"], ["r2"]]
    assert machine_key(avx2) != machine_key(avx512)
    assert machine_key(avx2) == machine_key({**avx2, "kernel": "new", "cpu_flags_hash": "changed"})
    # and the reader can tell the two apart: the page's cards and compare's labels name the sets
    cards = machine_cards(entries, [make_result(run_id="r1"), make_result(run_id="r2")], {})
    assert [c["headline"] for c in cards] == ["AMD EPYC (avx2) · 2 logical cores · 1 B RAM · no GPU",
                                              "AMD EPYC (avx2, avx512f, avx512_bf16) · 2 logical cores · 1 B RAM · no GPU"]
    assert ("instruction sets", "avx2, avx512f, avx512_bf16") in cards[1]["fields"]
    assert machine_text({"r1": avx2, "r2": avx512}) == "vm (AMD EPYC; avx2), vm (AMD EPYC; avx2, avx512f, avx512_bf16)"
    assert machine_text({"r": {"hostname": "old", "cpu_model": "Xeon"}}) == "old (Xeon)"  # flags never read
    # an imported bundle's odd flags neither break the key nor reach the page: known flags only
    odd = {**avx2, "cpu_flags": {"avx2": True, "avx512f": [1], "[b]x[/b]": True, "fma": {"a": 1}}}
    assert machine_key(odd) == ("vm", "AMD EPYC", ("avx2",), ()) and hash(machine_key(odd))
    assert machine_text({"r": odd}) == "vm (AMD EPYC; avx2)"
    # two lent VMs alike but for their GPUs: `compare` said "Different machines" of two equal texts
    gpu = {**avx2, "gpus": [{"name": "NVIDIA H200"}]}
    assert machine_text({"a": avx2, "b": gpu}) == "vm (AMD EPYC; avx2), vm (AMD EPYC; avx2; NVIDIA H200)"
    assert machine_key({**avx2, "cpu_flags": "garbage"}) == ("vm", "AMD EPYC", (), ())
    # a fingerprint from before a flag was a key flag does not list it: the same machine still
    newer = {**avx2, "cpu_flags": {"avx2": True, "avx512f": False, "arm_bf16": False}}
    assert machine_key(newer) == machine_key({**avx2, "cpu_flags": {"avx2": True, "avx512f": False}})


def test_recommendation_in_one_line():
    knee = [Line("device", "cpu", "device: ..."),
            Line("batch_size", 64, "batch size: ...", {"best_batch": 256, "chosen_samples_per_s": 95.0,
                                                      "best_samples_per_s": 100.0}),
            Line("precision", "fp32", "precision: ...")]
    assert recommendation_text(knee) == "cpu, batch 64, fp32: fastest device in fp32; the throughput knee, 95% of b256's samples/s"
    fastest = [Line("device", "cuda:0", ""), Line("batch_size", 256, "", {"best_batch": 256})]
    assert recommendation_text(fastest) == "cuda:0, batch 256: fastest device in fp32; the fastest batch measured"
    assert recommendation_text([Line("device", None, "not measured")]) is None
    jax = Line("framework", "jax", "framework: ...", {"faster": "jax", "compared": [
        {"framework": "jax", "ratio": 2.99}, {"framework": "tensorflow", "ratio": 0.8}]})
    assert recommendation_text([*fastest, jax]) == ("cuda:0, batch 256: fastest device in fp32; the fastest batch "
                                                   "measured; jax trains it 2.99x as fast here (`--framework jax`)")
    same = Line("framework", "torch", "framework: ...", {"faster": None, "compared": []})
    assert recommendation_text([*fastest, same]).endswith("the fastest batch measured")


@pytest.mark.parametrize("command,target", [
    ("/opt/venv/bin/rigbench recommend mlp -d cpu --db x.db", ("mlp", "torch")),
    ("rigbench recommend --quick resnet:depth=56 --framework jax", ("resnet:depth=56", "jax")),
    ("rigbench recommend cnn --framework=jax", ("cnn", "jax")),
    ("rigbench run --quick -d cpu", None), ("rigbench recommend", None), ("rigbench 'unclosed", None),
])
def test_recommend_runs_are_found_from_their_command(command, target):
    assert recommend_target(command) == target


def test_legend_names_what_varies_and_states_the_rest_once():
    rows = [make_result(device="cuda:0", precision="bf16"), make_result(device="cuda:0"), make_result(),
            make_result(workload="mlp")]
    legend = Legend(rows, omit=("workload",))
    assert legend.varying == ["device", "precision"] and legend.count() == 4
    assert [legend.label(r) for r in rows] == ["cuda:0 · bf16", "cuda:0 · fp32", "cpu · fp32", "cpu · fp32"]
    assert legend.constant() == "torch · 1 thread · eager"
    named = rows[0].model_copy(update={"device_name": H100})  # a device is named by its name
    assert Legend([named, rows[2]]).label(named) == f"{H100} · bf16"
    same = [make_result(run_id="a"), make_result(run_id="b")]
    assert [Legend(same).label(r) for r in same] == ["run a", "run b"] and Legend(same).count() == 2
    assert Legend(same[:1]).label(same[0]) == "cpu"  # nothing varies: the device


def test_colours_follow_names_across_charts_and_log_scales_past_10x():
    a = Chart("a", "", "", "", [Series("cpu"), Series("cuda:0"), Series("ref", dash=True)])
    b = Chart("b", "", "", "", [Series("cuda:0"), Series("fixed", colour="#000000"), Series("cpu")])
    assign_colours([a, b])
    assert [s.colour for s in a.series] == [COLOURS[0], COLOURS[1], None]
    assert [s.colour for s in b.series] == [COLOURS[1], "#000000", COLOURS[0]]
    assert (y_scale_for([1.0, 10.0]), y_scale_for([1.0, 10.5]), y_scale_for([0.0, 5.0]), y_scale_for([])) == (
        "linear", "log", "linear", "linear")


def test_published_ratio_is_the_median_of_the_papers_own_pairs():
    text = resources.files("rigbench.analysis").joinpath("data/published/yin2020_cpu_vs_gpu.csv").read_text()
    rows = list(csv.DictReader(text.splitlines()))
    speed = {(r["framework"], r["device"]): float(r["steps_per_s"]) for r in rows if r["steps_per_s"]}
    ratios = [speed[(f, "GTX 1060")] / speed[(f, "i7-8650U")] for f, d in speed if d == "i7-8650U"]
    [yin] = [p for p in published_gpu_cpu_ratios() if p.source == "yin2020"]
    assert (yin.workload, yin.gpu, yin.cpu, len(yin.pairs)) == ("cnn", "GTX 1060", "i7-8650U", len(ratios))
    assert yin.ratio == pytest.approx(median(ratios))
    assert (yin.low, yin.high) == (pytest.approx(min(ratios)), pytest.approx(max(ratios)))
    # Shi et al.'s ResNet-56 stands for resnet:depth=56, their FCN-S (same family) for mlp
    shi = {(p.gpu, p.workload): p for p in published_gpu_cpu_ratios() if p.source == "shi2016"}
    assert shi[("GTX 1080", "mlp")].network == "FCN-S" and ("GTX 1080", "resnet:depth=56") in shi
    assert shi[("GTX 1080", "mlp")].cpu == "desktop CPU, 8 threads"



def test_screenshot_without_playwright_is_one_line_exit_2(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from rigbench import cli
    from rigbench.store import Store

    db = str(tmp_path / "r.db")
    Store(db).add_run("r1", "2026-01-01T00:00:00+00:00", "test", {})
    Store(db).add_result(make_result())
    monkeypatch.setitem(sys.modules, "playwright", None)  # `import playwright...` now fails
    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)
    proc = CliRunner().invoke(cli.app, ["report", "--db", db, "--out", str(tmp_path / "r.html"),
                                        "--screenshot", str(tmp_path / "r.png")])
    assert proc.exit_code == 2
    assert "the screenshot needs playwright and Chromium: pip install playwright" in proc.output
    assert (tmp_path / "r.html").exists() and not (tmp_path / "r.png").exists()


def test_png_into_a_file_is_one_line_exit_2_before_the_page_is_written(tmp_path):
    from typer.testing import CliRunner

    from rigbench import cli
    from rigbench.store import Store
    from tests.e2e.test_bad_input import assert_one_line_error

    db = str(tmp_path / "r.db")
    Store(db).add_run("r1", "2026-01-01T00:00:00+00:00", "test", {})
    Store(db).add_result(make_result())
    a_file = tmp_path / "figures.png"
    a_file.write_bytes(b"kept")
    page = tmp_path / "r.html"
    # checked before the page is drawn: the page was written, then the PNGs failed, exit 2 with the page there
    for png, message in ((a_file, f"--png {a_file} is a file: give a folder"),
                         (a_file / "sub", f"cannot write --png {a_file / 'sub'}: Not a directory")):
        assert_one_line_error(CliRunner().invoke(cli.app, ["report", "--db", db, "--out", str(page), "--png", str(png)]),
                              message)
        assert not page.exists()
    assert a_file.read_bytes() == b"kept"
    # the page cannot be written: the --png folder made for it is gone again
    assert_one_line_error(CliRunner().invoke(cli.app, ["report", "--db", db, "--out", str(tmp_path / "no" / "r.html"),
                                                       "--png", str(tmp_path / "figures")]), "cannot write --out")
    assert not (tmp_path / "figures").exists()


def test_a_long_legend_gets_a_row_per_entry_that_does_not_fit_beside_the_last():
    from rigbench.reports import html
    from rigbench.reports.chart_model import Chart, Series

    # the H200 bundles' cnn energy chart: 17 names of 46-66 characters, one a row on a half-width
    # chart, for which counting characters made room for 11 rows, and plotly's legend, at most
    # half the chart high unless told, scrolled
    names = [f"NVIDIA H200 · torch · fp32 · eager · one process {i:02d}" for i in range(17)]
    assert html.legend_rows(names, html.LEGEND_WIDTH_PX) == 17
    assert html.legend_rows(["fp32", "bf16", "tf32"], html.LEGEND_WIDTH_PX) == 1
    chart = Chart(id="energy", title="t", x_title="x", y_title="y", series=[Series(name=n, x=[1], y=[1.0]) for n in names])
    layout = html.plotly_figure(chart)["layout"]
    assert layout["margin"]["b"] == 60 + 17 * html.LEGEND_ROW_PX and layout["legend"]["maxheight"] == 1


def test_small_multiples_layout_in_plotly():
    go = pytest.importorskip("plotly.graph_objects")
    from rigbench.reports import html
    from rigbench.reports.charts import gather
    from tests.unit.test_report_data import train_result

    results = [make_result(batch=8, speed=10.0), make_result(batch=16, speed=500.0), make_result(workload="mlp"),
               make_result(workload="mlp", precision="bf16"), train_result(0.05)]
    charts = {c.id: c for _, cs in gather(results) for c in cs}
    figure = html.plotly_figure(charts["speed"])
    layout = figure["layout"]
    assert layout["grid"]["rows"] == 1 and layout["grid"]["columns"] == 2
    assert [a["text"] for a in layout["annotations"]] == ["<b>cnn</b>", "<b>mlp</b>"]
    assert layout["yaxis"]["type"] == "log" and layout["yaxis2"]["rangemode"] == "tozero"  # 50x vs 1x
    assert layout["yaxis"]["dtick"] == 1  # over a decade: a label per decade
    # a log axis within one decade (the dev VM's gpt and vit on the roofline, 1.0G and 4.8G
    # FLOP/s, no ceilings) had one label, 1G: plotly's between decades are kept there
    from rigbench.reports.chart_model import Chart, Series

    roof = Chart(id="roofline", title="t", x_title="x", y_title="y", series=[Series(name="gpt", x=[14.6], y=[4.8e9]),
                 Series(name="vit", x=[20.2], y=[1.0e9])], kind="scatter", x_scale="log", y_scale="log")
    assert "dtick" not in html.plotly_figure(roof)["layout"]["yaxis"]
    roof.series[0].y = [12e9]
    assert html.plotly_figure(roof)["layout"]["yaxis"]["dtick"] == 1
    assert [(t["xaxis"], t["yaxis"]) for t in figure["data"]] == [("x", "y"), ("x2", "y2"), ("x2", "y2"), ("x", "y")]
    # the cnn line and mlp's fp32 share a name: one legend entry; the legend sits below the plots
    assert [t["showlegend"] for t in figure["data"]] == [True, False, True, True]
    assert layout["legend"]["yref"] == "container" and layout["legend"]["y"] == 0
    assert layout["title"]["subtitle"]["text"] == "same for every series: cpu · torch · 1 thread · eager"
    go.Figure(data=figure["data"], layout=layout)  # plotly accepts it
    # a long workload name is cut on its panel (it ran over the next panel's), whole on hover
    long = make_result(workload="gpt", options={"preset": "small", "tag": "x" * 60})
    titles = html.plotly_figure({c.id: c for _, cs in gather([long, make_result()]) for c in cs}["speed"])["layout"]["annotations"]
    assert [t["text"] for t in titles] == ["<b>cnn</b>", f"<b>gpt:preset=small,tag={'x' * 43}…</b>"]  # 65 a panel, 2 abreast
    assert "hovertext" not in titles[0] and titles[1]["hovertext"] == f"gpt:preset=small,tag={'x' * 60}"
    loss = html.plotly_figure(charts["loss_curves"])
    assert loss["layout"]["xaxis"]["dtick"] == 1  # epochs are whole numbers
    page, _ = html.render(results, {"r1": {}})
    assert 'displayModeBar: "hover"' in page and "@media print" in page
    # every headline on the CPU: no speed-up column of "1.00× (the CPU is fastest)" rows
    assert "speed-up over the CPU</th>" not in page and 'class="num speedup"' not in page
    gpu_page, _ = html.render(headline_results(), {"r1": {}})
    assert "speed-up over the CPU</th>" in gpu_page and '<td class="num speedup">12.00×' in gpu_page
