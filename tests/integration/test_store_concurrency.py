"""Real processes against one SQLite file: eight first opens at once, and a bundle import
killed (SIGKILL) while its transaction is open."""

import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest

from rigbench.spec import SCHEMA_VERSION, Metrics, Result, TrialSpec
from rigbench.store import Store
from rigbench.store.migrate import HEAD_REVISION

# Each opener imports rigbench first, says so, and opens the database only when the test says
# go (one line on stdin), so all eight race on the same fresh file.
OPENER = """
import sys
from rigbench.store import Store
print("ready", flush=True)
sys.stdin.readline()
Store(sys.argv[1])
"""


def test_eight_processes_open_one_fresh_database_at_once(tmp_path):
    path = tmp_path / "fresh.db"
    procs = [subprocess.Popen([sys.executable, "-c", OPENER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(8)]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        outcomes = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [rc for rc, _ in outcomes] == [0] * 8, [err for rc, err in outcomes if rc]
    con = sqlite3.connect(path)
    assert con.execute("select version_num from alembic_version").fetchall() == [(HEAD_REVISION,)]
    assert con.execute("select key, value from meta").fetchall() == [("schema_version", str(SCHEMA_VERSION))]
    tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
    assert tables == {"alembic_version", "meta", "runs", "trials", "trial_samples", "calibrations"}
    assert "kind" in {r[1] for r in con.execute("pragma table_info(trials)")}


# Imports a bundle; after its 50th result (written, not committed) it prints how many trials
# its transaction sees and waits, so the test kills it with the transaction open.
IMPORTER = """
import sys
from rigbench.store import Store
from rigbench.store.bundle import import_bundle, load_bundle
from rigbench.store.db import Transaction

real = Transaction.add_result
calls = []

def add_then_wait(self, result):
    new_id = real(self, result)
    calls.append(new_id)
    if len(calls) == 50:
        seen = self.conn.exec_driver_sql("select count(*) from trials").scalar()
        print(seen, flush=True)
        sys.stdin.readline()  # never answered: the test kills this process
    return new_id

Transaction.add_result = add_then_wait
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
        assert line.strip() == "51", child.stderr.read()  # its transaction holds 50 new trials
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
