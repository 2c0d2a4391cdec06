"""Migrations: a database written by rigbench v0.1 (tests/fixtures/v01.db) is stamped and
upgraded with nothing lost; a fresh database gets exactly the tables of schema.py. Each test
runs on SQLite and on PostgreSQL (tests/databases.py), where the v0.1 database is built by
running revision 0001 and copying every row of the fixture into it."""

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from rigbench.errors import UsageError
from rigbench.spec import Result, TrialSpec
from rigbench.store import Store
from rigbench.store.migrate import BASE_REVISION, HEAD_REVISION, MIGRATIONS
from rigbench.store.schema import metadata
from tests.conftest import BACKENDS
from tests.databases import connection, fresh_database, sql

FIXTURE = Path(__file__).parents[1] / "fixtures" / "v01.db"
TABLES = ("runs", "trials", "trial_samples", "calibrations", "meta")


def v01_columns():
    con = sqlite3.connect(f"file:{FIXTURE}?mode=ro", uri=True)  # the fixture is never written
    try:
        return {t: [r[1] for r in con.execute(f"pragma table_info({t})")] for t in TABLES}
    finally:
        con.close()


def quoted(columns: list[str]) -> str:
    return ", ".join(f'"{c}"' for c in columns)  # "key" and "value" are words in some SQL


def dump(url):
    """Every row of every v0.1 table, as stored (the columns v0.1 had)."""
    return {table: sql(url, f"select {quoted(columns)} from {table} order by 1")
            for table, columns in v01_columns().items()}


def _v01_on_postgresql(url: str) -> None:
    """What v0.1 would have left in a PostgreSQL database: revision 0001's tables without
    Alembic's own table (v0.1 had no migrations), holding the fixture's rows."""
    con = sqlite3.connect(f"file:{FIXTURE}?mode=ro", uri=True)
    with connection(url) as conn:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = conn
        command.upgrade(config, BASE_REVISION)
        conn.execute(text("drop table alembic_version"))
        conn.execute(text("delete from meta"))
        for table, columns in v01_columns().items():
            rows = con.execute(f"select {', '.join(columns)} from {table}").fetchall()
            conn.execute(text(f"insert into {table} ({quoted(columns)}) values ({', '.join(':' + c for c in columns)})"),
                         [dict(zip(columns, row)) for row in rows])
        for table in ("trials", "calibrations"):  # v0.1 took these ids from the sequences
            conn.execute(text(f"select setval(pg_get_serial_sequence('{table}', 'id'), max(id)) from {table}"))
    con.close()


@pytest.fixture(params=BACKENDS)
def v01_url(request, tmp_path):
    """The URL of a database as rigbench v0.1 left it, on each backend."""
    if request.param == "sqlite":
        path = tmp_path / "v01.db"
        shutil.copy(FIXTURE, path)
        yield f"sqlite:///{path}"
        return
    with fresh_database() as url:
        _v01_on_postgresql(url)
        yield url


def test_a_v01_database_migrates_with_nothing_lost(v01_url):
    before = dump(v01_url)
    assert [len(before[t]) for t in TABLES] == [5, 5, 5, 6, 1]
    assert before == dump(f"sqlite:///file:{FIXTURE}?mode=ro&uri=true")
    with connection(v01_url) as conn:
        assert "alembic_version" not in inspect(conn).get_table_names()

    store = Store(v01_url)

    assert dump(v01_url) == before  # every row of every table, byte for byte
    assert sql(v01_url, "select version_num from alembic_version") == [(HEAD_REVISION,)]
    backfilled = sql(v01_url, "select id, kind, workload_options, world_size from trials order by id")
    assert backfilled == [(1, "speed", "{}", 1), (2, "speed", "{}", 1), (3, "train", "{}", 1),
                          (4, "lr_find", "{}", 1), (5, "speed", "{}", 1)]
    with connection(v01_url) as conn:
        assert "ix_trials_kind" in {index["name"] for index in inspect(conn).get_indexes("trials")}

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
    Store(v01_url)
    store.add_result(Result(run_id=listed[0].run_id, created_at="t", status="ok",
                            spec=TrialSpec(workload="mlp", batch_size=8, workload_options={"width": 2})))
    assert sql(v01_url, "select kind, workload_options from trials where id = 6") == [("speed", '{"width":2}')]


def set_result_json(url: str, values: dict[int, str]) -> None:
    with connection(url) as conn:
        conn.execute(text("update trials set result_json = :j where id = :id"),
                     [{"id": trial_id, "j": value} for trial_id, value in values.items()])


def stored_spec(url: str, trial_id: int) -> dict:
    return json.loads(sql(url, "select result_json from trials where id = :id", id=trial_id)[0][0])


def test_backfill_reads_options_and_world_size_and_survives_a_garbage_row(v01_url, caplog):
    data = stored_spec(v01_url, 1)
    data["spec"].update(workload_options={"width": 8, "depth": 2}, world_size=2)
    set_result_json(v01_url, {1: json.dumps(data), 2: "garbage"})
    Store(v01_url).list()
    assert sql(v01_url, "select id, kind, workload_options, world_size from trials where id < 3 order by id") == [
        (1, "speed", '{"depth":2,"width":8}', 2), (2, "speed", "{}", 1)]
    assert "trial 2" in caplog.text


