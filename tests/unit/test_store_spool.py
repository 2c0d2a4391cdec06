"""A database that blinks never costs a measured result (issue 23 items 2 and 3): a busy SQLite
file is waited for out loud, a lost PostgreSQL connection is made again, and past the wait the
result is kept in the spool and stored by the next command that opens the database."""

import json
import logging
import os
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from typer.testing import CliRunner

from rigbench.child_report import ChildReport
from rigbench.cli import app
from rigbench.errors import UnsupportedError, UsageError
from rigbench.runner import session
from rigbench.runner.assemble import build_result
from rigbench.runner.launchers import Outcome
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store, spool
from rigbench.store.waiting import WAIT_ENV, Countdown, wait_bound
from tests.conftest import quick_spec
from tests.databases import fresh_database, server_url, sql

COMMAND = "rigbench run mlp --db postgresql://me:hunter2@db.example/results"


def make_result(run_id="r1", batch_size=32, speed=320.5):
    spec = TrialSpec(workload="cnn", device="cpu", batch_size=batch_size)
    return Result(run_id=run_id, created_at="2026-01-01T00:00:00+00:00", spec=spec, status="ok",
                  metrics=Metrics(samples_per_s=speed, steps_measured=3), step_times_s=[0.1, 0.11, 0.09],
                  tracker_samples=[{"t": 1.0, "rss_bytes": 5.0}], software={"torch": "2.13.0"})


def new_store(url, run_id="r1"):
    store = Store(url)
    store.add_run(run_id, "2026-01-01T00:00:00+00:00", COMMAND, {"cpu_model": "X"})
    return store


def count(url):
    return sql(url, "select count(*) from trials")[0][0]


def store_lines(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "rigbench.store"]


def release(proc):
    proc.kill()
    proc.wait()


def test_busy_sqlite_says_who_waits_then_spools_and_the_next_open_stores_it(tmp_path, monkeypatch, caplog, held_lock):
    db = tmp_path / "busy.db"
    url = f"sqlite:///{db}"
    store = new_store(url)
    monkeypatch.setenv(WAIT_ENV, "1")
    holder = held_lock(db)
    original = make_result()
    with caplog.at_level(logging.WARNING, "rigbench.store"):
        assert store.add_result(original) is None  # not stored, not lost, not raised
    first, *_, last = store_lines(caplog)
    assert first.startswith(f"the database {url} is busy: another process")
    assert first.endswith(f"holds its write lock; rigbench (pid {os.getpid()}) waits up to 1 s")
    if Path("/proc/locks").exists():  # Linux names the holder
        assert f"(pid {holder.pid}, python" in first
    assert last.startswith(f"could not store the result of {original.spec.label()} in {url} (busy for ")
    [kept] = spool.pending(url)
    assert f"kept it in {kept};" in last
    assert "hunter2" not in kept.read_text()  # the run's command is kept masked
    assert count(url) == 0

    release(holder)
    caplog.clear()
    with caplog.at_level(logging.WARNING, "rigbench.store"):
        reopened = Store(url, create=False)
    assert store_lines(caplog) == [f"stored 1 result(s) in {url} that were spooled while it could not take them"]
    [stored] = reopened.list()
    assert reopened.get(stored.id) == original.model_copy(update={"id": stored.id})
    assert spool.pending(url) == []
    caplog.clear()
    Store(url)  # nothing left to import, nothing said
    assert store_lines(caplog) == [] and count(url) == 1


def test_a_run_goes_on_past_a_locked_database_and_waits_only_once(tmp_path, monkeypatch, caplog, held_lock):
    db = tmp_path / "busy.db"
    url = f"sqlite:///{db}"
    store = new_store(url, "run1")
    monkeypatch.setenv(WAIT_ENV, "1")
    # each trial ends at once as `unsupported`: a result, without starting a process
    monkeypatch.setattr(session, "launcher_for", lambda spec: (_ for _ in ()).throw(UnsupportedError("no")))
    holder = held_lock(db)
    with caplog.at_level(logging.WARNING, "rigbench.store"):
        outcome = session.run_trials([quick_spec(batch_size=b) for b in (8, 16, 32)], store, "run1")
    assert [r.spec.batch_size for r in outcome.results] == [8, 16, 32]
    assert len(spool.pending(url)) == 3
    busy = [line for line in store_lines(caplog) if " is busy: " in line]
    assert len(busy) == 1, "after one spool, later results try once instead of waiting again"
    release(holder)
    Store(url)
    assert sorted(r.spec.batch_size for r in Store(url).list()) == [8, 16, 32]


