"""What the report draws from a given list of Results: series, points, sections, escaping."""

import json
import math
import sys

import pytest
from typer.testing import CliRunner

from rigbench import api, cli
from rigbench.errors import UsageError
from rigbench.reports.charts import gather
from rigbench.spec import Metrics, Result, TrialSpec

_ids = iter(range(1, 10_000))


def make_result(workload="cnn", device="cpu", batch=16, speed=100.0, precision="fp32", threads=1,
                status="ok", run_id="r1", error=None, options=None, **metrics):
    """A stored-looking Result; speed None (or a failed status) leaves samples/s empty."""
    spec = TrialSpec(workload=workload, device=device, batch_size=batch, precision=precision,
                     threads=threads, workload_options=options or {})
    values = {"cpu_util_pct_mean": 45.0, "rss_peak_mib": 400.0, "step_time_ms_median": 12.5, "steps_measured": 10}
    if status == "ok" and speed is not None:
        values.update(samples_per_s=speed, samples_per_s_ci=(speed * 0.9, speed * 1.2))
    values.update(metrics)
    return Result(id=next(_ids), run_id=run_id, created_at="2026-01-01T00:00:00+00:00", spec=spec,
                  status=status, error=error, threads=threads, metrics=Metrics(**values),
                  software={"torch": "2.13.0"})


def every_kind_of_result():
    """Results that fill every chart: CPU and GPU, fp32 and bf16, 1 and 2 threads, a crash."""
    gpu = {"gpu_util_pct_mean": 60.0, "gpu_mem_peak_mib": 900.0}
    return [
        make_result(batch=8, speed=100.0), make_result(batch=16, speed=150.0),
        make_result(device="cuda:0", batch=8, speed=1000.0, **gpu),
        make_result(device="cuda:0", batch=16, speed=1800.0, **gpu),
        make_result(device="cuda:0", batch=16, speed=2700.0, precision="bf16", **gpu),
        make_result(batch=16, speed=270.0, threads=2),
        make_result(batch=16, status="crash", error="boom <script>alert(1)</script>"),
    ]


def charts_by_id(results):
    return {chart.id: chart for _, charts in gather(results) for chart in charts}


def series(chart):
    return {s.name: (s.x, s.y) for s in chart.series}


def panels(chart):
    """(panel, series name) -> (x, y) of a small-multiples chart's measured lines."""
    return {(s.panel, s.name): (s.x, s.y) for s in chart.series if not s.mark}


def test_one_line_per_workload_and_device_in_batch_order():
    results = [make_result(batch=16, speed=150.0), make_result(batch=8, speed=100.0),
               make_result(workload="mlp", batch=16, speed=300.0)]
    speed = charts_by_id(results)["speed"]
    # one panel per workload; nothing but the workload differs: each line is named by its device
    # and the rest is stated once
    assert speed.panels == ["cnn", "mlp"] and speed.note == "cpu · torch · fp32 · 1 thread · eager"
    assert panels(speed) == {("cnn", "cpu"): ([8, 16], [100.0, 150.0]), ("mlp", "cpu"): ([16], [300.0])}
    cnn = speed.series[0]
    assert cnn.err_minus == pytest.approx([10.0, 15.0]) and cnn.err_plus == pytest.approx([20.0, 30.0])
    assert speed.x_scale == "log2" and speed.x_title == "batch size"
    # the knee of the line with two batches: b16 is its best (b8's 100 < 90% of 150)
    [knee] = [s for s in speed.series if s.mark]
    assert (knee.panel, knee.x, knee.y) == ("cnn", [16], [150.0])
    assert speed.panel_y_scales == {"cnn": "linear", "mlp": "linear"}
    assert panels(charts_by_id(results)["cpu"])[("cnn", "cpu")] == ([8, 16], [45.0, 45.0])
    assert charts_by_id(results)["cpu"].series[0].err_plus is None  # CI only for speed


