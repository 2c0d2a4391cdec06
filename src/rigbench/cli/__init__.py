"""Command line: flags -> specs -> rigbench.api. No measurement logic lives here.

`common.py` holds the typer app and what commands share; each other module registers one
group of commands on it when imported below.
"""

import logging
import sys

import rigbench.cli.starting  # noqa: F401  (first: Ctrl-C during the imports below is one line)
from rigbench.cli import (
    advise,  # noqa: F401  (registers lr-find, scaling)
    calibrate,  # noqa: F401  (registers calibrate, roofline)
    compare,  # noqa: F401  (registers compare, score, results import)
    core,  # noqa: F401  (registers run, train, workloads, devices, results, report)
    interrupts,
    listing,  # noqa: F401  (registers results list, results runs)
    max_batch,  # noqa: F401  (registers max-batch)
    recommend,  # noqa: F401  (registers recommend)
    specs,  # noqa: F401  (registers specs)
    sweep,  # noqa: F401  (registers sweep)
)
from rigbench.cli.common import app, results_app
from rigbench.cli.console import NO_ROOM, closed_pipe, err, output_failed, output_gone, utf8_streams
from rigbench.cli.examples import add_examples

add_examples(app, results_app)  # after every module above has registered its commands


class ProgressLines(logging.Handler):
    """What the layers below say on the logger "rigbench.progress" before seconds of work nothing
    else would show (a framework asked for its devices: runner/probe.py), a line on a terminal's
    stderr each. Not into a file or a pipe: there bad input the work finds (a device torch lacks)
    is one line alone (README, "Exit codes"). A library user, who installs no handler, sees none."""

    def emit(self, record: logging.LogRecord) -> None:
        if err.is_terminal:
            err.print(record.getMessage(), highlight=False, markup=False, soft_wrap=True)


class WarningLines(logging.Handler):
    """What the layers below warn of (a stored row that cannot be read, a result kept in the
    spool), a line on stderr each, through the stderr console as every other line: control
    characters written out, where Python's last-resort handler printed a stored run id's ESC
    as it was, and it acted on the terminal."""

    def emit(self, record: logging.LogRecord) -> None:
        err.print(record.getMessage(), highlight=False, markup=False, soft_wrap=True)


def show_progress_lines() -> None:
    progress = logging.getLogger("rigbench.progress")
    if not any(isinstance(h, ProgressLines) for h in progress.handlers):
        progress.addHandler(ProgressLines())
    progress.setLevel(logging.INFO)
    progress.propagate = False


def show_warning_lines() -> None:
    """The command's own handler of rigbench's warnings (main only: a library user's logging,
    and a test's, stay as they are)."""
    warnings = logging.getLogger("rigbench")
    if not any(isinstance(h, WarningLines) for h in warnings.handlers):
        warnings.addHandler(WarningLines(logging.WARNING))


def main() -> None:
    utf8_streams()
    show_progress_lines()
    show_warning_lines()
    interrupts.install()  # SIGTERM and SIGHUP stop a command as Ctrl-C does
    try:
        app()
    except KeyboardInterrupt:  # before typer's own handling: while it builds the commands
        raise SystemExit(interrupts.unsaid_exit()) from None
    except OSError as exc:  # what typer and rich let through: no room, or a closed pipe on Windows
        if closed_pipe(exc):
            raise SystemExit(output_gone()) from None
        if exc.errno not in NO_ROOM:
            raise
        raise SystemExit(output_failed(exc)) from None
    except SystemExit as done:
        # typer ends a KeyboardInterrupt it caught itself (outside a command's own handling) with
        # 130, whatever the signal, and without a word; the shell's convention is 128 + the signal
        if interrupts.unsaid(done.code):
            raise SystemExit(interrupts.unsaid_exit()) from None
        if isinstance(done.__context__, BrokenPipeError):  # click's exit 1 for a closed pipe, --help's too
            raise SystemExit(output_gone()) from None
        try:  # what is still buffered: written at exit, a closed pipe was "Exception ignored" and exit 120
            if sys.stdout is not None:  # None: started with stdout closed (`>&-`)
                sys.stdout.flush()
        except OSError as exc:
            if closed_pipe(exc):
                raise SystemExit(output_gone()) from None
            if exc.errno not in NO_ROOM:
                raise
            raise SystemExit(output_failed(exc)) from None
        raise


__all__ = ["app", "main"]
