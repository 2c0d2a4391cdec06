"""`compare --frameworks`: the thesis's Table 5 layout from stored results (analysis/frameworks.py),
and the command over a real SQLite database."""

from __future__ import annotations

import csv
import itertools
import json
from importlib import resources

import pytest
from rich.console import Console
from typer.testing import CliRunner

from rigbench import cli
from rigbench.analysis.frameworks import framework_tables, settings, slowest_to_fastest
from rigbench.reports.compare_tables import framework_table
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store

_ids = itertools.count(1)


def make_result(framework="torch", workload="cnn", device="cpu", batch=128, samples_per_s=512.0, *,
                created="2026-01-01T00:00:00+00:00", kind_train=False, precision="fp32", status="ok", options=None,
                threads=None, run_id="r1", compile="off", **metrics):
    train = {"train": {"dataset": "digits", "epochs": 1}} if kind_train else {}
    spec = TrialSpec(workload=workload, framework=framework, device=device, batch_size=batch, precision=precision,
                     workload_options=options or {}, threads=threads, compile=compile, **train)
    values = {"samples_per_s": samples_per_s, "cpu_util_pct_mean": 48.0, "rss_peak_mib": 400.0, "steps_measured": 10}
    values.update(metrics)
    return Result(id=next(_ids), run_id=run_id, created_at=created, spec=spec,
                  status=status, device_name="Test CPU", metrics=Metrics(**values))


def test_rows_per_framework_and_device_with_table5_beside_cnn():
    results = [
        make_result("torch", samples_per_s=256.0),
        make_result("jax", samples_per_s=512.0, cpu_util_pct_mean=97.0, rss_peak_mib=700.0),
        make_result("torch", device="cuda:0", samples_per_s=12_800.0, gpu_util_pct_mean=40.0, gpu_mem_peak_mib=900.0),
        make_result("torch", batch=32, samples_per_s=100.0),  # another batch: listed, not shown
    ]
    [table] = framework_tables(results)
    assert (table.workload, table.batch_size, table.frameworks, table.other_batches) == ("cnn", 128, ["jax", "torch"], [32])
    # the CPU first, then the GPU; steps/s = samples/s / batch
    assert [(r.framework, r.device, r.steps_per_s) for r in table.ours] == [
        ("jax", "cpu", 4.0), ("torch", "cpu", 2.0), ("torch", "cuda:0", 100.0)]
    jax_cpu, torch_cpu, torch_gpu = table.ours
    assert (jax_cpu.cpu_pct, jax_cpu.host_mem_mib, jax_cpu.gpu_pct, jax_cpu.gpu_mem_mib) == (97.0, 700.0, None, None)
    assert (torch_gpu.gpu_pct, torch_gpu.gpu_mem_mib) == (40.0, 900.0)
    assert slowest_to_fastest(table) == {"cpu": 2.0}
    # the thesis's Table 5, as the reference file has it (read here independently of the code)
    text = resources.files("rigbench.analysis").joinpath("data/published/yin2020_cpu_vs_gpu.csv").read_text()
    expected = [(r["framework"], r["device"], float(r["steps_per_s"]), float(r["cpu_mem_mib"]))
                for r in csv.DictReader(text.splitlines())]
    assert [(r.framework, r.device, r.steps_per_s, r.host_mem_mib) for r in table.published] == expected
    assert len(expected) == 6


def test_only_plain_full_protocol_speed_trials_and_the_newest_of_a_configuration():
    results = [
        make_result("torch", samples_per_s=128.0, created="2026-01-01T00:00:00+00:00", run_id="old"),
        make_result("torch", samples_per_s=384.0, created="2026-01-02T00:00:00+00:00", run_id="new"),  # stands
        make_result("jax", kind_train=True, samples_per_s=9999.0),
        make_result("jax", status="crash", samples_per_s=None),
    ]
    [table] = framework_tables(results)
    assert [(r.framework, r.steps_per_s) for r in table.ours] == [("torch", 3.0)]


