"""Samples per joule in the sweep and scaling tables and in `scaling --json`: a column only when
some row has a measured energy, derived from energy_per_sample_j."""

import json

import pytest
from rich.console import Console

from rigbench.analysis.scaling import scaling_table
from rigbench.cli.advise import scaling_table_view
from rigbench.cli.sweep import _sweep_table
from rigbench.reports.terminal import samples_per_joule_cell
from tests.unit.test_report_data import make_result


def text(table) -> str:
    console = Console(record=True, width=250)
    console.print(table)
    return console.export_text()


def header(table) -> list[str]:
    return table.headers


def with_energy():
    """The fp32 default (framework's threads), bf16, and 2 threads without a measured energy."""
    return [make_result(batch=64, speed=200.0, threads=None, energy_per_sample_j=0.004),
            make_result(batch=64, speed=300.0, threads=None, precision="bf16", energy_per_sample_j=0.5),
            make_result(batch=64, speed=250.0, threads=2)]


def test_scaling_rows_and_json_carry_samples_per_joule():
    rows = scaling_table(with_energy())
    assert [r.label for r in rows] == ["fp32 eager, default threads", "threads=2", "bf16"]
    assert [r.samples_per_j for r in rows] == [pytest.approx(250.0), None, pytest.approx(2.0)]
    as_json = json.loads(json.dumps([r.row() for r in rows]))
    values = {row["label"]: (row["energy_per_sample_j"], row["samples_per_j"]) for row in as_json}
    assert values["bf16"] == (0.5, pytest.approx(2.0))
    assert values["threads=2"] == (None, None)


def test_scaling_view_has_the_column_only_with_energy():
    rows = scaling_table(with_energy())
    table = scaling_table_view(rows, "t")
    assert header(table) == ["trial", "variant", "threads", "samples/s [95% CI]", "speed-up", "samples/J", "note"]
    assert [str(c) for c in table.cells("samples/J")] == ["250", "-", "2"]  # 1 / 0.004, -, 1 / 0.5
    plain = scaling_table_view(scaling_table(with_energy()[2:] + [make_result(batch=64, threads=None)]), "t")
    assert len(plain.rows) == 2
    assert "samples/J" not in header(plain)


def test_sweep_table_has_the_column_only_with_energy():
    table = _sweep_table(with_energy(), new_run="r1")
    assert header(table) == ["id", "workload", "framework", "device", "batch", "prec", "setup", "samples/s [95% CI]",
                             "samples/J", "step ms", "RSS MiB", "status", "ran"]
    assert [str(c) for c in table.cells("samples/J")] == ["250", "2", "-"]
    assert "250" in text(table)
    plain = _sweep_table([make_result(speed=100.0, energy_note="no RAPL")], new_run="r1")
    assert "samples/J" not in header(plain)


@pytest.mark.parametrize("joules,cell", [(None, "-"), (0.0015, "667"), (0.00001, "100,000"), (0.6, "1.67"),
                                         (4.0, "0.25")])
def test_samples_per_joule_cell(joules, cell):
    assert samples_per_joule_cell(joules) == cell
