"""Database URLs: `postgresql://` gets psycopg 3, and a password is never printed, stored or
exported (store/engine.display_url and mask_urls)."""

import json
import subprocess
import sys

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from rigbench.errors import UsageError
from rigbench.store import Store, resolve_db_url
from rigbench.store.bundle import dump_bundle, export_bundle
from rigbench.store.engine import display_url, mask_urls
from tests.databases import server_url
from tests.unit.test_store import make_result

SECRET = "s3cret-pw"


@pytest.mark.parametrize("given,resolved", [
    ("postgresql://u:pw@h/db", "postgresql+psycopg://u:pw@h/db"),
    ("postgres://u@h:5433/db?sslmode=require", "postgresql+psycopg://u@h:5433/db?sslmode=require"),
    ("postgresql+psycopg://u@h/db", "postgresql+psycopg://u@h/db"),
    ("postgresql+psycopg2://u@h/db", "postgresql+psycopg2://u@h/db"),  # a driver the user chose stays
    ("sqlite:////tmp/x.db", "sqlite:////tmp/x.db"),
])
def test_a_plain_postgresql_url_gets_psycopg_3(given, resolved):
    assert resolve_db_url(given) == resolved


@pytest.mark.parametrize("url,shown", [
    (f"postgresql+psycopg://rb:{SECRET}@db.lan:5432/rigbench", "postgresql+psycopg://rb:***@db.lan:5432/rigbench"),
    (f"postgresql://rb@db.lan/rigbench?password={SECRET}&sslmode=require",
     "postgresql://rb@db.lan/rigbench?password=***&sslmode=require"),
    (f"postgresql://rb:{SECRET}@db.lan:notaport/x", "postgresql://rb:***@db.lan:notaport/x"),  # unparseable
    ("postgresql://rb@db.lan/rigbench", "postgresql://rb@db.lan/rigbench"),
    ("sqlite:///file:x.db?mode=ro&uri=true", "sqlite:///file:x.db?mode=ro&uri=true"),  # untouched, not re-rendered
])
def test_display_url_masks_the_password(url, shown):
    assert display_url(url) == shown


def test_urls_inside_a_command_line_are_masked():
    command = f"rigbench run mlp --db 'postgresql://rb:{SECRET}@h/db' --db=postgres://a:{SECRET}@h/d -b 8"
    assert mask_urls(command) == "rigbench run mlp --db 'postgresql://rb:***@h/db' --db=postgres://a:***@h/d -b 8"


def test_a_missing_driver_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` now fails as if not installed
    with pytest.raises(UsageError, match=r"not installed \(psycopg\): pip install 'rigbench\[postgres\]'") as caught:
        Store(f"postgresql://rb:{SECRET}@127.0.0.1:1/rigbench")
    assert SECRET not in str(caught.value)


def rigbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rigbench", *args], capture_output=True, text=True, timeout=120)


def assert_one_masked_line(proc: subprocess.CompletedProcess, reason: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and SECRET not in proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("rigbench: error: cannot open the database postgresql+psycopg://")
    assert ":***@" in line and reason in line


def test_an_unreachable_server_is_one_line_without_the_password():
    proc = rigbench("results", "list", "--db", f"postgresql://rb:{SECRET}@127.0.0.1:1/rigbench")
    assert_one_masked_line(proc, "Connection refused")


def test_a_wrong_password_is_one_line_without_the_password():
    server = make_url(server_url())  # skipped without a test server
    proc = rigbench("results", "list", "--db", server.set(password=SECRET).render_as_string(hide_password=False))
    assert_one_masked_line(proc, f'password authentication failed for user "{server.username}"')


def test_stored_commands_and_bundles_never_hold_the_password(db_url):
    store = Store(db_url)
    password = make_url(db_url).password  # None on SQLite
    assert store.url == display_url(db_url) and (password is None or password not in store.url)
    store.add_run("r1", "2026-01-01T00:00:00+00:00", f"rigbench run cnn --db postgresql://rb:{SECRET}@h/db", {})
    store.add_result(make_result("r1"))
    with store.engine.connect() as conn:  # what the table holds
        assert conn.execute(text("select command from runs")).scalar() == "rigbench run cnn --db postgresql://rb:***@h/db"
        # a row written before masking existed is masked where it is read
        conn.execute(text("update runs set command = :c"), {"c": f"rigbench run --db postgresql://rb:{SECRET}@h/db"})
        conn.commit()
    assert store.commands(["r1"]) == {"r1": "rigbench run --db postgresql://rb:***@h/db"}
    bundle = dump_bundle(export_bundle(store))
    assert SECRET not in bundle
    assert json.loads(bundle)["runs"][0]["command"] == "rigbench run --db postgresql://rb:***@h/db"


def test_next_step_hints_name_the_database_without_its_password():
    from rigbench.cli.common import db_flag

    assert db_flag(None) == ""
    assert db_flag("/tmp/my runs/r.db") == " --db '/tmp/my runs/r.db'"  # quoted for the shell
    # without the password, so that libpq takes it from PGPASSWORD or ~/.pgpass again
    assert db_flag("postgresql://bench:s3cret@db.example/rigbench") == " --db postgresql://bench@db.example/rigbench"
    assert db_flag("postgresql://bench@db.example/rigbench?password=s3cret&sslmode=require") == (
        " --db 'postgresql://bench@db.example/rigbench?sslmode=require'")


def test_a_database_in_a_missing_folder_says_it_made_the_folder(tmp_path, caplog):
    # RIGBENCH_DB=/mistyped/path/x.db used to create the folders without a word.
    from rigbench.store import Store

    path = tmp_path / "not" / "yet" / "results.db"
    with caplog.at_level("WARNING", logger="rigbench.store"):
        Store(str(path))
        Store(str(path))  # the second time the folder is there: nothing to say
    assert [r.getMessage() for r in caplog.records] == [f"created the folder {path.parent} for the database results.db"]
    assert path.exists()