def test_each_precision_is_a_table_of_its_own_with_mfu_against_its_peak():
    """bf16 trials were left out as not fp32 ("No fp32 speed results" after a GPU's bf16 sweep):
    a precision is its own table, after fp32, MFU against that precision's peak; the thesis's
    rows (fp32) sit beside the fp32 table only."""
    calibration = {"Test CPU": {"matmul_flops": {"fp32": 100e9, "bf16": 400e9}, "created_at": "2026-01-01T00:00:00"}}
    results = [make_result("jax", precision="bf16", samples_per_s=1024.0, flops_per_sample=1e8),
               make_result("torch", samples_per_s=256.0, flops_per_sample=1e8),
               make_result("torch", precision="bf16", samples_per_s=512.0, flops_per_sample=1e8)]
    fp32, bf16 = framework_tables(results, calibrations=calibration)
    assert (fp32.precision, [r.framework for r in fp32.ours]) == ("fp32", ["torch"]) and len(fp32.published) == 6
    assert (bf16.precision, [(r.framework, r.steps_per_s) for r in bf16.ours]) == ("bf16", [("jax", 8.0), ("torch", 4.0)])
    assert bf16.published == [] and slowest_to_fastest(bf16) == {"cpu": 2.0}
    # 1e8 FLOP x 1,024 samples/s over the bf16 peak of 400 GFLOP/s; the fp32 row over the fp32 one
    assert bf16.ours[0].mfu == pytest.approx(1e8 * 1024 / 400e9) and fp32.ours[0].mfu == pytest.approx(1e8 * 256 / 100e9)
    [only] = framework_tables(results, precisions=["bf16"])
    assert only.precision == "bf16" and only.as_dict()["precision"] == "bf16"


def test_a_configurations_repeats_count_as_their_mean():
    """`run --framework torch,jax --repeat 2`: each framework's row is the geometric mean of its
    run's repeats (jax's lucky 1,568 does not put it ahead of torch), memory the highest repeat."""
    torch = [make_result("torch", samples_per_s=v, rss_peak_mib=m, tokens_per_s=None) for v, m in ((1152.0, 500.0), (800.0, 450.0))]
    jax = [make_result("jax", samples_per_s=v, cpu_util_pct_mean=u) for v, u in ((1568.0, 90.0), (512.0, 70.0))]
    [table] = framework_tables([torch[0], jax[0], torch[1], jax[1]])
    rows = {row.framework: row for row in table.ours}
    assert (rows["torch"].steps_per_s, rows["jax"].steps_per_s) == (pytest.approx(7.5), pytest.approx(7.0))  # sqrt(1152 x 800) = 960 and sqrt(1568 x 512) = 896, over 128
    assert rows["torch"].trials == [torch[0].id, torch[1].id] and rows["torch"].result_id == torch[1].id
    # memory the highest repeat; CPU use the mean over the same trials as the speed (90 and 70)
    assert rows["torch"].host_mem_mib == 500.0 and rows["jax"].cpu_pct == 80.0
    assert slowest_to_fastest(table) == {"cpu": pytest.approx(7.5 / 7.0)}
    console = Console(width=200, record=True)
    console.print(framework_table(table))
    text = console.export_text()
    assert f"mean of trials {torch[0].id}, {torch[1].id}" in text


def test_default_batch_is_the_one_most_frameworks_ran_then_the_workloads_and_batch_can_be_chosen():
    mlp = [make_result("torch", workload="mlp", batch=16), make_result("jax", workload="mlp", batch=16),
           make_result("torch", workload="mlp", batch=64), make_result("torch", workload="mlp", batch=8)]
    assert framework_tables(mlp)[0].batch_size == 16  # two frameworks there, one at mlp's default 64
    # a compiled torch trial is another row, not another framework: 64 stays the default on a tie
    one_each = [mlp[0], mlp[2], mlp[3], make_result("torch", workload="mlp", batch=16, compile="default")]
    assert framework_tables(one_each)[0].batch_size == 64
    assert framework_tables([mlp[0], mlp[3]])[0].batch_size == 16  # neither default nor quick: the largest
    assert framework_tables(mlp, batch_size=8)[0].batch_size == 8
    assert framework_tables(mlp, batch_size=999) == []
    assert framework_tables(mlp, workloads=["cnn"]) == []


