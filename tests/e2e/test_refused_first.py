"""Bad input is refused before any work: no database made, no data set fetched, no device
measured, and stderr holds the error line alone (README, "Exit codes": 2 is bad input, found
before anything runs, one line, nothing stored). In process, with typer's CliRunner."""

import pytest
from typer.testing import CliRunner

from rigbench.cli import app
from rigbench.cli.common import progress_bar
from rigbench.experiments import devices as experiment_devices


@pytest.fixture(autouse=True)
def _cpu_only(monkeypatch):
    """Device listing normally asks torch in a child process; here the CPU is the machine."""
    monkeypatch.setattr(experiment_devices, "framework_devices", lambda framework: ["cpu"])


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def only_the_error_line(result) -> None:
    """Nothing but the error line on stderr: no blank line left by a progress bar before it."""
    assert result.stderr.startswith("rigbench: error: ") and result.stderr.count("\n") == 1, repr(result.stderr)


def test_a_progress_bar_off_a_terminal_writes_nothing(capsys):
    """rich ends a bar with a blank line where it cannot draw one: before an error line, that
    made two lines on stderr."""
    with progress_bar() as progress:
        progress.add_task("x", total=1)
    assert capsys.readouterr().err == ""
