"""A signal's name for an error text, and the stop signals this OS has, for the launchers in the
parent, the trial's child, the warm-start server and the rank agent alike (a module of its own:
those processes must not import the launchers to name a signal)."""

from __future__ import annotations

import signal


def signal_name(number: int) -> str:
    """SIGSEGV for 11, and so on; "signal N" for a number Python does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


#: The signals that stop a command from outside, which this OS has (Windows: no SIGHUP):
#: a service manager's SIGTERM and a closed terminal's SIGHUP; STOPS with Ctrl-C's SIGINT.
TERMINATIONS: tuple[int, ...] = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
STOPS: tuple[int, ...] = (signal.SIGINT, *TERMINATIONS)