def test_a_compiled_step_is_a_row_of_its_own_beside_the_frameworks():
    """torch --compile beside JAX (which compiles every step): a row `torch compile`, never
    merged with eager torch nor set against the eager frameworks in the fastest/slowest ratio."""
    results = [make_result("torch", samples_per_s=256.0), make_result("jax", samples_per_s=512.0),
               make_result("torch", samples_per_s=640.0, compile="default"),
               make_result("torch", samples_per_s=768.0, compile="reduce-overhead")]
    [table] = framework_tables(results)
    assert [(r.framework + settings(r), r.steps_per_s) for r in table.ours] == [
        ("jax", 4.0), ("torch", 2.0), ("torch compile", 5.0), ("torch compile reduce-overhead", 6.0)]
    assert table.frameworks == ["jax", "torch"] and slowest_to_fastest(table) == {"cpu": 2.0}
    assert len(table.published) == 6  # the thesis's rows still beside the fp32 cnn
    console = Console(width=200, record=True)
    console.print(framework_table(table))
    assert "torch compile reduce-overhead" in console.export_text()


def test_steps_per_second_print_whole_from_a_hundred_like_every_rate():
    """An H200's jax mlp ran 1,903 steps/s: the table printed `1.9e+03` (3 significant digits
    in exponent form); every rate prints whole with separators from 100 up, 3 digits below."""
    results = [make_result("jax", workload="mlp", batch=64, samples_per_s=1903.4 * 64),
               make_result("torch", workload="mlp", batch=64, samples_per_s=7.333 * 64)]
    [table] = framework_tables(results)
    console = Console(width=200, record=True)
    console.print(framework_table(table))
    text = console.export_text()
    assert " 1,903 " in text and " 7.33 " in text and "e+03" not in text


#: A calibration as store/calibrations.latest_calibration gives it: "Test CPU" has no spec sheet.
CALIBRATION = {"Test CPU": {"matmul_flops": {"fp32": 100e9}, "created_at": "2026-01-01T00:00:00"}}


def transformer_results():
    """gpt tiny (no options) and a bigger gpt at batch 8 in two frameworks, and vit tiny."""
    tiny = {"flops_per_sample": 1.76e8}
    big = {"flops_per_sample": 4e9}
    return [
        make_result("torch", "gpt", batch=8, samples_per_s=200.0, tokens_per_s=200.0 * 64, **tiny),
        make_result("jax", "gpt", batch=8, samples_per_s=250.0, tokens_per_s=250.0 * 64, **tiny),
        make_result("torch", "gpt", batch=8, samples_per_s=10.0, tokens_per_s=10.0 * 128,
                    options={"layers": 4, "width": 256, "context": 128}, **big),
        make_result("jax", "gpt", batch=8, samples_per_s=20.0, tokens_per_s=20.0 * 128,
                    options={"layers": 4, "width": 256, "context": 128}, **big),
        make_result("torch", "vit", batch=8, samples_per_s=100.0, flops_per_sample=3e8),
        make_result("torch", "vit", batch=8, samples_per_s=400.0, flops_per_sample=3e8, threads=1),
    ]


def test_transformers_get_a_table_per_set_of_options_with_tokens_and_mfu():
    tables = framework_tables(transformer_results(), calibrations=CALIBRATION)
    assert [(t.label, t.batch_size, t.frameworks) for t in tables] == [
        ("gpt", 8, ["jax", "torch"]), ("gpt:context=128,layers=4,width=256", 8, ["jax", "torch"]),
        ("vit", 8, ["torch"])]
    tiny, big, vit = tables
    assert tiny.options == {} and big.options == {"layers": 4, "width": 256, "context": 128}
    assert [(r.framework, r.steps_per_s, r.tokens_per_s) for r in big.ours] == [
        ("jax", 2.5, 2560.0), ("torch", 1.25, 1280.0)]
    # MFU = flops/sample x samples/s over the calibrated 100 GFLOP/s (no spec sheet for "Test CPU")
    assert [(r.mfu, r.mfu_source) for r in tiny.ours] == [
        (pytest.approx(1.76e8 * 250 / 100e9), "calibrated"), (pytest.approx(1.76e8 * 200 / 100e9), "calibrated")]
    assert vit.ours[0].tokens_per_s is None and vit.published == []
    assert [(r.threads, r.mfu) for r in vit.ours] == [(None, pytest.approx(0.3)), (1, pytest.approx(1.2))]
    assert [r.mfu for r in framework_tables(transformer_results())[0].ours] == [None, None]  # no peak known
    # a name takes every set of its options; NAME:options only those
    assert [t.label for t in framework_tables(transformer_results(), ["gpt"])] == [
        "gpt", "gpt:context=128,layers=4,width=256"]
    only = framework_tables(transformer_results(), [("gpt", {"context": 128, "layers": 4, "width": 256})])
    assert [t.label for t in only] == ["gpt:context=128,layers=4,width=256"]