def test_run_says_which_results_went_to_the_spool_instead_of_stored(tmp_path, monkeypatch, held_lock):
    # `rigbench run` against a real SQLite file that another process locks once the run is
    # recorded: every result is spooled, and the end of the run must say so, not "Stored in"
    db = tmp_path / "busy.db"
    monkeypatch.setenv(WAIT_ENV, "1")
    locked = []

    def launch(spec, on_start=None, on_progress=None):
        if not locked:
            locked.append(held_lock(db))
        return Outcome(reports=[ChildReport(status="unsupported", error="no")])

    def busy_result(*args):  # timed beside another process: the busy line names it
        result = build_result(*args)
        result.metrics.others_cpu_pct_mean = 55.0
        return result

    monkeypatch.setattr(session, "launch_trial", launch)
    monkeypatch.setattr(session, "build_result", busy_result)
    done = CliRunner().invoke(app, ["run", "mlp", "-b", "8,16", "-d", "cpu", "--db", str(db)], env={"COLUMNS": "250"})
    assert done.exit_code == 0, done.output
    text = " ".join(done.stdout.split())
    assert "Stored in" not in text
    assert (f"Stored 0 of 2 results in sqlite:///{db} (run " in text
            and f"2 (id -) could not be stored and were kept in the spool: `rigbench results flush --db {db}` "
            "stores them" in text)
    assert "while trials mlp torch cpu b8 fp32, mlp torch cpu b16 fp32 were timed" in text
    assert " -, " not in text and "trials -" not in text
    assert len(spool.pending(f"sqlite:///{db}")) == 2
    release(locked[0])
    assert len(Store(str(db)).list()) == 2


@pytest.mark.timeout(45)  # SQLite's own busy timeout (60 s) used to run out first, in silence
def test_an_exclusive_lock_is_waited_for_out_loud_and_only_up_to_the_bound(tmp_path, monkeypatch, caplog, held_lock):
    from rigbench.store.engine import make_engine
    from rigbench.store.migrate import peek
    from rigbench.store.waiting import Unavailable

    db = tmp_path / "x.db"
    url = f"sqlite:///{db}"
    new_store(url).add_result(make_result())
    monkeypatch.setenv(WAIT_ENV, "1")
    opened = Store(url, create=False)  # before the lock: its reads meet the lock later
    holder = held_lock(db, "EXCLUSIVE")  # blocks reads too: the schema check of every command
    with pytest.raises(UsageError, match=rf"cannot read the database {url}: database is locked \({WAIT_ENV} sets"):
        opened.list()
    with caplog.at_level(logging.WARNING, "rigbench.store"):
        done = CliRunner().invoke(app, ["results", "list", "--db", str(db)])
    assert done.exit_code == 2
    assert done.output.endswith(f"rigbench: error: cannot open the database {url}: busy for 1 s: another process "
                                f"holds its write lock ({WAIT_ENV} sets how long to wait)\n")
    first = store_lines(caplog)[0]
    assert first.startswith(f"the database {url} is busy: another process") and first.endswith("waits up to 1 s")
    if Path("/proc/locks").exists():
        assert f"(pid {holder.pid}, python" in first
    engine = make_engine(url, create=False)
    with engine.connect() as conn:
        # the first read waits out loud and then says so; it used to wait 60 s and read "no tables"
        with pytest.raises(Unavailable, match="busy for 1 s"):
            peek(conn, url)
        # any other wait for a lock is SQLite's silent one: bounded by the same variable
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 1000
    engine.dispose()
    release(holder)
    assert [r.spec.batch_size for r in Store(url, create=False).list()] == [32]


