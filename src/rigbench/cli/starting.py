"""Imported first by the `rigbench` command (cli/__init__.py), before the second its other
imports take: Ctrl-C in that second printed a traceback of 15-30 lines of import machinery.
main() then installs the command's own handling (cli/interrupts.py)."""

import sys
from types import TracebackType


def said_when_starting(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    """sys.excepthook: an interrupt not yet handled is one line (Python then ends the process
    by SIGINT, which a shell reports as 130); anything else goes to the hook before it."""
    if issubclass(kind, KeyboardInterrupt):
        print("interrupted (Ctrl-C) as rigbench started: nothing was done", file=sys.stderr)
        return
    _before(kind, value, tb)


_before, sys.excepthook = sys.excepthook, said_when_starting