def test_a_default_asked_for_by_name_is_the_same_network():
    """`run gpt` (stored options {}) and `run gpt:preset=tiny` (its default preset) train one
    network: `compare --frameworks gpt:preset=tiny` after `run gpt` printed "No plain speed results",
    the options matched as given (score resolves them)."""
    asked = [make_result("torch", "gpt", batch=8, samples_per_s=200.0, flops_per_sample=1.76e8),
             make_result("jax", "gpt", batch=8, samples_per_s=250.0, flops_per_sample=1.76e8, options={"preset": "tiny"})]
    (table,) = framework_tables(asked)
    assert table.frameworks == ["jax", "torch"]
    for chosen in (["gpt"], [("gpt", {"preset": "tiny"})], [("gpt", {"layers": 2})]):
        assert [t.frameworks for t in framework_tables(asked, chosen)] == [["jax", "torch"]], chosen
    assert framework_tables(asked, [("gpt", {"preset": "small"})]) == []


def test_report_groups_transformer_bars_by_options():
    from rigbench.reports.framework_charts import framework_charts

    [bars] = framework_charts(transformer_results(), CALIBRATION)
    assert {s.name: s.x for s in bars.series}["jax · Test CPU"] == ["gpt b8", "gpt:context=128,layers=4,width=256 b8"]
    hover = {s.name: s.hover for s in bars.series}["jax · Test CPU"][0]
    assert "16,000.0 tokens/s" in hover and "MFU 44.0% of the calibrated peak" in hover
    assert {s.name: s.x for s in bars.series}["torch t1 · Test CPU"] == ["vit b8"]


def test_command_shows_transformers_with_tokens_and_mfu(tmp_path):
    path = tmp_path / "tf.db"
    store = Store(f"sqlite:///{path}")
    store.add_run("tfrun", "2026-01-01T00:00:00+00:00", "rigbench run gpt vit", {"hostname": "elsewhere"})
    for r in transformer_results():
        store.add_result(r.model_copy(update={"id": None, "run_id": "tfrun"}))
    runner = CliRunner()
    done = runner.invoke(cli.app, ["compare", "--frameworks", "gpt:layers=4,width=256,context=128", "vit",
                                   "--run", "tfrun", "--db", str(path)])
    assert done.exit_code == 0, done.output
    assert "gpt:context=128,layers=4,width=256, fp32, batch 8" in done.output and "vit, fp32, batch 8" in done.output
    assert "gpt, fp32, batch 8" not in done.output
    assert "tokens/s" in done.output and "2,560" in done.output and "MFU" in done.output
    assert "torch t1" in done.output  # threads asked for set the row apart
    done = runner.invoke(cli.app, ["compare", "--frameworks", "gpt:nosuch=1", "--db", str(path)])
    assert done.exit_code == 2 and "has no option 'nosuch=1'" in done.output


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("fw") / "fw.db"
    store = Store(f"sqlite:///{path}")
    store.add_run("fwrun", "2026-01-01T00:00:00+00:00", "rigbench run cnn", {"hostname": "elsewhere"})
    for r in (make_result("torch", samples_per_s=256.0), make_result("jax", samples_per_s=512.0)):
        store.add_result(r.model_copy(update={"id": None, "run_id": "fwrun"}))
    return str(path)


