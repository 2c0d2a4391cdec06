"""A home folder rigbench cannot write (issue 23 item 18): every command that needs its data or
cache folder says in one line which path it could not make and which variable moves it,
exit 2, instead of a chained traceback. The home is a path through a regular file, so making a
folder there fails even for root (who writes through chmod)."""

import os

import pytest
from typer.testing import CliRunner

from rigbench.cli import app


@pytest.fixture
def read_only_home(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    home = blocker / "home"
    monkeypatch.setenv("HOME", str(home))
    for var in ("RIGBENCH_DB", "RIGBENCH_CACHE_DIR", "RIGBENCH_SPOOL_DIR", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    return home


def one_line_error(args):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    [line] = result.output.splitlines()
    assert line.startswith("rigbench: error: ")
    return line


@pytest.mark.parametrize("command", [["run", "mlp", "--quick", "-d", "cpu"], ["sweep", "mlp", "--quick", "-b", "8"]])
def test_commands_that_store_name_the_folder_and_rigbench_db(read_only_home, command):
    line = one_line_error(command)
    assert f"cannot create the folder {read_only_home}/" in line
    assert line.endswith("(Not a directory): give --db or set RIGBENCH_DB to a database you can write")


def test_commands_that_read_name_rigbench_db(read_only_home):
    line = one_line_error(["results", "list"])
    assert line.startswith(f"rigbench: error: the database sqlite:///{read_only_home}/")
    assert "check --db or RIGBENCH_DB" in line


def test_a_data_set_download_names_rigbench_cache_dir(read_only_home, tmp_path):
    line = one_line_error(["train", "mlp", "--dataset", "mnist", "--epochs", "1", "--db", str(tmp_path / "r.db")])
    assert f"cannot create the data folder {read_only_home}/" in line
    assert line.endswith("(Not a directory): set RIGBENCH_CACHE_DIR to a folder you can write (or give --data-dir)")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through chmod")
def test_a_read_only_folder_names_rigbench_db(tmp_path, monkeypatch):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        line = one_line_error(["run", "mlp", "--quick", "-d", "cpu", "--db", str(folder / "r.db")])
    finally:
        folder.chmod(0o755)
    assert line.startswith(f"rigbench: error: cannot open the database sqlite:///{folder}/r.db: ")
    assert line.endswith("; give --db or set RIGBENCH_DB to a database you can write")


def test_a_database_sqlite_cannot_open_names_rigbench_db(tmp_path):
    folder = tmp_path / "a-folder.db"  # what SQLite meets in a read-only folder: it cannot open the file
    folder.mkdir()
    line = one_line_error(["run", "mlp", "--quick", "-d", "cpu", "--db", str(folder)])
    assert line == (f"rigbench: error: cannot open the database sqlite:///{folder}: unable to open database file; "
                    "give --db or set RIGBENCH_DB to a database you can write")
