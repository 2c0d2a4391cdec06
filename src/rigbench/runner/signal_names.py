"""A signal's name for an error text, for the launchers in the parent and the rank agent alike
(a module of its own: the agent process must not import the launchers to name a signal)."""

from __future__ import annotations

import signal


def signal_name(number: int) -> str:
    """SIGSEGV for 11, and so on; "signal N" for a number Python does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