def test_an_interval_that_leaves_out_its_own_figure_draws_no_negative_error_bar(tmp_path):
    # A stored or imported CI beside its figure (import checks it lies within the step times, not
    # that it holds the figure) gave a negative error bar, and `report --png` died on it with
    # matplotlib's "'yerr' must not contain negative values".
    from rigbench.reports.png import write_pngs

    results = [make_result(batch=8, speed=100.0, samples_per_s_ci=(110.0, 120.0)),
               make_result(batch=16, speed=150.0, samples_per_s_ci=(160.0, 140.0))]
    speed = charts_by_id(results)["speed"]
    cnn = speed.series[0]
    assert cnn.err_minus == [0.0, 0.0] and cnn.err_plus == pytest.approx([20.0, 0.0])
    assert "95% CI 110.0 to 120.0" in cnn.hover[0]  # the hover still says what is stored
    assert write_pngs([speed], tmp_path)


def test_cpu_only_results_give_only_the_charts_with_data():
    results = [make_result(batch=8), make_result(batch=16),
               make_result(status="crash", error="boom"), make_result(status="oom")]
    sections = gather(results)
    assert [section.id for section, _ in sections] == ["speed", "resources"]  # no speed-up, no scaling
    assert [chart.id for chart in sections[1][1]] == ["cpu", "rss"]  # no GPU charts
    assert sum(len(s.x) for s in sections[0][1][0].series if not s.mark) == 2  # failed trials not drawn


def test_nothing_to_draw_gives_no_sections():
    assert gather([make_result(status="crash")]) == []
    assert gather([]) == []


def test_gpu_charts_and_speedup_over_cpu():
    charts = charts_by_id(every_kind_of_result())
    assert list(charts) == ["speed", "speedup_cpu", "precision", "threads", "cpu", "gpu", "rss", "gpu_mem"]
    # only GPU trials have GPU %: within them only the precision differs
    assert panels(charts["gpu"]) == {("cnn", "fp32"): ([8, 16], [60.0, 60.0]), ("cnn", "bf16"): ([16], [60.0])}
    assert charts["gpu"].note == "cuda:0 · torch · 1 thread · eager"  # the panel names the workload
    # one colour per device and framework on the whole page; fp32 and bf16 differ by style
    fp32, bf16 = charts["gpu"].series
    speed_gpu = [s for s in charts["speed"].series if s.name.startswith("cuda:0")]
    assert {s.colour for s in (fp32, bf16, *speed_gpu)} == {fp32.colour} and (fp32.style, bf16.style) == (0, 1)
    assert {s.colour for s in charts["speed"].series if s.name.startswith("cpu")} != {fp32.colour}
    speedup = charts["speedup_cpu"]
    assert speedup.kind == "bar" and speedup.x_scale == "category"
    # speedups_over_cpu pairs trials of one configuration: the 2-thread CPU trial is not the
    # base of the GPU trial (framework's default threads), the default-threads one is; per
    # workload the median of b8's 10x and b16's 12x, the range as error bars
    ours = speedup.series[0]
    assert (ours.name, ours.x, ours.y) == ("cuda:0", ["cnn"], [pytest.approx(11.0)])
    assert ours.err_minus == [pytest.approx(1.0)] and ours.err_plus == [pytest.approx(1.0)]
    # beside it, the published GPU:CPU ratios of cnn's closest published networks, grey
    published = {s.name: s for s in speedup.series[1:]}
    assert "Yin 2020: GTX 1060" in published and all(s.x == ["cnn"] for s in published.values())
    assert published["Yin 2020: GTX 1060"].colour != ours.colour


def test_gpu_memory_falls_back_to_the_allocator_peak():
    results = [make_result(device="cuda:0", allocator_peak_mib=300.0)]
    assert panels(charts_by_id(results)["gpu_mem"]) == {("cnn", "cuda:0"): ([16], [300.0])}


def test_precision_and_thread_scaling():
    charts = charts_by_id(every_kind_of_result())
    # a bar per precision, framework and device, the series named by the framework and device
    # where the chart has several (three frameworks' bars once shared one label and stacked)
    assert series(charts["precision"]) == {"bf16": (["cnn b16"], [1.5])}  # one framework and device: not named
    threads = series(charts["threads"])
    assert threads["cnn · torch · cpu · b16 · fp32"] == ([1, 2], [1.0, 1.8])
    assert threads["ideal (linear)"] == ([1, 2], [1.0, 2.0])
    assert charts["threads"].series[-1].dash


