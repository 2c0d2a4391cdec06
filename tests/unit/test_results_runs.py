"""Finding run ids (the GPU audit, item 1): many commands take `--run ID`, and `results runs`
lists the runs (id, when, machine, the stored command, trials and calibrations); `results list`
names each row's run where it lists several, and every hint about a run id points there.
Item 4: a listing cut to `--limit` says how many there are and how to see them all."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from rigbench.cli import app
from rigbench.store import Store
from rigbench.store.calibrations import add_calibration
from tests.unit.test_store import make_result

H100 = {"hostname": "vm", "cpu_model": "Intel(R) Xeon(R) Processor",
        "gpus": [{"name": "NVIDIA H100 80GB HBM3"}, {"name": "NVIDIA H100 80GB HBM3"}]}
LAPTOP = {"hostname": "laptop", "cpu_model": "AMD Ryzen 7 5800U", "gpus": []}


def invoke(*args: str, columns: int = 200) -> object:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns)})


@pytest.fixture
def db(tmp_path) -> str:
    """Two runs with trials and a calibrate run with measurements only, on two machines."""
    store = Store(str(tmp_path / "runs.db"))
    store.add_run("aaaa11112222", "2026-11-23T07:04:57+00:00",
                  "rigbench run cnn -d cuda:0 --db postgresql://u:secret@db.example/rb", H100)
    store.add_run("bbbb33334444", "2026-11-24T09:30:00+00:00", "rigbench sweep cnn -b 8,16,32", LAPTOP)
    store.add_run("cccc55556666", "2026-11-25T10:00:00+00:00", "rigbench calibrate -d cuda:0", H100)
    for _ in range(3):
        store.add_result(make_result("aaaa11112222", samples_per_s=100.0))
    for _ in range(2):
        store.add_result(make_result("bbbb33334444", samples_per_s=50.0))
    add_calibration(store, "cccc55556666", "2026-11-25T10:00:00+00:00", {
        "device": "cuda:0", "device_name": "NVIDIA H100 80GB HBM3", "measurements": [
            {"kind": "matmul", "precision": "fp32", "status": "ok", "value": 5e13, "unit": "FLOP/s"},
            {"kind": "memory_bandwidth", "status": "ok", "value": 3e12, "unit": "B/s"}]})
    return store.url


def test_results_runs_lists_each_run_with_its_machine_command_and_counts(db):
    done = invoke("results", "runs", "--db", db)
    assert done.exit_code == 0, done.output
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip()}
    first = lines["aaaa11112222"]
    assert "2026-11-23 07:04" in first and "vm" in first and "Intel(R) Xeon(R) Processor" in first
    assert "2x NVIDIA H100 80GB HBM3" in first
    assert "rigbench run cnn -d cuda:0" in first
    assert "secret" not in done.stdout and "***" in first  # the command as stored: masked
    assert re.search(r"\s3\s+0\s", first), first  # 3 trials, 0 calibrations
    laptop = lines["bbbb33334444"]
    assert "laptop" in laptop and "AMD Ryzen 7 5800U" in laptop and "rigbench sweep cnn -b 8,16,32" in laptop
    calibrate = lines["cccc55556666"]
    assert "rigbench calibrate -d cuda:0" in calibrate and re.search(r"\s0\s+2\s", calibrate), calibrate
    # oldest first, as `results list`
    order = [line.split()[0] for line in done.stdout.splitlines() if line[:4] in ("aaaa", "bbbb", "cccc")]
    assert order == ["aaaa11112222", "bbbb33334444", "cccc55556666"]


def test_results_runs_json_counts_trials_and_calibrations(db):
    done = invoke("results", "runs", "--json", "--db", db)
    assert done.exit_code == 0, done.output
    runs = {r["id"]: r for r in json.loads(done.stdout)}
    assert (runs["aaaa11112222"]["trials"], runs["aaaa11112222"]["calibrations"]) == (3, 0)
    assert (runs["bbbb33334444"]["trials"], runs["bbbb33334444"]["calibrations"]) == (2, 0)
    assert (runs["cccc55556666"]["trials"], runs["cccc55556666"]["calibrations"]) == (0, 2)
    assert runs["aaaa11112222"]["gpus"] == ["NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"]
    assert runs["aaaa11112222"]["hostname"] == "vm" and runs["bbbb33334444"]["gpus"] == []
    assert "secret" not in done.stdout


def test_results_runs_keeps_the_run_id_in_a_narrow_terminal(db):
    done = invoke("results", "runs", "--db", db, columns=80)
    assert done.exit_code == 0, done.output
    assert max(map(len, done.stdout.splitlines())) <= 80
    assert all(run in done.stdout for run in ("aaaa11112222", "bbbb33334444", "cccc55556666"))


def test_results_runs_on_an_empty_database_says_so(tmp_path):
    Store(str(tmp_path / "empty.db"))
    done = invoke("results", "runs", "--db", str(tmp_path / "empty.db"))
    assert done.exit_code == 0
    assert "no runs stored yet" in done.stderr


def test_results_list_names_the_run_of_each_row_when_it_lists_several(db):
    listed = invoke("results", "list", "--db", db).stdout
    header = listed.splitlines()[0].split()
    assert "run" in header
    rows = [line for line in listed.splitlines() if "cnn" in line]
    assert sum("aaaa11112222" in line for line in rows) == 3
    assert sum("bbbb33334444" in line for line in rows) == 2
    # one run: its id is said once, not in a column of the same id on every row
    one = invoke("results", "list", "--run", "bbbb33334444", "--db", db).stdout
    assert "run" not in next(line for line in one.splitlines() if "workload" in line).split()
    assert one.count("bbbb33334444") <= 1


@pytest.mark.parametrize("args", [("results", "list", "--run", "nope"), ("roofline", "--run", "nope"),
                                  ("report", "--run", "nope"), ("compare", "nope", "aaaa11112222"),
                                  ("results", "export", "--run", "nope")])
def test_a_run_id_that_is_not_stored_points_to_the_runs_listing(db, args):
    done = invoke(*args, "--db", db)
    assert done.exit_code == 2
    assert "nope" in done.stderr
    assert "rigbench results runs" in done.stderr, done.stderr


def test_a_cut_listing_says_how_many_there_are_and_how_to_see_them_all(db):
    done = invoke("results", "list", "--limit", "2", "--db", db)
    assert done.exit_code == 0, done.output
    tail = " ".join(done.stdout.split())
    assert "The newest 2 of 5 results shown" in tail
    assert "--limit 5" in tail
    assert "--limit 8" not in tail  # not 4x the limit: the count there is
    filtered = " ".join(invoke("results", "list", "--run", "aaaa11112222", "--limit", "1", "--db", db).stdout.split())
    assert "The newest 1 of 3 results shown" in filtered and "--limit 3" in filtered


def test_results_runs_limit_says_how_many_there_are(db):
    done = invoke("results", "runs", "--limit", "1", "--db", db)
    assert done.exit_code == 0, done.output
    assert "cccc55556666" in done.stdout and "aaaa11112222" not in done.stdout  # the newest
    assert "The newest 1 of 3 runs shown" in " ".join(done.stdout.split())


def test_roofline_limit_draws_the_newest_and_says_how_many_there_are(db):
    # a fleet's 17,600 successful trials took 18 s to draw, one row each
    done = invoke("roofline", "--limit", "2", "--db", db)
    assert done.exit_code == 0, done.output
    ids = [line.split()[0] for line in done.stdout.splitlines() if line.split() and line.split()[0].isdigit()]
    assert ids == ["4", "5"]  # the newest two of the five
    assert "The newest 2 of 5 trials shown; all of them: --limit 5." in " ".join(done.stdout.split())
    every = json.loads(invoke("roofline", "--limit", "2", "--json", "--db", db).stdout)
    assert len(every) == 5  # --json gives every trial
    assert "--limit must be at least 1" in invoke("roofline", "--limit", "0", "--db", db).stderr
