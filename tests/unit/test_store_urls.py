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
from rigbench.store.engine import display_url, hint_argv, mask_urls
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


def test_another_postgresql_driver_missing_names_the_url_that_works():
    # `postgresql+asyncpg://` said `pip install 'rigbench[postgres]'`, which installs psycopg, not asyncpg
    with pytest.raises(UsageError, match=r"not installed \(asyncpg\): rigbench's PostgreSQL driver is psycopg 3 "
                                         r"\(pip install 'rigbench\[postgres\]'\); give the URL as postgresql://") as caught:
        Store(f"postgresql+asyncpg://rb:{SECRET}@127.0.0.1:1/rigbench")
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


def test_an_unescaped_at_in_the_password_is_refused_before_any_driver_names_its_rest(monkeypatch):
    """psycopg's error named `failed to resolve host 'SECRETTAIL@127.0.0.1'`: SQLAlchemy had cut
    the password at its first `@`. Such a URL is refused whole; a SQLite path may hold `@`."""
    for url in ("postgresql://fleet2:abc@SECRETTAIL@127.0.0.1:5/fleet2", "postgres://u:a@b@localhost/db?x=1",
                "postgresql://u:p@SECRETTAIL@[::1]/db"):  # one SQLAlchemy cannot parse: the same hint
        with pytest.raises(UsageError, match="%40") as refused:
            resolve_db_url(url)
        assert "SECRETTAIL" not in str(refused.value) and "a@b" not in str(refused.value)
        monkeypatch.setenv("RIGBENCH_DB", url)
        with pytest.raises(UsageError, match="more than one '@'"):
            Store()
    assert resolve_db_url("sqlite:////tmp/a@b/c@d.db") == "sqlite:////tmp/a@b/c@d.db"
    assert resolve_db_url("postgresql://u:a%40b@h/db?password_hint=x@y") == "postgresql+psycopg://u:a%40b@h/db?password_hint=x@y"


def test_a_resume_hint_names_the_database_without_its_password(monkeypatch):
    """An interrupted sweep on PostgreSQL printed `Resume with: ... --db postgresql://rigbench:<the
    password>@...`: the hint drops the password (libpq reads PGPASSWORD or ~/.pgpass)."""
    from rigbench.cli.sweep import _resume_command

    url = f"postgresql://rb:{SECRET}@127.0.0.1:5432/rigbench"
    argv = ["rigbench", "sweep", "mlp", "--db", url, f"--db={url}?password={SECRET}", "-b", "8", url]
    assert hint_argv(argv[1:]) == ["sweep", "mlp", "--db", "postgresql://rb@127.0.0.1:5432/rigbench",
                                   "--db=postgresql://rb@127.0.0.1:5432/rigbench", "-b", "8",
                                   "postgresql://rb@127.0.0.1:5432/rigbench"]
    monkeypatch.setattr("sys.argv", argv[:5])
    hint = _resume_command()
    assert SECRET not in hint and hint.endswith("--db postgresql://rb@127.0.0.1:5432/rigbench --resume")
    assert hint_argv(["--db", "/tmp/a b.db"]) == ["--db", "/tmp/a b.db"]


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


@pytest.mark.parametrize("argv,stored", [
    # a space or a quote in the password: the argument is the whole URL, masked whole
    (["rigbench", "run", "--db", "postgresql://rb:top secret@127.0.0.1:5432/rb"],
     "rigbench run --db postgresql://rb:***@127.0.0.1:5432/rb"),
    (["rigbench", "run", "--db", "postgresql://rb:it's \"x\"@h/rb"], "rigbench run --db postgresql://rb:***@h/rb"),
    # an unencoded `@` or `:`: the password runs to the last `@`
    (["rigbench", "run", "--db", "postgresql://u:se:cr@et@h/db"], "rigbench run --db postgresql://u:***@h/db"),
    (["rigbench", "run", "--db=postgresql://u:top secret@h/db"], "rigbench run --db=postgresql://u:***@h/db"),
    (["rigbench", "score", "--reference=postgres://u:a b@h/d"], "rigbench score --reference=postgres://u:***@h/d"),
    (["rigbench", "run", "--db", "postgresql://u@h/db?password=a b&sslmode=require"],
     "rigbench run --db 'postgresql://u@h/db?password=***&sslmode=require'"),
    # a path stays as it was, quoted for the shell
    (["rigbench", "run", "--db", "/tmp/my runs/r.db", "-b", "8,16"], "rigbench run --db '/tmp/my runs/r.db' -b 8,16"),
])
def test_a_stored_command_masks_each_argument_whole(argv, stored):
    import shlex

    from rigbench.store.engine import mask_command
    from rigbench.store.rows import stored_command

    assert stored_command(shlex.join(argv)) == stored
    assert mask_command(stored) == stored  # masked again on reading: unchanged


def test_a_url_in_free_text_is_masked_to_its_last_at():
    line = "RIGBENCH_DB=postgresql://u:se:cr@et@h/db rigbench run mlp; RIGBENCH_DB=postgres://v:x@y@h2/d2"
    assert mask_urls(line) == "RIGBENCH_DB=postgresql://u:***@h/db rigbench run mlp; RIGBENCH_DB=postgres://v:***@h2/d2"
    assert display_url("postgresql+psycopg://u:se:cr@et@h:5432/db") == "postgresql+psycopg://u:***@h:5432/db"
    from rigbench.cli.common import db_flag

    assert "se" not in db_flag("postgresql://u:se:cr@et@h/db").split("//")[1]  # SQLAlchemy's host is "et@h"


def test_a_run_started_from_argv_stores_no_part_of_the_password(tmp_path, monkeypatch):
    # the real path: experiments.start_run stores shlex.join(sys.argv) with this machine
    from rigbench.experiments.execute import start_run

    secret = "top 's3cret\"@pw"
    monkeypatch.setattr(sys, "argv", ["rigbench", "run", "mlp", "--db", f"postgresql://rb:{secret}@127.0.0.1:5/rb"])
    store = Store(str(tmp_path / "r.db"))
    run_id = start_run(store)
    store.add_result(make_result(run_id))
    (command,) = store.commands([run_id]).values()
    assert command == "rigbench run mlp --db postgresql://rb:***@127.0.0.1:5/rb"
    bundle = dump_bundle(export_bundle(store))
    for part in ("top", "s3cret", "@pw"):
        assert part not in bundle