def test_repeats_are_one_bar_the_mean_of_the_newest_runs_trials():
    """A `scaling --rounds` / `run --repeat` run measures each configuration several times: one
    bar per configuration, the mean of its trials over the mean of the baseline's, with error
    bars from the slowest trial over the fastest baseline to the fastest over the slowest; an
    older run's trials of a configuration are superseded, not pooled."""
    results = [
        make_result(run_id="old", speed=1000.0, precision="bf16"),  # superseded by run "new"
        make_result(run_id="new", speed=180.0), make_result(run_id="new", speed=270.0, precision="bf16"),
        make_result(run_id="new", speed=120.0, threads=2), make_result(run_id="new", speed=330.0, precision="bf16"),
        make_result(run_id="new", speed=220.0), make_result(run_id="new", speed=300.0, threads=2),
    ]
    charts = charts_by_id(results)
    bf16 = charts["precision"].series[0]
    assert (bf16.x, bf16.y) == (["cnn b16"], [pytest.approx(300 / 200)])
    assert bf16.err_minus == [pytest.approx(1.5 - 270 / 220)] and bf16.err_plus == [pytest.approx(330 / 180 - 1.5)]
    assert "mean of 2 over mean of 2" in bf16.hover[0]
    line = charts["threads"].series[0]
    base, two = math.sqrt(180 * 220), math.sqrt(120 * 300)  # the geometric means: 199.0 and 189.7
    assert (line.x, line.y) == ([1, 2], [1.0, pytest.approx(two / base)])
    # the 1-thread point: its own trials' spread around their mean
    assert line.err_minus == [pytest.approx(1 - 180 / base), pytest.approx(two / base - 120 / 220)]
    assert line.err_plus == [pytest.approx(220 / base - 1), pytest.approx(300 / 180 - two / base)]


def test_single_trials_draw_no_error_bars():
    charts = charts_by_id(every_kind_of_result())
    assert all(s.err_minus is None and s.err_plus is None for s in charts["precision"].series)
    assert all(s.err_minus is None for s in charts["threads"].series)


def test_scaling_needs_a_baseline():
    no_fp32 = [make_result(precision="bf16"), make_result(threads=4), make_result(threads=8)]
    assert set(charts_by_id(no_fp32)) == {"speed", "cpu", "rss"}


def test_names_say_what_differs_between_runs():
    results = [make_result(run_id="r1"), make_result(run_id="r2", speed=120.0)]
    # only the run differs: the run names the lines
    assert set(panels(charts_by_id(results)["speed"])) == {("cnn", "run r1"), ("cnn", "run r2")}
    # when a configuration differs too, lines of one configuration from two runs share a name
    # (one legend entry, one colour)
    results.append(make_result(run_id="r2", precision="bf16"))
    speed = charts_by_id(results)["speed"]
    assert [s.name for s in speed.series if not s.mark] == ["fp32", "fp32", "bf16"]
    assert len({s.colour for s in speed.series if s.name == "fp32"}) == 1


def test_other_configuration_fields_make_their_own_line_named_by_what_differs():
    results = [make_result(batch=8, speed=100.0), make_result(batch=16, speed=150.0),
               make_result(batch=16, speed=90.0)]
    results[2].spec = results[2].spec.model_copy(update={"lr": 0.5})
    assert panels(charts_by_id(results)["speed"]) == {("cnn", "lr default"): ([8, 16], [100.0, 150.0]),
                                                      ("cnn", "lr 0.5"): ([16], [90.0])}


def test_data_parallel_lines_are_named_in_words():
    # the H200 bundle's `run --data-parallel` trials named every line "... · data_parallel False"
    results = [make_result(batch=8, speed=100.0), make_result(batch=16, speed=90.0), make_result(batch=16, speed=80.0)]
    results[1].spec = results[1].spec.model_copy(update={"data_parallel": True})
    results[2].spec = results[2].spec.model_copy(update={"world_size": 4, "nodes": 2})
    assert set(panels(charts_by_id(results)["speed"])) == {
        ("cnn", "one process"), ("cnn", "data parallel x1"), ("cnn", "data parallel x4 over 2 nodes")}
    # only data-parallel trials: said above the chart and in the summary's configuration, as
    # `results list` says x2 (the dev VM's `run mlp --processes 2` read as one process's speed)
    from rigbench.analysis.summary import summary_rows
    from rigbench.reports.summary_table import summary_cells

    two = make_result(batch=64, speed=327.0)
    two.spec = two.spec.model_copy(update={"world_size": 2})
    assert charts_by_id([two])["speed"].note == "cpu · torch · fp32 · 1 thread · eager · data parallel x2"
    assert summary_cells(summary_rows([two]))[0]["config"] == "torch · fp32 · eager · batch 64 · data parallel x2 · 1 thread"
    assert "one process" not in charts_by_id([make_result()])["speed"].note