def test_command_prints_the_table_and_json(db):
    runner = CliRunner()
    done = runner.invoke(cli.app, ["compare", "--frameworks", "--run", "fwrun", "--db", db])
    assert done.exit_code == 0, done.output
    assert "cnn, fp32, batch 128" in done.output and "MXNet 1.5.0 (yin2020)" in done.output
    assert "fastest / slowest framework: cpu x2.00" in done.output
    done = runner.invoke(cli.app, ["compare", "--frameworks", "cnn", "--run", "fwrun", "--db", db, "--json"])
    [table] = json.loads(done.output)
    assert [(r["framework"], r["steps_per_s"]) for r in table["ours"]] == [("jax", 4.0), ("torch", 2.0)]
    done = runner.invoke(cli.app, ["compare", "--frameworks", "--precision", "bf16", "--db", db])
    assert done.exit_code == 0 and "No plain speed results at bf16 to compare. Measure some with e.g. `rigbench " \
        "run cnn -b 128 --framework torch,jax -d cpu --precision bf16`." in " ".join(done.output.split())
    # the database's trials are another machine's: said, with the way to compare them
    assert "2 stored results are other machines' (imported, or a fleet's): `--run ID` compares those." \
        in " ".join(done.output.split())
    done = runner.invoke(cli.app, ["compare", "--frameworks", "--precision", "bf16,fp32", "--run", "fwrun", "--db", db])
    assert "No plain speed results at bf16: no table for it." in done.output and "cnn, fp32, batch 128" in done.output


def test_the_hint_to_add_frameworks_keeps_the_tables_settings(tmp_path):
    """A bf16 table's hint said `rigbench run ... --framework torch,jax` without the precision:
    following it measured fp32 trials, which land in another table."""
    path = str(tmp_path / "one.db")
    store = Store(f"sqlite:///{path}")
    store.add_run("r", "2026-01-01T00:00:00+00:00", "rigbench run mlp", {"hostname": "elsewhere"})
    store.add_result(make_result("torch", "mlp", device="cuda:0", batch=32, precision="bf16", run_id="r")
                     .model_copy(update={"id": None}))
    done = CliRunner().invoke(cli.app, ["compare", "--frameworks", "--run", "r", "--db", path])
    assert "only torch measured here; add others with `rigbench run mlp -b 32 --framework jax -d cuda:0 " \
        "--precision bf16`" in " ".join(done.output.split())


@pytest.mark.parametrize("args, message", [
    (["compare", "--frameworks", "nosuch"], "unknown workload 'nosuch'"),
    (["compare", "--frameworks", "--published"], "--frameworks takes workloads"),
    (["compare", "--batch-size", "8"], "--batch-size and --precision go with --frameworks"),
    (["compare", "--precision", "bf16"], "--batch-size and --precision go with --frameworks"),
    (["compare", "--frameworks", "--precision", "bf17"], "--precision must be fp32, tf32, bf16 or fp16, got 'bf17'"),
    (["compare", "--frameworks", "-b", "0"], "--batch-size must be at least 1"),
])
def test_bad_input_is_one_line_and_exit_2(db, args, message):
    done = CliRunner().invoke(cli.app, [*args, "--db", db])
    assert done.exit_code == 2
    assert message in done.output


def test_report_draws_grouped_bars_and_table5_from_the_same_rows():
    from rigbench.reports.framework_charts import framework_charts

    results = [make_result("torch", samples_per_s=256.0), make_result("jax", samples_per_s=512.0),
               make_result("jax", workload="mlp", batch=64, samples_per_s=640.0)]
    bars, table5 = framework_charts(results)
    assert {s.name: (s.x, s.y) for s in bars.series} == {
        "torch · Test CPU": (["cnn b128"], [2.0]), "jax · Test CPU": (["mlp b64", "cnn b128"], [10.0, 4.0])}  # registry order
    assert bars.kind == "bar" and bars.bar_suffix == ""
    ours = [s for s in table5.series if s.colour is None]
    theirs = {s.name: dict(zip(s.x, s.y)) for s in table5.series if s.colour}
    # ours named by device too: torch on two devices is two legend entries, as it is two colours
    assert [(s.name, s.x, s.y) for s in ours] == [("jax · Test CPU", ["Test CPU"], [4.0]),
                                                  ("torch · Test CPU", ["Test CPU"], [2.0])]
    assert theirs["MXNet 1.5.0"] == {"GTX 1060 (Yin 2020)": 32.22, "i7-8650U (Yin 2020)": 3.65}
    # one framework everywhere: nothing to put side by side, but the thesis's table still has ours beside it
    assert [c.id for c in framework_charts(results[:1])] == ["frameworks_table5"]


