"""Command line: flags -> specs -> rigbench.api. No measurement logic lives here.

`common.py` holds the typer app and what commands share; each other module registers one
group of commands on it when imported below.
"""

from rigbench.cli import core  # noqa: F401  (registers run, train, workloads, devices, results, report)
from rigbench.cli.common import app


def main() -> None:
    app()


__all__ = ["app", "main"]