def test_the_data_parallel_table_rounds_as_results_show():
    pytest.importorskip("jinja2")
    pytest.importorskip("plotly")
    from rigbench.rank_record import RankRecord
    from rigbench.reports import html

    # the H200's one-rank `run --data-parallel` trial: its all-reduce read "0.0 ms" on the page
    r = make_result(allreduce_grad_ms=0.0274, allreduce_busbw_gbs=0.0)
    r.spec = r.spec.model_copy(update={"data_parallel": True})
    r = r.model_copy(update={"ranks": [RankRecord(rank=0, status="ok")]})
    page, _ = html.render([r], {"r1": None})
    assert '<td class="num">0.0274 ms</td><td class="num">0 GB/s</td>' in page


def test_hover_has_value_and_spec_and_escapes_user_text():
    hostile = make_result(options={"tag": "<img src=x onerror=alert(1)>"}, speed=123.4)
    hover = charts_by_id([hostile])["speed"].series[0].hover[0]
    assert "123.4 samples/s (95% CI 111.1 to 148.1)" in hover
    assert "torch cpu b16 fp32" in hover and f"trial {hostile.id} · run r1" in hover
    assert "<img" not in hover and "&lt;img src=x onerror=alert(1)&gt;" in hover
    assert "<br>" in hover  # plotly's line break, the one tag we write
    assert "[busy]" not in hover
    busy = make_result(speed=50.0, others_cpu_pct_mean=48.6)
    assert "[busy] other processes used 49% of the CPU meanwhile" in charts_by_id([busy])["speed"].series[0].hover[0]


def test_parse_where():
    assert api.parse_where(["device=cpu", "workload=cnn", "workload=mlp", "batch_size=016"]) == {
        "device": {"cpu"}, "workload": {"cnn", "mlp"}, "batch_size": {"16"}}
    for bad, message in [("colour=red", "unknown --where key 'colour'"), ("device", "KEY=VALUE"),
                         ("device=", "KEY=VALUE"), ("batch_size=x", "whole number")]:
        with pytest.raises(UsageError, match=message):
            api.parse_where([bad])


def test_rendered_page_escapes_text_and_embeds_json_safely():
    pytest.importorskip("jinja2")
    pytest.importorskip("plotly")
    from rigbench.reports import html

    results = every_kind_of_result()
    page, charts = html.render(results, {"r1": {"hostname": "<b>evil</b>", "cpu_model": "EPYC"}})
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>evil</b>" not in page and "&lt;b&gt;evil&lt;/b&gt;" in page
    start = page.index('<script type="application/json" id="rigbench-charts">')
    block = page[start:page.index("</script>", start)]
    assert "<" not in block.split(">", 1)[1]  # nothing in the data can close the block
    figures = json.loads(block.split(">", 1)[1])
    assert [f["id"] for f in figures] == [c.id for c in charts]
    assert page.count("* plotly.js v") == 1


def test_plotly_accepts_every_figure():
    go = pytest.importorskip("plotly.graph_objects")
    from rigbench.reports import html

    charts = charts_by_id(every_kind_of_result()).values()
    for chart in charts:
        figure = html.plotly_figure(chart)
        built = go.Figure(data=figure["data"], layout=figure["layout"])  # raises on an unknown property
        assert len(built.data) == len(figure["data"])
    assert charts


