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
    shown = invoke("roofline", "--db", gpu_db).stdout
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
