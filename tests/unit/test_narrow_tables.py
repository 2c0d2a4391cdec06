"""Narrow terminals (the GPU audit, item 3), on the imported H100 and H200 bundles: at 80 columns
what tells rows apart (batch, precision) outlives the 95% interval, a column of dashes in the
rows shown yields before its alternative that has values (roofline: MFU against the spec sheet
on an H100 never calibrated), and COLUMNS, where set, is the width into a pipe too."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from rigbench import api
from rigbench.cli import app
from rigbench.reports.table_fit import FitTable

RESULTS = Path(__file__).parents[2] / "docs" / "results"
BUNDLES = ("gpu-h100.bundle.json", "gpu-h200.bundle.json", "gpu-h200-frameworks.bundle.json")


@pytest.fixture(scope="module")
def gpu_db(tmp_path_factory) -> str:
    """The audit's database: the three GPU bundles imported (read-only for the tests)."""
    folder = tmp_path_factory.mktemp("gpu-db")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RIGBENCH_SPOOL_DIR", str(folder / "spool"))
        patch.setenv("RIGBENCH_CACHE_DIR", str(folder / "cache"))
        for name in BUNDLES:
            api.import_bundle(str(RESULTS / name), db=str(folder / "g.db"))
    return str(folder / "g.db")


def invoke(*args: str, columns: int | None = 80) -> object:
    env: dict[str, str | None] = {"COLUMNS": str(columns) if columns else None}  # None: unset
    done = CliRunner().invoke(app, list(args), env=env)
    assert done.exit_code == 0, done.output
    return done


def body(stdout: str) -> list[str]:
    """The table's rows: the lines that start with a trial id."""
    return [line for line in stdout.splitlines() if line.strip()[:1].isdigit()]


def test_columns_sets_the_width_into_a_pipe_too(gpu_db):
    narrow = invoke("results", "list", "--db", gpu_db, columns=80).stdout
    assert max(map(len, narrow.splitlines())) <= 80
    piped = invoke("results", "list", "--db", gpu_db, columns=None).stdout
    assert max(map(len, piped.splitlines())) > 120  # without COLUMNS: laid out 200 wide, every column


def test_results_list_at_80_columns_keeps_batch_and_precision_over_the_interval(gpu_db):
    listed = invoke("results", "list", "--workload", "gpt:preset=small", "--db", gpu_db).stdout
    header = listed.splitlines()[0].split()
    assert "batch" in header and "prec" in header, listed
    rows = {line.split()[0]: line.split() for line in body(listed)}
    # the H200's jax trials at batch 32 and 64 (trials 91 and 92) read apart
    assert "32" in rows["91"] and "64" in rows["92"] and "bf16" in rows["92"]
    assert "[" not in listed.split("not shown")[0]  # the interval gave way first
    assert "95% CI" in " ".join(listed.split("not shown")[1].split())  # and the footnote says so


def test_the_results_table_itself_keeps_batch_and_precision_at_80_columns(gpu_db):
    from rigbench.reports import terminal
    from rigbench.store import Store

    rows = Store(gpu_db, create=False).list()  # gpt at batch 32 and 64 among the rest
    lines = render(terminal.results_table(rows), 80)
    assert {"batch", "prec", "samples/s", "status"} <= set(lines[0].split()), lines[0]
    assert max(map(len, lines)) <= 80


def test_roofline_at_80_columns_keeps_the_spec_sheet_mfu_of_an_uncalibrated_gpu(gpu_db):
    shown = invoke("roofline", "--limit", "100", "--db", gpu_db).stdout  # every trial: the H100's are the oldest
    header = next(line for line in shown.splitlines() if line.startswith("id")).split()
    assert "batch" in header and "prec" in header, shown
    h100 = [line for line in body(shown) if int(line.split()[0]) <= 46]  # the H100 bundle's trials
    assert h100 and all("%" in line for line in h100 if " cpu " not in line), shown
    assert max(len(line) for line in body(shown)) <= 80


def test_the_roofline_table_itself_keeps_the_spec_sheet_mfu_at_80_columns(gpu_db):
    """The priorities alone, rendered at 80 columns: the H100 rows (no calibration) and the H200
    rows (calibrated) both have a spec-sheet MFU, so it outlasts the calibrated one."""
    from rigbench.reports import terminal

    lines = render(terminal.roofline_table(api.roofline(db=gpu_db)), 80)
    header = next(line for line in lines if line.startswith("id")).split()
    assert {"batch", "prec", "TFLOP/s", "MFU"} <= set(header) and "spec" in header, lines[:3]


def test_roofline_at_80_columns_of_the_h100_alone_loses_its_empty_calibrated_columns(gpu_db):
    shown = invoke("roofline", "--where", "device_name=h100", "--db", gpu_db).stdout
    assert "calib" not in shown.split("not shown")[0]


