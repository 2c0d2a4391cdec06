"""Bad input is refused before any work: no database made, no data set fetched, no device
measured, and stderr holds the error line alone (README, "Exit codes": 2 is bad input, found
before anything runs, one line, nothing stored). In process, with typer's CliRunner."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rigbench import api
from rigbench.cli import app
from rigbench.cli.console import progress_bar
from rigbench.experiments import calibrate as experiment_calibrate
from rigbench.experiments import devices as experiment_devices
from tests.e2e.test_bad_input import assert_one_line_error, stored_db


@pytest.fixture(autouse=True)
def _cpu_only(monkeypatch):
    """Device listing normally asks torch in a child process; here the CPU is the machine."""
    monkeypatch.setattr(experiment_devices, "framework_devices", lambda framework: ["cpu"])


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def only_the_error_line(result) -> None:
    """Nothing but the error line on stderr: no blank line left by a progress bar before it."""
    assert result.stderr.startswith("rigbench: error: ") and result.stderr.count("\n") == 1, repr(result.stderr)


@pytest.mark.parametrize(("args", "fragment"), [
    (["--start", "0"], "--start must be at least 1"),
    (["--max", "4"], "--max (4) is below --start (8): raise --max, or lower --start"),  # named --start alone
    (["--start", "64", "--max", "32"], "--max (32) is below --start (64)"),
    (["--margin", "1"], "--margin must be from 0"),
    (["--tolerance", "-1"], "--tolerance must be from 0"),
    (["-d", "gpu9"], "'gpu9' is not available to torch here"),
])
def test_max_batch_refuses_bad_input_before_it_makes_the_database(tmp_path, args, fragment):
    db = tmp_path / "m.db"
    result = invoke("max-batch", "mlp", *args, "--db", str(db))
    assert_one_line_error(result, fragment)
    only_the_error_line(result)
    assert not db.exists()


def test_a_progress_bar_off_a_terminal_writes_nothing(capsys):
    """rich ends a bar with a blank line where it cannot draw one: before an error line, that
    made two lines on stderr."""
    with progress_bar() as progress:
        progress.add_task("x", total=1)
    assert capsys.readouterr().err == ""


def test_a_database_error_inside_a_progress_bar_is_one_line(tmp_path):
    result = invoke("max-batch", "mlp", "--db", str(tmp_path))  # a folder, not a database
    assert_one_line_error(result, "cannot open the database")
    only_the_error_line(result)


@pytest.mark.parametrize("command", [
    ["train", "mlp", "--dataset", "mnist"],
    ["lr-find", "mlp", "--dataset", "mnist"],
])
@pytest.mark.parametrize(("args", "fragment"), [
    (["--framework", "nope"], "unknown framework 'nope'"),
    (["-d", "gpu9"], "'gpu9' is not available to torch here"),
])
def test_framework_and_device_are_checked_before_the_data_set_is_fetched(tmp_path, monkeypatch, command, args,
                                                                         fragment):
    """A misspelt framework or device was found only after the data set's download (minutes),
    and without a network the error named the data set instead of the flag."""
    def fetch(*_args, **_kwargs):
        raise AssertionError("the data set was prepared before the framework and device were checked")

    monkeypatch.setattr(api, "prepare_data", fetch)
    assert_one_line_error(invoke(*command, *args, "--db", str(tmp_path / "r.db")), fragment)
    assert not (tmp_path / "r.db").exists()


def test_recommend_no_run_never_creates_the_database(tmp_path):
    """--no-run only reads: a mistyped --db is an error, as for `results list`, not a new empty
    database and "not measured" advice."""
    missing = tmp_path / "typo.db"
    assert_one_line_error(invoke("recommend", "mlp", "--no-run", "--db", str(missing)), "does not exist", "--db")
    assert not missing.exists()


@pytest.mark.parametrize("no_run", [[], ["--no-run"]])
def test_recommend_refuses_an_unknown_framework_before_it_opens_the_database(tmp_path, no_run):
    db = tmp_path / "r.db"
    assert_one_line_error(invoke("recommend", "mlp", "--framework", "nope", *no_run, "--db", str(db)),
                          "unknown framework 'nope'")
    assert not db.exists()


def test_recommend_refuses_a_batch_its_data_set_cannot_fill_before_it_makes_the_database(tmp_path):
    # it was refused, exit 2, but only after an empty database file had been made
    db = tmp_path / "r.db"
    assert_one_line_error(invoke("recommend", "mlp", "-b", "64,5000", "--quick", "--db", str(db)),
                          "digits has 1,438 training samples, fewer than one batch of 5000")
    assert not db.exists()


def test_calibrate_checks_every_device_before_it_measures_one(tmp_path, monkeypatch):
    """`-d cpu,gpu9` calibrated the CPU for a minute, then refused gpu9 without showing the CPU's table."""
    def measure(*_args, **_kwargs):
        raise AssertionError("a device was calibrated before every device named was checked")

    monkeypatch.setattr(experiment_calibrate, "calibrate_in_child", measure)
    db = tmp_path / "k.db"
    result = invoke("calibrate", "-d", "cpu,gpu9", "--quick", "--db", str(db))
    assert_one_line_error(result, "'gpu9' is not available to torch here")
    only_the_error_line(result)
    assert not db.exists()


@pytest.mark.parametrize("counts", ["1", "1,1"])
def test_scaling_refuses_a_process_study_with_nothing_to_compare(tmp_path, counts):
    """--processes 1 ran one trial, then exited 1: no count above one, so no speed-up to show."""
    db = tmp_path / "s.db"
    assert_one_line_error(invoke("scaling", "mlp", "--processes", counts, "--db", str(db)),
                          "--processes", "a count above 1")
    assert not db.exists()


def test_train_names_the_workers_flag(tmp_path):
    result = invoke("train", "mlp", "--dataset", "digits", "--input", "loader", "--workers", "-1",
                    "--db", str(tmp_path / "r.db"))
    assert_one_line_error(result, "--workers cannot be negative")


def test_compare_says_a_folder_is_not_a_bundle(tmp_path: Path):
    folder = tmp_path / "exports"
    folder.mkdir()
    result = invoke("compare", str(folder), str(folder / "b.json"), "--db", stored_db(tmp_path))
    assert_one_line_error(result, f"{folder} is a folder", "bundle file")


@pytest.mark.parametrize("name", ["shot", "shot.jpg", "folder.png"])
def test_report_refuses_a_screenshot_path_that_is_no_png_file(tmp_path, name):
    """Chromium's `unsupported mime type "null"` was a traceback, after the report was written."""
    (tmp_path / "folder.png").mkdir()
    page = tmp_path / "r.html"
    result = invoke("report", "-o", str(page), "--screenshot", str(tmp_path / name), "--db", stored_db(tmp_path))
    assert_one_line_error(result, f"--screenshot {tmp_path / name}", ".png")
    assert not page.exists()  # refused before any work
