"""`rigbench --help`: every command listed once, in a user's order, each with a whole summary."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from rigbench import cli
from rigbench.cli.common import COMMAND_ORDER


def _listed(args: list[str]) -> list[tuple[str, str]]:
    """(name, summary) per line of the help's command list, at an 80-column terminal."""
    done = CliRunner().invoke(cli.app, args, terminal_width=80)
    assert done.exit_code == 0, done.output
    listing = done.output.split("Commands:\n", 1)[1].split("\n\n", 1)[0]  # the epilog follows a blank line
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^  (\S+)\s+(.*)$", listing, re.MULTILINE)]


def test_commands_are_listed_in_order_each_with_a_whole_summary():
    top = _listed(["--help"])
    results = _listed(["results", "--help"])
    for rows in (top, results):
        names = [name for name, _ in rows]
        assert names == sorted(names, key=COMMAND_ORDER.index), names  # a new command must be placed
        assert all(summary.endswith(".") and not summary.endswith("...") for _, summary in rows), rows
    assert "Start with `rigbench run --quick`" in CliRunner().invoke(cli.app, ["--help"], terminal_width=80).output
    assert top[0][0] == "run"
    assert sorted(name for name, _ in top + results) == sorted(COMMAND_ORDER)  # each once, none left over
