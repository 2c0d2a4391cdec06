"""A fleet's shared PostgreSQL store (docs/fleet.md) end to end: two machines (two real
`rigbench run`s with distinct fingerprints) write to one PostgreSQL database, and `rigbench
compare` and `rigbench report` work across them; the password is never shown or stored."""

import json
import os
import subprocess
import sys

import pytest
from sqlalchemy.engine import make_url

from rigbench.store import Store
from tests.databases import fresh_database

pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(300)

# The second machine: the same code with another hostname, which is what tells machines apart
# in the stored fingerprint (rigbench.fingerprint). It takes its database from RIGBENCH_DB.
OTHER_MACHINE = """
import socket, sys
socket.gethostname = lambda: "machine-b"
from rigbench.cli import main
sys.argv = ["rigbench", *sys.argv[1:]]
main()
"""


def rigbench(*args, code=None, env=None):
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "rigbench", *args]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=240, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:{proc.stdout}\nstderr:{proc.stderr}"
    return proc


@pytest.fixture()
def fleet_db():
    with fresh_database() as url:  # skipped without a PostgreSQL test server
        yield url


def test_two_machines_share_one_postgresql_store(fleet_db, tmp_path):
    password = make_url(fleet_db).password
    plain = fleet_db.replace("postgresql+psycopg://", "postgresql://", 1)  # as a user writes it
    trial = ("run", "mlp", "-d", "cpu", "--quick", "--steps", "8")
    here = rigbench(*trial, "--db", plain)
    there = rigbench(*trial, "--json", code=OTHER_MACHINE, env={"RIGBENCH_DB": plain})
    for proc in (here, there):
        assert password not in proc.stdout + proc.stderr
    assert "Stored in postgresql+psycopg://" in here.stdout and ":***@" in here.stdout

    store = Store(fleet_db)
    results = store.list()
    assert [r.status for r in results] == ["ok", "ok"]
    run_a, run_b = (r.run_id for r in results)
    machines = {store.machine(run_a)["hostname"], store.machine(run_b)["hostname"]}
    assert "machine-b" in machines and len(machines) == 2
    assert password not in store.commands([run_a])[run_a] and "***" in store.commands([run_a])[run_a]

    compared = json.loads(rigbench("compare", run_a, run_b, "--db", plain, "--json").stdout)
    assert compared["same_machine"] is False
    (pair,) = compared["pairs"]
    assert pair["trial"].startswith("mlp torch cpu")
    table = rigbench("compare", run_a, run_b, "--db", plain).stdout
    assert "Different machines" in table and ("B: " in table and "on machine-b (" in table)

    page = tmp_path / "fleet.html"
    reported = rigbench("report", "--db", plain, "--out", str(page))
    assert password not in reported.stdout + reported.stderr
    html = page.read_text()
    assert "machine-b" in html and store.machine(run_a)["hostname"] in html
    assert password not in html

    # Every other way a result leaves the store: listings, one trial, every export format.
    # (CSV holds the rows of the JSON export; the listing is checked with PGPASSWORD below)
    shown = [rigbench("results", "show", str(results[0].id), "--db", plain),
             rigbench("results", "export", "--db", plain),
             rigbench("results", "export", "--format", "bundle", "--db", plain)]
    for proc in shown:
        assert password not in proc.stdout + proc.stderr
    # ... and every text the database itself holds, in every table
    from sqlalchemy import inspect

    from tests.databases import connection, sql

    with connection(fleet_db) as conn:
        tables = inspect(conn).get_table_names()
    for table in tables:
        assert password not in repr(sql(fleet_db, f'select * from "{table}"')), table

    # libpq's own ways to keep the password out of the URL: PGPASSWORD (as ~/.pgpass and PGSERVICE)
    bare = make_url(plain).set(password=None).render_as_string(hide_password=False)
    listed = rigbench("results", "list", "--db", bare, env={"PGPASSWORD": password})
    assert "mlp" in listed.stdout and password not in listed.stdout + listed.stderr