def test_quick_and_busy_trials_are_marked_in_the_row_and_said_under_the_table(tmp_path):
    from rigbench.spec import MeasureOptions

    path = tmp_path / "marks.db"
    store = Store(f"sqlite:///{path}")
    store.add_run("mrun", "2026-01-01T00:00:00+00:00", "rigbench run mlp", {"hostname": "elsewhere"})
    quick = make_result("torch", workload="mlp", batch=64, samples_per_s=640.0, others_cpu_pct_mean=0.5)
    quick.spec = quick.spec.model_copy(update={"measure": MeasureOptions.quick()})
    busy = make_result("jax", workload="mlp", batch=64, samples_per_s=64.0, others_cpu_pct_mean=50.0)
    ids = [store.add_result(r.model_copy(update={"id": None, "run_id": "mrun"})) for r in (quick, busy)]
    [table] = framework_tables(store.list())
    assert [(r.framework, r.quick, r.busy) for r in table.ours] == [("jax", False, [ids[1]]), ("torch", True, [])]
    done = CliRunner().invoke(cli.app, ["compare", "--frameworks", "mlp", "--run", "mrun", "--db", str(path)], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert f"trial {ids[0]} quick" in done.output and f"trial {ids[1]} busy" in done.output
    assert "  quick: timed with the short --quick protocol" in done.output
    assert f"  busy (#{ids[1]}): other processes used the CPU while these trials were timed" in done.output


def test_host_bound_gpu_trials_are_said_under_the_table(tmp_path):
    """The H200's cnn in torch: GPU busy 28.7%, the CPU 2.08 of a 2.05 ms step: its speed is the
    host's. JAX's lstm (GPU 80%, CPU 2.2 of 5.64 ms) is not; a CPU trial never is."""
    path = tmp_path / "host.db"
    store = Store(f"sqlite:///{path}")
    store.add_run("hrun", "2026-01-01T00:00:00+00:00", "rigbench run cnn", {"hostname": "elsewhere"})
    launched = make_result("torch", device="cuda:0", samples_per_s=62312.0, gpu_util_pct_mean=28.7,
                           cpu_ms_per_step=2.08, step_time_ms_median=2.05)
    busy_gpu = make_result("jax", device="cuda:0", samples_per_s=22692.0, gpu_util_pct_mean=80.2,
                           cpu_ms_per_step=2.2, step_time_ms_median=5.64)
    ids = [store.add_result(r.model_copy(update={"id": None, "run_id": "hrun"})) for r in (launched, busy_gpu)]
    [table] = framework_tables(store.list())
    assert {r.framework: r.host_bound for r in table.ours} == {"jax": [], "torch": [ids[0]]}
    done = CliRunner().invoke(cli.app, ["compare", "--frameworks", "cnn", "--run", "hrun", "--db", str(path)],
                              env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert f"  host-bound (#{ids[0]}): the GPU waited while the CPU launched the work" in done.output


def test_data_parallel_trials_are_left_out_and_steps_count_the_global_batch():
    """`sweep mlp --processes 1,2 -b 64 --framework jax`: the jax row is the one-process trial
    (980 samples/s / 64 = 15.3 steps/s), not a mean with the 2-process one (297 samples/s at a
    global batch of 128), nor with a 1-rank trial under the data-parallel wrapper; its memory is
    the one-process trial's too."""
    single = make_result("jax", workload="mlp", batch=64, samples_per_s=980.0, rss_peak_mib=430.0)
    two = make_result("jax", workload="mlp", batch=64, samples_per_s=297.0, rss_peak_mib=1089.0, global_batch=128)
    two.spec = two.spec.model_copy(update={"world_size": 2})
    wrapped = make_result("jax", workload="mlp", batch=64, samples_per_s=500.0)
    wrapped.spec = wrapped.spec.model_copy(update={"data_parallel": True})
    [table] = framework_tables([single, two, wrapped])
    [row] = table.ours
    assert (row.trials, row.steps_per_s, row.host_mem_mib) == ([single.id], pytest.approx(980 / 64), 430.0)
    assert framework_tables([two, wrapped]) == []


def test_steps_per_second_divide_by_the_global_batch():
    """A run's figure in steps: samples/s over every rank's batch (the stored global_batch, 128 for
    two ranks of 64), never the per-rank batch_size; a result stored before that metric existed
    (one process) divides by its batch."""
    from rigbench.analysis.trials import RunSpeed

    two = make_result("torch", workload="mlp", batch=64, samples_per_s=256.0, global_batch=128)
    two.spec = two.spec.model_copy(update={"world_size": 2})
    assert RunSpeed((two,)).steps_per_s == pytest.approx(2.0)
    old = make_result("torch", workload="mlp", batch=64, samples_per_s=256.0)
    assert old.metrics.global_batch is None and RunSpeed((old,)).steps_per_s == pytest.approx(4.0)


def test_the_framework_ratio_compares_frameworks_at_the_same_settings(tmp_path):
    """mlp torch at its default threads (4.39 steps/s), torch --threads 1 (6.95) and jax (5.68):
    the fastest / slowest framework is jax over torch at the default settings, 5.68 / 4.39 = 1.29;
    torch t1 over torch is a thread-count ratio and never enters it. With jax at 1 thread too, the
    t1 rows get a ratio of their own."""
    torch = make_result("torch", workload="mlp", batch=64, samples_per_s=4.39 * 64)
    torch1 = make_result("torch", workload="mlp", batch=64, samples_per_s=6.95 * 64, threads=1)
    jax = make_result("jax", workload="mlp", batch=64, samples_per_s=5.68 * 64)
    [table] = framework_tables([torch, torch1, jax])
    assert slowest_to_fastest(table) == {"cpu": pytest.approx(5.68 / 4.39)}
    jax1 = make_result("jax", workload="mlp", batch=64, samples_per_s=3.475 * 64, threads=1)
    [table] = framework_tables([torch, torch1, jax, jax1])
    assert slowest_to_fastest(table) == {"cpu": pytest.approx(5.68 / 4.39), "cpu t1": pytest.approx(2.0)}
    # two frameworks, but none at the same settings as another: no ratio, and the command says so
    path = tmp_path / "settings.db"
    store = Store(f"sqlite:///{path}")
    store.add_run("srun", "2026-01-01T00:00:00+00:00", "rigbench run mlp", {"hostname": "elsewhere"})
    for r in (torch1, jax):
        store.add_result(r.model_copy(update={"id": None, "run_id": "srun"}))
    [table] = framework_tables(store.list())
    assert slowest_to_fastest(table) == {}
    done = CliRunner().invoke(cli.app, ["compare", "--frameworks", "mlp", "--run", "srun", "--db", str(path)],
                              env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert "no two frameworks measured at the same settings (device, --threads, --compile)" in done.output
    assert "fastest / slowest framework:" not in done.output


def test_published_of_a_database_of_other_machines_says_how_to_compare_them(db):
    done = CliRunner().invoke(cli.app, ["compare", "--published", "--db", db])
    assert done.exit_code == 0
    assert ("No result of this machine matched; 2 stored results are other machines' (imported, or a fleet's): "
            "`--run ID` puts one of their runs beside the published tables.") in " ".join(done.output.split())
    done = CliRunner().invoke(cli.app, ["compare", "--published", "--run", "fwrun", "--db", db])
    assert "No result of this machine matched" not in done.output and "MXNet" in done.output


def test_a_view_of_this_machines_results_says_how_many_of_other_machines_it_left_out(tmp_path):
    from rigbench.fingerprint import this_machine_identity

    path = str(tmp_path / "mixed.db")
    store = Store(f"sqlite:///{path}")
    store.add_run("mine", "2026-01-01T00:00:00+00:00", "rigbench run cnn", this_machine_identity())
    store.add_run("theirs", "2026-01-01T00:00:00+00:00", "rigbench run cnn", {"hostname": "elsewhere"})
    store.add_result(make_result("torch", run_id="mine").model_copy(update={"id": None}))
    store.add_result(make_result("jax", run_id="theirs").model_copy(update={"id": None}))
    runner = CliRunner()
    done = runner.invoke(cli.app, ["compare", "--frameworks", "--db", path])
    assert done.exit_code == 0 and "cnn, fp32, batch 128" in done.output
    assert "Left out: 1 stored results of other machines (`--run ID` shows one of their runs)." in done.output
    done = runner.invoke(cli.app, ["compare", "--published", "--db", path])
    assert "Left out: 1 stored results of other machines (`--run ID` puts one of their runs beside" in done.output
    done = runner.invoke(cli.app, ["compare", "--frameworks", "--run", "theirs", "--db", path])
    assert "Left out" not in done.output and "jax" in done.output
