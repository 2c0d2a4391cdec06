"""Real processes against one database: eight first opens at once and two writers at once (on
SQLite and on PostgreSQL), and a bundle import killed (SIGKILL) while its transaction is open."""

import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest
from sqlalchemy import inspect

from rigbench.spec import SCHEMA_VERSION, Metrics, Result, TrialSpec
from rigbench.store import Store
from rigbench.store.bundle import BATCH
from rigbench.store.migrate import HEAD_REVISION
from tests.databases import connection, sql

# Each opener imports rigbench first, says so, and opens the database only when the test says
# go (one line on stdin), so all eight race on the same fresh file.
OPENER = """
import sys
from rigbench.store import Store
print("ready", flush=True)
sys.stdin.readline()
Store(sys.argv[1])
"""


def start_together(code: str, args_each: list[list[str]]) -> list[tuple[int, str, str]]:
    """Run `code` in one process per argument list, released together once every one has
    imported rigbench and printed "ready"; (exit code, stdout, stderr) of each."""
    procs = [subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for args in args_each]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready", p.stderr.read()
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        outcomes = []
        for p in procs:
            out, err = p.communicate(timeout=300)
            outcomes.append((p.returncode, out, err))
        return outcomes
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_eight_processes_open_one_fresh_database_at_once(db_url):
    outcomes = start_together(OPENER, [[db_url]] * 8)
    assert [rc for rc, _, _ in outcomes] == [0] * 8, [err for rc, _, err in outcomes if rc]
    assert sql(db_url, "select version_num from alembic_version") == [(HEAD_REVISION,)]
    assert sql(db_url, "select key, value from meta") == [("schema_version", str(SCHEMA_VERSION))]
    with connection(db_url) as conn:
        tables = set(inspect(conn).get_table_names())
        assert "kind" in {c["name"] for c in inspect(conn).get_columns("trials")}
    assert tables == {"alembic_version", "meta", "runs", "trials", "trial_samples", "calibrations"}


# A writer: its own run, then (after the go) WRITES results one transaction each, as a sweep
# stores its trials; it prints the ids it was given.
WRITER = """
import sys
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store
url, name = sys.argv[1], sys.argv[2]
store = Store(url)
store.add_run(name, "2026-01-01T00:00:00+00:00", "rigbench run", {"hostname": name})
print("ready", flush=True)
sys.stdin.readline()
for i in range(WRITES):
    result = Result(run_id=name, created_at=f"2026-01-01T00:00:{i:02d}+00:00", status="ok",
                    spec=TrialSpec(workload="mlp", batch_size=i + 1), metrics=Metrics(samples_per_s=float(i + 1)),
                    step_times_s=[0.01 * (i + 1)] * 3)
    print(store.add_result(result), flush=True)
"""


def test_two_writers_at_once_lose_nothing(db_url):
    Store(db_url)  # created first: this test is about writing, the one above about opening
    writes = 20
    outcomes = start_together(WRITER.replace("WRITES", str(writes)), [[db_url, "a"], [db_url, "b"]])
    assert [rc for rc, _, _ in outcomes] == [0, 0], [err for rc, _, err in outcomes if rc]
    given = [[int(line) for line in out.split()] for _, out, _ in outcomes]
    assert [len(ids) for ids in given] == [writes, writes] and not set(given[0]) & set(given[1])
    store = Store(db_url)
    for name, ids in zip(("a", "b"), given):
        stored = store.list(run_id=name)
        assert [r.id for r in stored] == ids  # each writer's results, in its order
        assert [r.spec.batch_size for r in stored] == list(range(1, writes + 1))
        assert store.get(ids[-1]).step_times_s == [0.01 * writes] * 3
        assert store.machine(name) == {"hostname": name}
    assert sql(db_url, "select count(*) from trial_samples") == [(2 * writes,)]


# Imports a bundle when the test says go; prints what it added and skipped.
SAME_BUNDLE = """
import sys
from rigbench.store import Store
from rigbench.store.bundle import import_bundle, load_bundle
store, bundle = Store(sys.argv[1]), load_bundle(sys.argv[2])
print("ready", flush=True)
sys.stdin.readline()
done = import_bundle(store, bundle)
print(done.added_results, done.skipped_results)
"""


