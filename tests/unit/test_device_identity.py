"""Which device measured a trial is part of its configuration wherever results of more than one
machine are in scope: an H100's and an H200's trials are both `cuda:0`, and two lent VMs' CPUs
share one name. Found with the imported GPU bundles (docs/results/gpu-h100.bundle.json and
gpu-h200*.bundle.json): compare --frameworks, compare --published and the report kept the
newest GPU's figure of each configuration and dropped the other GPU's, set the H200 against the
H100 machine's CPU, and the report's precision bars of torch, JAX and Keras shared one label and
stacked into one bar. Results are built by hand here; no trial runs."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from rigbench import cli
from rigbench.analysis.device_names import DeviceNames
from rigbench.analysis.frameworks import framework_tables, slowest_to_fastest
from rigbench.analysis.published import compare_published
from rigbench.analysis.speedups import speedups_over_cpu
from rigbench.reports.charts import gather
from rigbench.spec import Result
from rigbench.store import Store
from tests.unit.test_framework_table import make_result

H100, H200, XEON = "NVIDIA H100 80GB HBM3", "NVIDIA H200", "Intel(R) Xeon(R) Processor"
#: Two lent VMs alike but for their GPU (the bundles' fingerprints: host "vm", one masked CPU name).
MACHINES = {"h100": {"hostname": "vm", "cpu_model": XEON, "gpus": [{"name": H100}]},
            "h200": {"hostname": "vm", "cpu_model": XEON, "gpus": [{"name": H200}]}}


def on(machine: str, framework: str = "torch", device: str = "cuda:0", **kw) -> Result:
    """A trial of `machine` (its run id), its device named as that machine's adapter named it."""
    name = XEON if device == "cpu" else {"h100": H100, "h200": H200}[machine]
    return make_result(framework, device=device, run_id=machine, **kw).model_copy(update={"device_name": name})


def gpu_pair() -> list[Result]:
    """cnn at batch 128 on both GPUs, the H200's measured last (so it was the one kept)."""
    return [on("h100", samples_per_s=512.0), on("h200", samples_per_s=1024.0),
            on("h200", "jax", samples_per_s=2048.0)]


@pytest.mark.parametrize("machines", [None, MACHINES])
def test_frameworks_keep_one_row_per_gpu(machines):
    [table] = framework_tables(gpu_pair(), machines=machines)
    assert [(r.framework, r.device, r.device_name, r.steps_per_s) for r in table.ours] == [
        ("torch", "cuda:0", H100, 4.0), ("jax", "cuda:0", H200, 16.0), ("torch", "cuda:0", H200, 8.0)]
    # frameworks are set against each other on one GPU, never across the two
    assert slowest_to_fastest(table) == {f"cuda:0 ({H200})": 2.0}


def test_two_machines_cpus_of_one_name_are_two_rows_named_by_their_machine():
    results = [on("h100", device="cpu", samples_per_s=128.0), on("h200", device="cpu", samples_per_s=256.0),
               on("h200", "jax", device="cpu", samples_per_s=512.0)]
    [table] = framework_tables(results, machines=MACHINES)
    labels = [(r.framework, r.device_label, r.steps_per_s) for r in table.ours]
    assert labels == [("torch", f"{XEON} (host with {H100})", 1.0), ("jax", f"{XEON} (host with {H200})", 4.0),
                      ("torch", f"{XEON} (host with {H200})", 2.0)]
    assert slowest_to_fastest(table) == {f"cpu ({XEON} (host with {H200}))": 2.0}
    # one machine's CPU alone is named by its model, as before
    [alone] = framework_tables(results[1:], machines=MACHINES)
    assert {r.device_label for r in alone.ours} == {XEON} and slowest_to_fastest(alone) == {"cpu": 2.0}


def test_device_names_add_the_id_or_the_machine_only_where_a_name_is_shared():
    two_ids = [on("h100"), on("h100", device="cuda:1")]
    names = DeviceNames(two_ids, MACHINES)
    assert [names(r) for r in two_ids] == [f"{H100} (cuda:0)", f"{H100} (cuda:1)"]
    names = DeviceNames(gpu_pair(), MACHINES)
    assert [names(r) for r in gpu_pair()] == [H100, H200, H200]
    other_host = {"a": {"hostname": "a", "cpu_model": XEON}, "b": {"hostname": "b", "cpu_model": XEON}}
    cpus = [make_result(run_id=run).model_copy(update={"device_name": None}) for run in ("a", "b")]
    assert [DeviceNames(cpus, other_host)(r) for r in cpus] == ["cpu (host a)", "cpu (host b)"]


