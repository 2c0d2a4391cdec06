"""Command line: flags -> specs -> rigbench.api. No measurement logic lives here.

`common.py` holds the typer app and what commands share; each other module registers one
group of commands on it when imported below.
"""

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
from rigbench.cli.common import app, results_app, utf8_streams
from rigbench.cli.examples import add_examples

add_examples(app, results_app)  # after every module above has registered its commands


def main() -> None:
    utf8_streams()
    interrupts.install()  # SIGTERM and SIGHUP stop a command as Ctrl-C does
    try:
        app()
    except KeyboardInterrupt:  # before typer's own handling: while it builds the commands
        raise SystemExit(interrupts.unsaid_exit()) from None
    except SystemExit as done:
        # typer ends a KeyboardInterrupt it caught itself (outside a command's own handling) with
        # 130, whatever the signal, and without a word; the shell's convention is 128 + the signal
        if interrupts.unsaid(done.code):
            raise SystemExit(interrupts.unsaid_exit()) from None
        raise


__all__ = ["app", "main"]