def test_missing_report_dependency_is_a_usage_error(monkeypatch, tmp_path):
    import rigbench.reports

    # forget an earlier import, so that api.report imports the module afresh
    monkeypatch.delitem(sys.modules, "rigbench.reports.html", raising=False)
    monkeypatch.delattr(rigbench.reports, "html", raising=False)
    monkeypatch.setitem(sys.modules, "plotly", None)  # `import plotly` now fails
    monkeypatch.setitem(sys.modules, "plotly.offline", None)
    with pytest.raises(UsageError, match=r"pip install 'rigbench\[report\]'"):
        api.report(str(tmp_path / "r.html"), db=str(tmp_path / "r.db"))


def test_run_prints_the_report_command(monkeypatch, tmp_path):
    done = make_result()
    monkeypatch.setattr(api, "plan_run", lambda **kw: [done.spec])
    monkeypatch.setattr(api, "run", lambda specs, **kw: api.RunOutcome("abc123", "sqlite:///x.db", [done], False))
    db = str(tmp_path / "x.db")
    proc = CliRunner().invoke(cli.app, ["run", "cnn", "--db", db])
    assert proc.exit_code == 0, proc.output
    assert f"Report: rigbench report --run abc123 --db {db} --out report.html" in proc.output
    proc = CliRunner().invoke(cli.app, ["run", "cnn", "--db", db, "--json"])
    assert "Report:" not in proc.output


def train_result(lr, batch=32, accuracies=(0.5, 0.8, 0.92), target=0.9, status="ok", rid=1):
    from rigbench.analysis.training import train_summary
    from rigbench.spec import EpochRecord, TrainOptions

    epochs = [EpochRecord(epoch=i + 1, steps=40, train_loss=1.0 / (i + 1), accuracy=a,
                          train_seconds=2.0, eval_seconds=0.1) for i, a in enumerate(accuracies)]
    spec = TrialSpec(workload="mlp", batch_size=batch, lr=lr,
                     train=TrainOptions(dataset="digits", epochs=len(epochs), target_accuracy=target))
    metrics = Metrics(dataset="digits", **{k: v for k, v in train_summary(epochs, batch, target).items()})
    return Result(id=rid, run_id="r", created_at="t", spec=spec, status=status, metrics=metrics,
                  epoch_records=epochs)


def test_training_section_only_with_train_results_and_right_points():
    assert "training" not in [s.id for s, _ in gather([make_result()])]
    results = [train_result(0.05, rid=1), train_result(0.005, accuracies=(0.3, 0.5, 0.6), rid=2),
               train_result(1e6, accuracies=(0.4,), status="diverged", rid=3)]
    sections = dict((s.id, charts) for s, charts in gather(results))
    charts = {c.id: c for c in sections["training"]}
    acc = charts["accuracy_lr"].series[0]
    assert acc.x == ["0.005", "0.05", "1e+06"]  # sorted by learning rate, as category labels
    assert acc.y == pytest.approx([60.0, 92.0, 40.0])
    to_target = charts["to_target_lr"].series[0]
    assert to_target.x == ["0.05"] and to_target.y == pytest.approx([6.0])  # only the run that got there
    assert "accuracy_batch" not in charts  # one batch size: no curve against batch
    loss = charts["loss_curves"].series
    assert len(loss) == 3 and loss[0].x == [1, 2, 3] and loss[0].y == pytest.approx([1.0, 0.5, 1 / 3])
    assert charts["accuracy_curves"].series[2].y == pytest.approx([40.0])
    # the speed charts leave training runs out
    assert "batch" not in sections


def lm_result(lr, losses, rid, baseline=3.2163):
    from rigbench.analysis.training import train_summary
    from rigbench.spec import EpochRecord, TrainOptions

    epochs = [EpochRecord(epoch=i + 1, steps=300, train_loss=v + 0.1, eval_loss=v, train_seconds=20.0,
                          eval_seconds=1.0) for i, v in enumerate(losses)]
    spec = TrialSpec(workload="gpt", batch_size=32, lr=lr, train=TrainOptions(dataset="pysrc", epochs=len(epochs)))
    summary = train_summary(epochs, 32, None, language_model=True, byte_level=True)
    return Result(id=rid, run_id="r", created_at="t", spec=spec, status="ok", epoch_records=epochs,
                  metrics=Metrics(dataset="pysrc", baseline_loss=baseline, **summary))