def test_each_gpu_is_set_against_the_cpu_of_its_own_machine():
    cpu = on("h100", device="cpu", samples_per_s=100.0)
    results = [cpu, on("h100", samples_per_s=1000.0), on("h200", samples_per_s=2000.0)]
    # the H200's machine measured no CPU trial: no speed-up over the H100 machine's CPU
    rows = speedups_over_cpu(results, MACHINES)
    assert [(r["device_name"], r["base_trial"], r["speedup"]) for r in rows] == [(H100, cpu.id, 10.0)]
    own = on("h200", device="cpu", samples_per_s=250.0)
    rows = speedups_over_cpu([*results, own], MACHINES)
    assert sorted((r["device_name"], r["base_trial"], r["speedup"]) for r in rows) == [
        (H100, cpu.id, 10.0), (H200, own.id, 8.0)]
    # without machines a CPU trial's machine is unknown: each GPU over the CPU of its configuration
    assert sorted((r["device_name"], r["speedup"]) for r in speedups_over_cpu(results)) == [(H100, 10.0), (H200, 20.0)]


def test_published_rows_sit_beside_both_gpus():
    results = [on(machine, workload="mlp", batch=64, samples_per_s=speed, flops_per_sample=56.9e6)
               for machine, speed in (("h100", 38_000.0), ("h200", 39_000.0))]
    found = compare_published(results, ["shi2016"], machines=MACHINES)
    gtx980 = [m for m in found.matches if m.row.device == "GTX 980"]
    assert sorted((m.ours.device_name, m.ours_device) for m in gtx980) == [(H100, H100), (H200, H200)]


def report_results() -> list[Result]:
    """The bundles' shape: a cnn fp32/bf16 sweep on both GPUs (torch on the H100; torch, jax and
    keras-jax on the H200), compiled torch on both, and a CPU trial of the H100's machine."""
    bf16 = {"h100": {"torch": 0.9}, "h200": {"torch": 0.84, "jax": 1.47, "keras-jax": 0.95}}
    results = [on("h100", device="cpu", samples_per_s=100.0)]
    for machine, by_framework in bf16.items():
        for framework, ratio in by_framework.items():
            results += [on(machine, framework, samples_per_s=1000.0),
                        on(machine, framework, samples_per_s=1000.0 * ratio, precision="bf16")]
        results.append(on(machine, samples_per_s=1300.0, compile="reduce-overhead"))
    return results


def charts_of(results: list[Result], machines=MACHINES) -> dict:
    return {chart.id: chart for _, charts in gather(results, machines=machines) for chart in charts}


def test_no_bar_chart_draws_two_points_of_one_series_at_one_label():
    """Plotly stacks the bars of one trace at one category: a series' labels must be unique."""
    charts = charts_of(report_results())
    bars = [c for c in charts.values() if c.kind == "bar"]
    assert {c.id for c in bars} >= {"speedup_cpu", "frameworks", "frameworks_table5", "precision", "compile_layout"}
    for chart in bars:
        for s in chart.series:
            assert len(s.x) == len(set(s.x)), (chart.id, s.name, s.x)


def test_speed_up_over_fp32_is_one_bar_per_framework_and_gpu_named():
    precision = charts_of(report_results())["precision"]
    bars = {s.name: dict(zip(s.x, s.y)) for s in precision.series}
    assert bars == {f"bf16 · torch · {H100}": {"cnn b128": pytest.approx(0.9)},
                    f"bf16 · torch · {H200}": {"cnn b128": pytest.approx(0.84)},
                    f"bf16 · jax · {H200}": {"cnn b128": pytest.approx(1.47)},
                    f"bf16 · keras-jax · {H200}": {"cnn b128": pytest.approx(0.95)}}
    # each coloured as its device and framework is on the whole page
    assert {s.colour_key for s in precision.series} == {f"{H100} · torch", f"{H200} · torch", f"{H200} · jax",
                                                        f"{H200} · keras-jax"}


