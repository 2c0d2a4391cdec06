"""Moved to runner/launchers/ (the "process" launcher: launchers/process.py).

Only `Outcome` is still re-exported here, because runner/assemble.py imports it from this
module; delete this file once it imports `rigbench.runner.launchers.Outcome` instead.
"""

from rigbench.runner.launchers.base import Outcome

__all__ = ["Outcome"]