def test_old_max_batch_probes_are_relabelled_probe(v01_url):
    """A probe an older rigbench stored as a speed trial (2 timed steps, no minimum time; v0.1
    wrote no kind) becomes kind "probe" in the column and when read; speed trials stay."""
    data = stored_spec(v01_url, 1)
    assert "kind" not in data["spec"]
    data["spec"]["measure"].update(min_steps=2, min_seconds=0.0)
    set_result_json(v01_url, {1: json.dumps(data)})
    store = Store(v01_url)
    assert sql(v01_url, "select id, kind from trials order by id") == [
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


def test_migrations_build_exactly_the_tables_of_schema_py(db_url):
    store = Store(db_url)
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    assert diff == []


def test_names_longer_than_the_old_column_lengths_are_stored(db_url):
    """PostgreSQL enforces a declared VARCHAR length, which SQLite never did; names are bounded
    by rigbench.textlimits alone (migration 0004). A NUL, which PostgreSQL text refuses, is
    replaced in the columns and kept exactly in the stored Result."""
    store = Store(db_url)
    created = "2026-01-01T00:00:00.123456789+00:00 (from a machine with a long clock)"
    store.add_run("r1", created, "rigbench run", {"hostname": "h" * 300})
    spec = TrialSpec(workload="w" * 300, framework="f" * 100, device="cpu:" + "d" * 300, batch_size=8)
    error = "Segmentation fault\x00 in libfoo\x00"
    new_id = store.add_result(Result(run_id="r1", created_at=created, status="crash", error=error, spec=spec))
    back = store.get(new_id)
    assert (back.spec, back.error, back.created_at) == (spec, error, created)
    assert [r.id for r in store.list(workload="w" * 300, device="cpu:" + "d" * 300)] == [new_id]
    assert sql(db_url, "select error from trials") == [("Segmentation fault\ufffd in libfoo\ufffd",)]


def test_a_newer_revision_is_refused_and_left_alone(db_url):
    Store(db_url)
    with connection(db_url) as conn:
        conn.execute(text("update alembic_version set version_num = 'ffff_from_the_future'"))
    with pytest.raises(UsageError, match="newer than this rigbench understands: upgrade rigbench"):
        Store(db_url)
    assert sql(db_url, "select version_num from alembic_version") == [("ffff_from_the_future",)]


def test_a_schema_version_that_is_not_a_number_is_refused_in_one_line(db_url):
    # meta.schema_version edited to text ended every command with int()'s ValueError traceback
    Store(db_url)
    with connection(db_url) as conn:
        conn.execute(text("update meta set value = 'one' where key = 'schema_version'"))
    with pytest.raises(UsageError, match=r"has schema version 'one', which is not a number: "
                                         r"not a database this rigbench wrote"):
        Store(db_url)
    assert sql(db_url, "select value from meta where key = 'schema_version'") == [("one",)]


def _tables(url):
    with connection(url) as conn:
        return sorted(inspect(conn).get_table_names())


@pytest.mark.parametrize("table,revision", [("customers", None), ("customers", "abc123"), ("meta", None)])
def test_another_applications_database_is_refused_and_left_alone(db_url, table, revision):
    # an unrelated table (a `meta` of its own too), perhaps its own Alembic revision: not "newer
    # than this rigbench", and never migrated
    with connection(db_url) as conn:
        conn.execute(text(f"create table {table} (id integer)"))
        if revision:
            conn.execute(text("create table alembic_version (version_num varchar(32) not null)"))
            conn.execute(text("insert into alembic_version values (:r)"), {"r": revision})
    before = _tables(db_url)
    for create in (False, True):  # read-only commands and writing ones alike
        with pytest.raises(UsageError) as refused:
            Store(db_url, create=create)
        assert str(refused.value).endswith(
            f"is not a rigbench database (it has tables: {', '.join(before)}); give an empty database or a rigbench one")
    assert _tables(db_url) == before


def test_a_foreign_database_is_one_line_exit_2(tmp_path):
    path = tmp_path / "foreign.db"
    con = sqlite3.connect(path)
    con.execute("create table customers (id integer)")
    con.commit()
    con.close()
    done = subprocess.run([sys.executable, "-m", "rigbench", "results", "list", "--db", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"rigbench: error: the database sqlite:///{path} is not a rigbench database (it has "
                           "tables: customers); give an empty database or a rigbench one\n")
    assert _tables(f"sqlite:///{path}") == ["customers"]


def test_opening_an_up_to_date_database_does_not_load_alembic(db_url):
    Store(db_url)
    code = ("import sys; from rigbench.store import Store; Store(sys.argv[1]); "
            "print('alembic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, db_url], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_foreign_keys_are_enforced(db_url):
    store = Store(db_url)
    with pytest.raises(IntegrityError):
        store.add_result(Result(run_id="no-such-run", created_at="t", status="ok",
                                spec=TrialSpec(workload="mlp", batch_size=8)))
    assert store.list() == []