def test_compiled_bars_are_one_per_gpu():
    compiled = charts_of(report_results())["compile_layout"]
    assert {s.name: dict(zip(s.x, s.y)) for s in compiled.series} == {
        f"compile reduce-overhead · {H100}": {"cnn b128 fp32": pytest.approx(1.3)},  # torch alone: not named
        f"compile reduce-overhead · {H200}": {"cnn b128 fp32": pytest.approx(1.3)}}


def test_report_speed_up_over_the_cpu_and_frameworks_keep_both_gpus():
    charts = charts_of(report_results())
    # only the H100 has a CPU of its own machine
    ours = [s for s in charts["speedup_cpu"].series if not s.name.startswith(("Yin", "Shi"))]
    assert [(s.name, s.x, s.y) for s in ours] == [(H100, ["cnn"], [pytest.approx(10.0)])]
    frameworks = {s.name: dict(zip(s.x, s.y)) for s in charts["frameworks"].series}
    assert frameworks[f"torch · {H100}"] == {"cnn b128": pytest.approx(1000 / 128), "cnn b128 bf16": pytest.approx(900 / 128)}
    assert frameworks[f"torch · {H200}"]["cnn b128"] == pytest.approx(1000 / 128)
    assert f"torch compile reduce-overhead · {H100}" in frameworks
    # the thesis's Table 5 beside ours: eager and compiled torch on one GPU are two bars
    table5 = {(s.name, x) for s in charts["frameworks_table5"].series for x in s.x}
    assert (f"torch · {H200}", H200) in table5 and (f"torch compile reduce-overhead · {H200}", H200) in table5


def test_bars_of_one_colour_differ_by_pattern():
    pytest.importorskip("plotly")
    from rigbench.reports import html

    frameworks = charts_of(report_results())["frameworks"]
    shapes = {s.name: html.plotly_figure(frameworks)["data"][i]["marker"].get("pattern", {}).get("shape", "")
              for i, s in enumerate(frameworks.series)}
    assert shapes[f"torch · {H200}"] != shapes[f"torch compile reduce-overhead · {H200}"]


@pytest.fixture
def two_gpu_db(tmp_path) -> str:
    path = tmp_path / "gpus.db"
    store = Store(f"sqlite:///{path}")
    for run, machine in MACHINES.items():
        store.add_run(run, "2026-01-01T00:00:00+00:00", "rigbench run", machine)
    for r in (*gpu_pair(), *(on(m, workload="mlp", batch=64, samples_per_s=38_000.0) for m in MACHINES)):
        store.add_result(r.model_copy(update={"id": None}))
    return str(path)


def test_compare_frameworks_and_published_show_both_gpus(two_gpu_db):
    runner = CliRunner()
    done = runner.invoke(cli.app, ["compare", "--frameworks", "cnn", "--run", "h100", "--run", "h200",
                                   "--db", two_gpu_db, "--json"])
    assert done.exit_code == 0, done.output
    [table] = json.loads(done.output)
    assert [(r["framework"], r["device_name"]) for r in table["ours"]] == [("torch", H100), ("jax", H200),
                                                                          ("torch", H200)]
    done = runner.invoke(cli.app, ["compare", "--published", "shi2016", "--run", "h100", "--run", "h200",
                                   "--db", two_gpu_db, "--json"])
    assert done.exit_code == 0, done.output
    names = {m["ours"]["device_name"] for m in json.loads(done.output)["matches"]}
    assert names == {H100, H200}


def test_training_runs_on_two_gpus_are_two_lines():
    from tests.unit.test_report_data import train_result

    runs = [train_result(lr, rid=i).model_copy(update={"device_name": name, "run_id": name})
            for i, (lr, name) in enumerate(((0.05, H100), (0.005, H100), (0.05, H200), (0.005, H200)), 1)]
    runs = [r.model_copy(update={"spec": r.spec.model_copy(update={"device": "cuda:0"})}) for r in runs]
    accuracy = {s.name: s.x for s in charts_of(runs, machines=None)["accuracy_lr"].series}
    assert len(accuracy) == 2 and all(x == ["0.005", "0.05"] for x in accuracy.values())
    assert any(H100 in name for name in accuracy) and any(H200 in name for name in accuracy)
