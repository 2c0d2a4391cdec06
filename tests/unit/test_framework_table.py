"""`compare --frameworks`: the thesis's Table 5 layout from stored results (analysis/frameworks.py),
and the command over a real SQLite database."""

from __future__ import annotations

import csv
import itertools
import json
from importlib import resources

import pytest
from typer.testing import CliRunner

from rigbench import cli
from rigbench.analysis.frameworks import framework_tables, slowest_to_fastest
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store

_ids = itertools.count(1)


def make_result(framework="torch", workload="cnn", device="cpu", batch=128, samples_per_s=512.0, *,
                created="2026-01-01T00:00:00+00:00", kind_train=False, precision="fp32", status="ok", **metrics):
    train = {"train": {"dataset": "digits", "epochs": 1}} if kind_train else {}
    spec = TrialSpec(workload=workload, framework=framework, device=device, batch_size=batch, precision=precision,
                     **train)
    values = {"samples_per_s": samples_per_s, "cpu_util_pct_mean": 48.0, "rss_peak_mib": 400.0, "steps_measured": 10}
    values.update(metrics)
    return Result(id=next(_ids), run_id="r1", created_at=created, spec=spec,
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


def test_only_fp32_full_protocol_speed_trials_and_the_newest_of_a_configuration():
    results = [
        make_result("torch", samples_per_s=128.0, created="2026-01-01T00:00:00+00:00"),
        make_result("torch", samples_per_s=384.0, created="2026-01-02T00:00:00+00:00"),  # newer: stands
        make_result("jax", precision="bf16", samples_per_s=9999.0),
        make_result("jax", kind_train=True, samples_per_s=9999.0),
        make_result("jax", status="crash", samples_per_s=None),
    ]
    [table] = framework_tables(results)
    assert [(r.framework, r.steps_per_s) for r in table.ours] == [("torch", 3.0)]


def test_default_batch_is_the_workloads_then_the_most_measured_and_batch_can_be_chosen():
    mlp = [make_result(workload="mlp", batch=b) for b in (16, 16, 64, 8)]
    mlp[1] = make_result("jax", workload="mlp", batch=16)
    assert framework_tables(mlp)[0].batch_size == 64  # mlp's default batch
    del mlp[2]
    assert framework_tables(mlp)[0].batch_size == 16  # the batch measured in most configurations
    assert framework_tables(mlp, batch_size=8)[0].batch_size == 8
    assert framework_tables(mlp, batch_size=999) == []
    assert framework_tables(mlp, workloads=["cnn"]) == []


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
    assert "cnn, batch 128" in done.output and "MXNet 1.5.0 (yin2020)" in done.output
    assert "fastest / slowest framework: cpu x2.00" in done.output
    done = runner.invoke(cli.app, ["compare", "--frameworks", "cnn", "--run", "fwrun", "--db", db, "--json"])
    [table] = json.loads(done.output)
    assert [(r["framework"], r["steps_per_s"]) for r in table["ours"]] == [("jax", 4.0), ("torch", 2.0)]


@pytest.mark.parametrize("args, message", [
    (["compare", "--frameworks", "nosuch"], "unknown workload 'nosuch'"),
    (["compare", "--frameworks", "--published"], "--frameworks takes workloads"),
    (["compare", "--batch-size", "8"], "--batch-size goes with --frameworks"),
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
    assert [(s.name, s.x, s.y) for s in ours] == [("jax", ["Test CPU"], [4.0]), ("torch", ["Test CPU"], [2.0])]
    assert theirs["MXNet 1.5.0"] == {"GTX 1060 (Yin 2020)": 32.22, "i7-8650U (Yin 2020)": 3.65}
    # one framework everywhere: nothing to put side by side, but the thesis's table still has ours beside it
    assert [c.id for c in framework_charts(results[:1])] == ["frameworks_table5"]