def render(table: FitTable, width: int) -> list[str]:
    console = Console(width=width, record=True, markup=False)
    console.print(table)
    return console.export_text().splitlines()


def test_a_gpu_id_two_models_share_is_listed_with_each_model(gpu_db):
    """Both GPUs are `cuda:0`: where one table lists both, each row names its model after the id
    (results list, roofline); at 80 columns the model alone, shortened, with batch and precision
    kept; where a table lists one model, the id alone."""
    wide = invoke("results", "list", "--where", "workload=cnn", "--db", gpu_db, columns=200).stdout
    assert "cuda:0 (NVIDIA H100 80GB HBM3)" in wide and "cuda:0 (NVIDIA H200)" in wide
    narrow = invoke("results", "list", "--where", "workload=cnn", "--db", gpu_db).stdout
    header = narrow.splitlines()[0].split()
    assert "batch" in header and "prec" in header, narrow
    models = {line.split()[3] for line in body(narrow)}  # id, workload, framework, device
    assert models == {"H100", "H200", "cpu"}, narrow
    roofline = invoke("roofline", "--where", "workload=cnn", "--db", gpu_db, columns=200).stdout
    assert "cuda:0 (NVIDIA H100 80GB HBM3)" in roofline and "cuda:0 (NVIDIA H200)" in roofline
    alone = invoke("results", "list", "--where", "device_name=h200", "--db", gpu_db, columns=200).stdout
    assert " cuda:0 " in alone and "(NVIDIA H200)" not in alone


def test_device_labels_name_the_model_only_where_an_id_is_ambiguous():
    from rigbench.reports.cells import device_labels, device_short
    from tests.unit.test_store import make_result

    def on(device: str, name: str | None):
        r = make_result("r")
        return r.model_copy(update={"spec": r.spec.model_copy(update={"device": device}), "device_name": name})

    h100, h200, cpu = on("cuda:0", "NVIDIA H100 80GB HBM3"), on("cuda:0", "NVIDIA H200"), on("cpu", "Xeon")
    unnamed = on("cuda:0", None)  # stored before device names were
    label = device_labels([h100, h200, cpu, unnamed])
    assert [label(r) for r in (h100, h200, cpu, unnamed)] == [
        "cuda:0 (NVIDIA H100 80GB HBM3)", "cuda:0 (NVIDIA H200)", "cpu", "cuda:0"]
    one_machine = device_labels([h200, cpu])
    assert [one_machine(r) for r in (h200, cpu)] == ["cuda:0", "cpu"]
    assert [device_short(text) for text in ("cuda:0 (NVIDIA H100 80GB HBM3)", "cuda:1 (AMD Instinct MI300X)",
                                            "cuda:0 (NVIDIA GeForce RTX 4090)", "cpu", "cuda:0 (80GB)",
                                            "cpu (Intel(R) Xeon(R) Processor (host with NVIDIA H100 80GB HBM3))")] == [
        "H100", "Instinct MI300X", "GeForce RTX 4090", "cpu", "80GB",
        "Xeon(R) Processor (host with NVIDIA H100 80GB HBM3)"]


@pytest.mark.parametrize("columns", [40, 60])
def test_a_long_workload_is_cut_so_that_id_speed_and_status_stay_whole(tmp_path, columns):
    """At 40 columns the essential columns alone (id, workload, samples/s, status) are too wide
    for a long workload label; rich cut each evenly: the speed read "1…", the status "sta…", and
    the id column went. The workload, free text, is now what is cut (the run's table is the same)."""
    from rigbench.spec import Metrics, Result, TrialSpec
    from rigbench.store import Store

    db = str(tmp_path / "r.db")
    store = Store(db)
    store.add_run("run1", "2026-01-01T00:00:00+00:00", "rigbench run", {"hostname": "box"})
    for n, (workload, status, speed) in enumerate([("mlp", "ok", 123456.7), ("transformer", "unsupported", None),
                                                   ("gpt", "ok", 1234.5)]):
        store.add_result(Result(run_id="run1", created_at=f"2026-01-01T00:0{n}:00+00:00", status=status,
                                spec=TrialSpec(workload=workload, device="cpu", batch_size=64,
                                               workload_options={"preset": "small"} if workload == "gpt" else {}),
                                metrics=Metrics(samples_per_s=speed), error=None if speed else "not here"))
    listed = invoke("results", "list", "--db", db, columns=columns).stdout
    assert max(map(len, listed.splitlines())) <= columns
    assert listed.splitlines()[0].split() == ["id", "workload", "samples/s", "status"], listed
    rows = [line.split() for line in body(listed)]
    assert [(r[0], r[-2], r[-1]) for r in rows] == [("1", "123,457", "ok"), ("2", "-", "unsupported"),
                                                    ("3", "1,234", "ok")], listed
    assert rows[1][1].startswith("transformer") and rows[1][-3].endswith("…"), listed
    assert "text ending in … was cut to fit" in " ".join(listed.split())