def test_importing_the_spool_twice_stores_each_result_once(db_url, caplog):
    store = new_store(db_url)
    stored = make_result()
    store.add_result(stored)
    # a write whose commit landed but whose answer was lost is spooled all the same, twice here
    spool.write(store.url, stored, {"id": "r1", "created_at": "t", "command": "c", "machine": {}}, "lost")
    spool.write(store.url, stored, {"id": "r1", "created_at": "t", "command": "c", "machine": {}}, "lost")
    other = make_result(run_id="r2", batch_size=64)  # a run the database has not seen: stored with it
    spool.write(store.url, other, {"id": "r2", "created_at": "t2", "command": COMMAND, "machine": {"m": 1}}, "lost")
    done = Store(db_url, import_spool=False).flush_spool()
    assert (done.imported, done.present, done.left) == (1, 2, [])
    assert count(db_url) == 2 and spool.pending(store.url) == []
    reopened = Store(db_url)
    assert reopened.machine("r2") == {"m": 1}
    assert "hunter2" not in reopened.commands(["r2"])["r2"]


def test_an_unreadable_spool_file_is_set_aside_once(tmp_path, caplog):
    url = f"sqlite:///{tmp_path / 'x.db'}"
    Store(url)
    folder = spool.folder(url)
    folder.mkdir(parents=True)
    (folder / "half.json").write_text('{"format": "rigbench-spool", "run": ')
    with caplog.at_level(logging.WARNING, "rigbench.store"):
        Store(url)
    [line] = store_lines(caplog)
    assert line.startswith("1 spooled file(s) cannot be read and were set aside: ")
    assert not (folder / "half.json").exists() and (folder / "half.json.unreadable").exists()
    caplog.clear()
    Store(url)
    assert store_lines(caplog) == []


def test_a_read_only_database_spools_and_an_unwritable_spool_is_one_line(tmp_path, monkeypatch, caplog):
    db = tmp_path / "ro.db"
    new_store(f"sqlite:///{db}")
    read_only = f"sqlite:///file:{db}?mode=ro&uri=true"  # what chmod would do, even for root
    store = Store(read_only)
    with caplog.at_level(logging.WARNING, "rigbench.store"):
        assert store.add_result(make_result()) is None
    assert "readonly database" in store_lines(caplog)[-1]
    assert Store(f"sqlite:///{db}").list()[0].spec.batch_size == 32  # stored by the next open

    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("RIGBENCH_SPOOL_DIR", str(blocked / "spool"))
    with pytest.raises(Exception, match=r"^could not store the result of .* \(attempt to write a readonly database\), "
                                        r"and cannot keep the result in the spool folder .*a-file/spool/\w+ "
                                        r"\(Not a directory\): set RIGBENCH_SPOOL_DIR to a folder you can write$"):
        Store(read_only).add_result(make_result())


def test_results_flush_stores_the_spool_and_says_what_it_did(tmp_path, monkeypatch, held_lock):
    db = tmp_path / "f.db"
    url = f"sqlite:///{db}"
    store = new_store(url)
    run = {"id": "r1", "created_at": "t", "command": COMMAND, "machine": {}}
    spool.write(store.url, make_result(), run, "unreachable")
    spool.write(f"sqlite:///{tmp_path / 'other.db'}", make_result(), run, "unreachable")
    runner = CliRunner()
    monkeypatch.setenv(WAIT_ENV, "0")
    holder = held_lock(db)
    busy = runner.invoke(app, ["results", "flush", "--db", str(db)])
    assert busy.exit_code == 2
    assert busy.output.startswith(f"rigbench: error: 1 spooled result(s) could not be stored in {url} (busy for ")
    assert busy.output.endswith(f"they stay in {spool.folder(url)}\n")
    release(holder)
    done = runner.invoke(app, ["results", "flush", "--db", str(db)])
    assert done.exit_code == 0, done.output
    assert " ".join(done.output.split()) == (f"Stored 1 spooled result(s) in {url}; 1 more are spooled for other "
                                            f"databases in {spool.spool_root()}: give their --db")
    again = runner.invoke(app, ["results", "flush", "--db", str(db)])
    assert again.output.startswith(f"No results are spooled for {url};")
    assert count(url) == 1


