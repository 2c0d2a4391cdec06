"""Figures at the edge of what a float holds, from a database edited by hand or a ratio of two
stored figures: tables stay readable and JSON stays JSON (a browser's JSON.parse threw on the
report's `Infinity`, and no chart drew)."""

import json

from typer.testing import CliRunner

from rigbench.cli import app
from rigbench.json_text import finite_or_none, strict_json
from rigbench.reports.cells import interval, num, rate
from rigbench.reports.html import safe_json
from rigbench.store import Store
from tests.unit.test_store import make_result


def test_huge_figures_are_written_with_an_exponent():
    assert rate(1e308) == "1e+308" and num(1e300) == "1e+300" and num(-1e16, "{:.2f}") == "-1e+16"
    assert rate(1234.5) == "1,234" and num(12.34) == "12.3" and rate(float("inf")) == "inf"
    assert interval(1e20, (1e19, 1e21)) == "1e+20 [1e+19–1e+21]"


def test_json_out_has_null_for_a_number_that_is_not_finite():
    value = {"mfu": float("inf"), "rows": [1.5, float("nan"), (2, float("-inf"))], "name": "x"}
    assert finite_or_none(value) == {"mfu": None, "rows": [1.5, None, [2, None]], "name": "x"}
    assert json.loads(strict_json(value)) == finite_or_none(value)
    assert "Infinity" not in safe_json([{"y": [float("inf")]}]) and json.loads(safe_json([1e308])) == [1e308]


def test_a_huge_stored_speed_keeps_the_results_table_inside_the_terminal(tmp_path):
    store = Store(str(tmp_path / "x.db"))
    store.add_run("r1", "2026-01-01T00:00:00+00:00", "rigbench run cnn", {"cpu_model": "X"})
    store.add_result(make_result(samples_per_s=1e308, samples_per_s_ci=(1e307, 1.7e308), steps_measured=3))
    done = CliRunner().invoke(app, ["results", "list", "--db", str(tmp_path / "x.db")], env={"COLUMNS": "160"})
    assert done.exit_code == 0, done.output
    assert "1e+308 [1e+307–1.7e+308]" in done.output
    assert max(map(len, done.output.splitlines())) <= 160


def test_a_crashed_speed_trial_shows_no_speed():
    """An ok trial that broke result_rules is stored as a crash with its figures; an imported
    crash may carry any: neither is a measurement to list."""
    from rigbench.reports.cells import speed

    assert speed(make_result(status="crash", samples_per_s=320.0)) == "-"
    assert speed(make_result(samples_per_s=320.0)) == "320"