def test_one_bundle_imported_twice_at_once_is_stored_once(db_url, tmp_path):
    """Each import reads what is stored, then writes the rest: the write lock (SQLite's, or
    PostgreSQL's advisory lock) makes the second wait for the first and skip everything."""
    results = [Result(run_id="theirs", created_at=f"2026-01-02T00:00:{i:02d}+00:00", status="ok",
                      spec=TrialSpec(workload="mlp", batch_size=8 + i), step_times_s=[0.1] * 3,
                      metrics=Metrics(samples_per_s=(8 + i) / 0.1, steps_measured=3))
               for i in range(30)]
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps({
        "format": "rigbench-results", "schema_version": SCHEMA_VERSION,
        "runs": [{"id": "theirs", "created_at": "2026-01-02T00:00:00+00:00", "command": "rigbench run",
                  "machine": {"hostname": "there"}}],
        "results": [r.model_dump(mode="json") for r in results]}))
    Store(db_url)
    outcomes = start_together(SAME_BUNDLE, [[db_url, str(path)]] * 2)
    assert [rc for rc, _, _ in outcomes] == [0, 0], [err for rc, _, err in outcomes if rc]
    assert sorted(out.split() for _, out, _ in outcomes) == [["0", "30"], ["30", "0"]]
    assert sql(db_url, "select count(*) from trials") == [(30,)]
    assert sql(db_url, "select count(*) from runs") == [(1,)]


# Imports a bundle; after its first batch of results (bundle.BATCH, written, not committed) it
# prints how many trials its transaction sees and waits, so the test kills it with the
# transaction open.
IMPORTER = """
import sys
from rigbench.store import Store
from rigbench.store.bundle import import_bundle, load_bundle
from rigbench.store.db import Transaction

real = Transaction.add_results

def add_then_wait(self, results):
    new_ids = real(self, results)
    seen = self.conn.exec_driver_sql("select count(*) from trials").scalar()
    print(seen, flush=True)
    sys.stdin.readline()  # never answered: the test kills this process
    return new_ids

Transaction.add_results = add_then_wait
import_bundle(Store(sys.argv[1]), load_bundle(sys.argv[2]))
"""


def dump(path):
    con = sqlite3.connect(path)
    try:
        return {t: con.execute(f"select * from {t} order by 1").fetchall()
                for t in ("runs", "trials", "trial_samples", "calibrations", "meta")}
    finally:
        con.close()


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_bundle_import_killed_midway_leaves_the_database_as_it_was(tmp_path):
    db = tmp_path / "target.db"
    store = Store(str(db))
    store.add_run("mine", "2026-01-01T00:00:00+00:00", "rigbench run", {"hostname": "here"})
    store.add_result(Result(run_id="mine", created_at="t", status="ok",
                            spec=TrialSpec(workload="mlp", batch_size=8)))
    before = dump(db)

    results = [Result(run_id="theirs", created_at=f"2026-01-02T00:00:{i % 60:02d}+00:00", status="ok",
                      spec=TrialSpec(workload="mlp", batch_size=8 + i),
                      metrics=Metrics(samples_per_s=100.0 + i, steps_measured=3), step_times_s=[0.1] * 3)
               for i in range(120)]
    bundle = {"format": "rigbench-results", "schema_version": SCHEMA_VERSION,
              "runs": [{"id": "theirs", "created_at": "2026-01-02T00:00:00+00:00",
                        "command": "rigbench run", "machine": {"hostname": "there"}}],
              "results": [r.model_dump(mode="json") for r in results]}
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))

    child = subprocess.Popen([sys.executable, "-c", IMPORTER, str(db), str(path)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        assert line.strip() == str(1 + BATCH), child.stderr.read()  # its transaction holds BATCH new trials
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=60) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()

    assert dump(db) == before
    reopened = Store(str(db))
    assert [r.run_id for r in reopened.list()] == ["mine"]
    assert reopened.machine("theirs") is None