def test_the_spool_key_names_the_database_not_its_spelling(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert spool.database_key("sqlite:///x.db") == spool.database_key(f"sqlite:///{tmp_path / 'x.db'}")
    assert spool.database_key("sqlite:///x.db") != spool.database_key("sqlite:///y.db")
    assert (spool.database_key("postgresql+psycopg://u:pw@h:5432/db")
            == spool.database_key("postgresql+psycopg://u:***@h:5432/db")
            != spool.database_key("postgresql+psycopg://u@h:5432/other"))


def test_the_wait_counts_down_every_ten_seconds(caplog):
    now = [0.0]
    countdown = Countdown(30, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, "rigbench.store"):
        for t in (0.5, 1, 5, 10.4, 11, 20.9, 21.5, 29.9, 31):
            now[0] = t
            countdown.tell(lambda: "busy", lambda left: f"{left:.0f} s left")
    assert store_lines(caplog) == ["busy", "19 s left", "8 s left"]


@pytest.mark.parametrize("text", ["soon", "-1", "inf", "nan"])
def test_a_bad_wait_is_one_line_naming_the_variable(monkeypatch, text):
    monkeypatch.setenv(WAIT_ENV, text)
    with pytest.raises(Exception, match=rf"^{WAIT_ENV}='{text}': give the seconds to wait"):
        wait_bound()
    monkeypatch.setenv(WAIT_ENV, "2.5")
    assert wait_bound() == 2.5


# --- PostgreSQL: a server that went away (issue 23 item 2) ---

def _on_server(url, *statements):
    """Run statements (`{db}`: the test database's name) on the test server, from outside."""
    name = make_url(url).database
    engine = create_engine(server_url(), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            for statement in statements:
                conn.exec_driver_sql(statement.format(db=name))
    finally:
        engine.dispose()


TERMINATE = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{db}' AND pid <> pg_backend_pid()"


def test_postgres_restart_reconnects_and_a_server_still_down_spools(monkeypatch, caplog):
    server_url()  # skips without a test server
    with fresh_database() as url:
        store = new_store(url)
        # what a restart does to the store's pooled connection: the server ends it
        _on_server(url, TERMINATE)
        assert store.add_result(make_result(batch_size=8)) is not None
        assert count(url) == 1

        monkeypatch.setenv(WAIT_ENV, "1")
        _on_server(url, 'ALTER DATABASE "{db}" WITH ALLOW_CONNECTIONS false', TERMINATE)  # down for good
        try:
            with caplog.at_level(logging.WARNING, "rigbench.store"):
                assert store.add_result(make_result(batch_size=16)) is None
        finally:
            _on_server(url, 'ALTER DATABASE "{db}" WITH ALLOW_CONNECTIONS true')
        lines = store_lines(caplog)
        shown = store.url
        assert lines[0].startswith(f"the database {shown} is unreachable (")
        assert lines[-1].startswith("could not store the result of") and "kept it in" in lines[-1]
        password = make_url(url).password
        assert password and all(password not in line for line in lines)
        [kept] = spool.pending(url)
        assert password not in kept.read_text()
        assert json.loads(kept.read_text())["database"] == shown

        caplog.clear()
        with caplog.at_level(logging.WARNING, "rigbench.store"):
            Store(url)
        assert store_lines(caplog) == [f"stored 1 result(s) in {shown} that were spooled while it could not take them"]
        assert sorted(b for (b,) in sql(url, "select batch_size from trials")) == [8, 16]


def test_a_retry_after_a_lost_commit_answer_stores_the_result_once(monkeypatch):
    server_url()  # skips without a test server
    with fresh_database() as url:
        store = new_store(url)
        real_transaction = Store._transaction
        answers = []

        @contextmanager
        def answer_lost_once(self, wait_s):
            with real_transaction(self, wait_s) as tx:
                yield tx
            answers.append("lost" if not answers else "ok")  # committed; then the connection drops
            if answers[-1] == "lost":
                raise OperationalError("COMMIT", {}, Exception("server closed the connection unexpectedly"))

        monkeypatch.setattr(Store, "_transaction", answer_lost_once)
        new_id = store.add_result(make_result())
        assert answers == ["lost", "ok"]
        assert sql(url, "select id from trials") == [(new_id,)]
