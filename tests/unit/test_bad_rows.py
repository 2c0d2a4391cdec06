"""One bad row never breaks a command over the whole database: a machine fingerprint of the
wrong type is refused at import and read without its bad fields; a machine fingerprint that is
not JSON is read as "not recorded"; a trial whose raw samples cannot be read is skipped by
export and score. Each with a warning naming the run or trial."""

from __future__ import annotations

import json
import logging
import sqlite3

import pytest
from typer.testing import CliRunner

from rigbench import cli
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store
from rigbench.store.bundle import dump_bundle, export_bundle
from rigbench.workloads import WORKLOADS

MACHINE = {"hostname": "box", "cpu_model": "AMD EPYC", "cpu_cores_logical": 2, "ram_bytes": 2**34,
           "gpus": [{"name": "GPU X", "memory_bytes": 2**33, "driver": "1"}], "packages": {"torch": "2.13"}}
TIMES = [0.10, 0.11, 0.09, 0.10, 0.12, 0.10, 0.095]


def make(run_id: str, workload: str) -> Result:
    batch = WORKLOADS[workload].default_batch
    return Result(run_id=run_id, created_at="2026-01-01T00:00:00+00:00", status="ok", device_name="cpu name",
                  spec=TrialSpec(workload=workload, device="cpu", batch_size=batch), step_times_s=TIMES,
                  metrics=Metrics(samples_per_s=batch / 0.1, samples_per_s_ci=(batch / 0.11, batch / 0.09)))


@pytest.fixture()
def db(tmp_path) -> str:
    """Two runs: run1 (mlp, cnn), run2 (mlp, cnn); trial ids 1-4."""
    store = Store(str(tmp_path / "r.db"))
    for run_id in ("run1", "run2"):
        store.add_run(run_id, "2026-01-01T00:00:00+00:00", "rigbench run", MACHINE)
        for workload in ("mlp", "cnn"):
            store.add_result(make(run_id, workload))
    return str(tmp_path / "r.db")


def invoke(*args: str, code: int = 0):
    done = CliRunner().invoke(cli.app, list(args), env={"COLUMNS": "200"})
    assert done.exit_code == code, done.output
    return done


def sql(path: str, statement: str, *params: object) -> None:
    con = sqlite3.connect(path)
    con.execute(statement, params)
    con.commit()
    con.close()


@pytest.mark.parametrize("field,value,message", [
    ("gpus", "x", "gpus: Input should be a valid list"),
    ("gpus", ["x"], "gpus[0]: Input should be a valid dictionary"),
    ("gpus", [{"name": 3}], "gpus[0].name: Input should be a valid string"),
    ("ram_bytes", "lots", "ram_bytes: Input should be a valid integer"),
    ("packages", "x", "packages: Input should be a valid dictionary"),
    ("cpu_model", ["a"], "cpu_model: Input should be a valid string"),
    ("cpu_cores_logical", True, "cpu_cores_logical: Input should be a valid integer"),
])
def test_a_bundle_whose_machine_has_a_field_of_the_wrong_type_is_refused(db, tmp_path, field, value, message):
    data = export_bundle(Store(db))
    data["runs"][0]["machine"][field] = value
    path = tmp_path / "bad.json"
    path.write_text(dump_bundle(data))
    target = str(tmp_path / "target.db")
    Store(target)
    done = invoke("results", "import", str(path), "--db", target, code=2)
    assert done.output.count("\n") == 1  # one line, no traceback
    assert f"runs[0].machine.{message}" in done.output
    assert Store(target).list() == []


def test_a_stored_machine_of_the_wrong_type_is_read_without_its_bad_fields(db, tmp_path, caplog):
    # stored by an import before machines were checked, or edited by hand
    bad = {**MACHINE, "gpus": "x", "ram_bytes": "lots", "cpu_model": ["a"], "packages": "x"}
    sql(db, "update runs set machine_json = ? where id = 'run1'", json.dumps(bad))
    with caplog.at_level(logging.WARNING, logger="rigbench.store"):
        assert Store(db).machine("run1") == {"hostname": "box", "cpu_cores_logical": 2}
    (warning,) = [r.getMessage() for r in caplog.records]
    assert warning.startswith("run run1 in sqlite:///") and "cpu_model, ram_bytes, gpus, packages" in warning
    assert "2 logical cores" in invoke("results", "show", "1", "--db", db).stdout
    invoke("report", "--db", db, "--out", str(tmp_path / "r.html"))
    assert "run1" in (tmp_path / "r.html").read_text()


def test_a_machine_that_is_not_json_is_read_as_not_recorded(db, tmp_path, caplog):
    sql(db, "update runs set machine_json = '{not json' where id = 'run1'")
    with caplog.at_level(logging.WARNING, logger="rigbench.store"):
        assert Store(db).machine("run1") == {}
        assert Store(db).machine("run2") == MACHINE
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "run run1 in sqlite:///" in warning and "machine fingerprint cannot be read (not JSON" in warning
    invoke("results", "show", "1", "--db", db)
    invoke("results", "export", "--format", "bundle", "--output", str(tmp_path / "b.json"), "--db", db)
    runs = json.loads((tmp_path / "b.json").read_text())["runs"]
    assert [(r["id"], r["machine"]) for r in runs] == [("run1", {}), ("run2", MACHINE)]
    invoke("report", "--db", db, "--out", str(tmp_path / "r.html"))
    invoke("score", "run2", "--reference", "run1", "--db", db)
    invoke("compare", "--published", "--db", db)


def test_a_trial_whose_raw_samples_cannot_be_read_is_skipped_by_export_and_score(db, tmp_path, caplog):
    sql(db, "update trial_samples set step_times_json = '[0.1,' where trial_id = 3")  # run2's mlp
    with caplog.at_level(logging.WARNING, logger="rigbench.store"):
        invoke("results", "export", "--format", "bundle", "--output", str(tmp_path / "b.json"), "--db", db)
    assert any("trial 3 (its raw samples:" in r.getMessage() for r in caplog.records)
    exported = json.loads((tmp_path / "b.json").read_text())["results"]
    assert [(r["run_id"], r["spec"]["workload"]) for r in exported] == [("run1", "mlp"), ("run1", "cnn"), ("run2", "cnn")]
    scored = invoke("score", "run2", "--reference", "run1", "--db", db).stdout
    assert "cnn" in scored
    invoke("results", "show", "3", "--db", db, code=2)  # the one trial asked for: its own error