def test_the_method_lists_the_protocols_of_the_speed_trials_only():
    pytest.importorskip("jinja2")
    pytest.importorskip("plotly")
    from rigbench.reports import html
    from rigbench.spec import MeasureOptions

    probe = make_result(speed=50.0)
    probe.spec = probe.spec.model_copy(update={"kind": "probe", "measure": MeasureOptions(min_steps=2, min_seconds=0.0)})
    speed = make_result()
    speed.spec = speed.spec.model_copy(update={"measure": MeasureOptions(warmup_steps=1, min_steps=3, min_seconds=0.5)})
    page, _ = html.render([train_result(0.05), probe, speed], {"r": None, "r1": None})
    page = " ".join(page.split())
    # a max-batch probe's 2 steps and `train`'s default measure options are no timing protocol here
    assert "Protocols of the speed trials in this report: ≥1 warm-up steps, then ≥3 steps and ≥0.5 s timed (quick" in page
    assert page.count("steps and ≥") == 1
    page, _ = html.render([train_result(0.05)], {"r": None})
    assert "Protocols of the speed trials" not in page and "steps and ≥" not in page


def test_language_models_chart_their_held_out_loss_against_the_unigram_baseline():
    results = [lm_result(1e-3, [2.9, 2.4], rid=1), lm_result(3e-4, [3.1, 2.8, 2.6], rid=2), train_result(0.05, rid=3)]
    charts = {c.id: c for s, cs in gather(results) if s.id == "training" for c in cs}
    assert "accuracy_curves" in charts  # the classifier's accuracy, beside
    held_out = charts["held_out_loss_curves"].series
    assert [s.y for s in held_out[:2]] == [pytest.approx([2.9, 2.4]), pytest.approx([3.1, 2.8, 2.6])]
    baseline = held_out[2]  # one per data set, flat over the longest run's epochs, drawn dashed
    assert len(held_out) == 3 and baseline.dash and baseline.x == [1, 3] and baseline.y == [3.2163, 3.2163]
    final = charts["lm_loss_lr"].series[0]  # the last epoch's loss against the learning rate
    assert final.x == ["0.0003", "0.001"] and final.y == pytest.approx([2.6, 2.4])


def test_busy_trials_are_counted_at_the_top_and_marked_in_the_summary_and_the_list():
    pytest.importorskip("jinja2")
    pytest.importorskip("plotly")
    from rigbench.analysis.summary import summary_rows
    from rigbench.reports import html
    from rigbench.reports.summary_table import summary_cells

    quiet_gpu = make_result(device="cuda:0", speed=1000.0, others_cpu_pct_mean=1.0)
    busy_cpu = make_result(speed=20.0, others_cpu_pct_mean=52.0)
    [row] = summary_cells(summary_rows([quiet_gpu, busy_cpu]))
    # the GPU's 50x over the CPU rests on a CPU trial timed under load: the note says so
    assert row["samples_note"] == f"trial {quiet_gpu.id}"
    assert row["speedup_note"].startswith(f"over CPU trial {busy_cpu.id} (busy) (20.0 samples/s")
    page, _ = html.render([quiet_gpu, busy_cpu], {"r1": None})
    assert "<b>Busy</b>1 trial timed while other processes used 10% or more of the CPU" in page
    assert page.count("20.0 [18.0–24.0] [busy]") == 1 and "1,000 [900–1,200] [busy]" not in page  # the list
    quiet_page, _ = html.render([quiet_gpu], {"r1": None})
    assert "<b>Busy</b>" not in quiet_page and "[busy]" not in quiet_page


def test_one_trial_is_counted_in_the_singular():
    """A page of one trial read "1 trials in 1 run", "1 speed trials" and "Show all 1 trials"."""
    pytest.importorskip("jinja2")
    pytest.importorskip("plotly")
    from rigbench.reports import html

    one, _ = html.render([make_result()], {"r1": {"hostname": "vm", "cpu_model": "EPYC"}})
    assert "1 trials" not in one and "1 speed trials" not in one
    assert "1 trial in 1 run" in one and "1 speed trial<" in one and "<summary>Show the trial</summary>" in one
    two, _ = html.render([make_result(), make_result(batch=32)], {"r1": {"hostname": "vm", "cpu_model": "EPYC"}})
    assert "2 trials in 1 run" in two and "<summary>Show all 2 trials</summary>" in two
