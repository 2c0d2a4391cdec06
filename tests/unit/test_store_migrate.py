"""Migrations: a database written by rigbench v0.1 (tests/fixtures/v01.db) is stamped and
upgraded with nothing lost; a fresh database gets exactly the tables of schema.py."""

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.exc import IntegrityError

from rigbench.errors import UsageError
from rigbench.spec import Result, TrialSpec
from rigbench.store import Store
from rigbench.store.migrate import BASE_REVISION, HEAD_REVISION, MIGRATIONS
from rigbench.store.schema import metadata

FIXTURE = Path(__file__).parents[1] / "fixtures" / "v01.db"
TABLES = ("runs", "trials", "trial_samples", "calibrations", "meta")


def v01_columns():
    con = sqlite3.connect(f"file:{FIXTURE}?mode=ro", uri=True)  # the fixture is never written
    try:
        return {t: [r[1] for r in con.execute(f"pragma table_info({t})")] for t in TABLES}
    finally:
        con.close()


def dump(path):
    """Every row of every v0.1 table, as stored (the columns v0.1 had)."""
    con = sqlite3.connect(path)
    try:
        return {table: con.execute(f"select {', '.join(columns)} from {table} order by 1").fetchall()
                for table, columns in v01_columns().items()}
    finally:
        con.close()


def test_a_v01_database_migrates_with_nothing_lost(tmp_path):
    path = tmp_path / "v01.db"
    shutil.copy(FIXTURE, path)
    before = dump(path)
    assert [len(before[t]) for t in TABLES] == [5, 5, 5, 6, 1]
    assert not sqlite3.connect(path).execute(
        "select 1 from sqlite_master where name='alembic_version'").fetchall()

    store = Store(str(path))

    assert dump(path) == before  # every row of every table, byte for byte
    con = sqlite3.connect(path)
    assert con.execute("select version_num from alembic_version").fetchall() == [(HEAD_REVISION,)]
    backfilled = con.execute("select id, kind, workload_options, world_size from trials order by id").fetchall()
    assert backfilled == [(1, "speed", "{}", 1), (2, "speed", "{}", 1), (3, "train", "{}", 1),
                          (4, "lr_find", "{}", 1), (5, "speed", "{}", 1)]
    assert "ix_trials_kind" in {r[0] for r in con.execute("select name from sqlite_master where type='index'")}

    # every trial reads back as v0.1 stored it, raw samples included
    stored = {row[0]: row for row in before["trials"]}
    samples = {row[0]: row for row in before["trial_samples"]}
    listed = store.list()
    assert [r.id for r in listed] == [1, 2, 3, 4, 5]
    assert [r.status for r in listed] == ["ok", "ok", "ok", "ok", "timeout"]
    for result in listed:
        full = store.get(result.id)
        original = Result.model_validate_json(stored[result.id][-1])
        assert full.model_dump(exclude={"id", "step_times_s", "tracker_samples"}) == \
            original.model_dump(exclude={"id", "step_times_s", "tracker_samples"})
        assert full.step_times_s == json.loads(samples[result.id][1])
        assert full.tracker_samples == json.loads(samples[result.id][2])
        assert store.machine(result.run_id) is not None
    assert [r.id for r in store.list(kind="train")] == [3]
    assert [r.id for r in store.list(kind="speed", status="timeout")] == [5]

    from rigbench.store.calibrations import list_calibrations
    assert len(list_calibrations(store)) == 6
    # opening again is a no-op, and new rows fill the new columns from their spec
    Store(str(path))
    store.add_result(Result(run_id=listed[0].run_id, created_at="t", status="ok",
                            spec=TrialSpec(workload="mlp", batch_size=8, workload_options={"width": 2})))
    assert con.execute("select kind, workload_options from trials where id = 6").fetchall() == [("speed", '{"width":2}')]


def test_backfill_reads_options_and_world_size_and_survives_a_garbage_row(tmp_path, caplog):
    path = tmp_path / "v01.db"
    shutil.copy(FIXTURE, path)
    con = sqlite3.connect(path)
    data = json.loads(con.execute("select result_json from trials where id = 1").fetchone()[0])
    data["spec"].update(workload_options={"width": 8, "depth": 2}, world_size=2)
    con.executemany("update trials set result_json = ? where id = ?", [(json.dumps(data), 1), ("garbage", 2)])
    con.commit()
    Store(str(path)).list()
    assert con.execute("select id, kind, workload_options, world_size from trials where id < 3").fetchall() == [
        (1, "speed", '{"depth":2,"width":8}', 2), (2, "speed", "{}", 1)]
    assert "trial 2" in caplog.text


def test_old_max_batch_probes_are_relabelled_probe(tmp_path):
    """A probe an older rigbench stored as a speed trial (2 timed steps, no minimum time; v0.1
    wrote no kind) becomes kind "probe" in the column and when read; speed trials stay."""
    path = tmp_path / "v01.db"
    shutil.copy(FIXTURE, path)
    con = sqlite3.connect(path)
    data = json.loads(con.execute("select result_json from trials where id = 1").fetchone()[0])
    assert "kind" not in data["spec"]
    data["spec"]["measure"].update(min_steps=2, min_seconds=0.0)
    con.execute("update trials set result_json = ? where id = 1", (json.dumps(data),))
    con.commit()
    store = Store(str(path))
    assert con.execute("select id, kind from trials order by id").fetchall() == [
        (1, "probe"), (2, "speed"), (3, "train"), (4, "lr_find"), (5, "speed")]
    assert [(r.id, r.spec.kind) for r in store.list(kind="probe")] == [(1, "probe")]
    assert [r.spec.kind for r in store.list()] == ["probe", "speed", "train", "lr_find", "speed"]
    assert store.get(1).row()["kind"] == "probe"


def test_head_revision_constant_matches_the_migrations():
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    script = ScriptDirectory.from_config(config)
    assert script.get_current_head() == HEAD_REVISION
    assert script.get_base() == BASE_REVISION


def test_migrations_build_exactly_the_tables_of_schema_py(tmp_path):
    store = Store(str(tmp_path / "fresh.db"))
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    assert diff == []


def test_a_newer_revision_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "r.db"
    Store(str(path))
    con = sqlite3.connect(path)
    con.execute("update alembic_version set version_num = 'ffff_from_the_future'")
    con.commit()
    with pytest.raises(UsageError, match="newer than this rigbench understands: upgrade rigbench"):
        Store(str(path))
    assert con.execute("select version_num from alembic_version").fetchall() == [("ffff_from_the_future",)]


def test_opening_an_up_to_date_database_does_not_load_alembic(tmp_path):
    path = tmp_path / "r.db"
    Store(str(path))
    code = ("import sys; from rigbench.store import Store; Store(sys.argv[1]); "
            "print('alembic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_foreign_keys_are_enforced(tmp_path):
    store = Store(str(tmp_path / "r.db"))
    with pytest.raises(IntegrityError):
        store.add_result(Result(run_id="no-such-run", created_at="t", status="ok",
                                spec=TrialSpec(workload="mlp", batch_size=8)))
    assert store.list() == []
