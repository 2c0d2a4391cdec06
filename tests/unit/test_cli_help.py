"""`rigbench --help`: every command listed once, in a user's order, each with a whole summary."""

from __future__ import annotations

import re
from typing import Any

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


def test_every_command_ends_its_help_with_examples_that_parse():
    """A new user reads `--help` first: each command shows lines to copy, and each one's options
    exist and take the values written (click parses it: nothing runs)."""
    import shlex

    import typer

    from rigbench.cli.examples import EXAMPLES

    assert sorted(EXAMPLES) == sorted(("results " + n if n in ("list", "runs", "show", "export", "import", "flush")
                                       else n) for n in COMMAND_ORDER if n != "results")
    root = typer.main.get_command(cli.app)
    for path, lines in EXAMPLES.items():
        shown = CliRunner().invoke(cli.app, [*path.split(), "--help"], terminal_width=80).output
        assert "Examples:\n" in shown, path
        command: Any = root
        for word in path.split():
            command = command.commands[word]
        for line in lines:
            assert f"    {line}\n" in shown and len(line) <= 76, (path, line)  # whole, within 80 columns
            words = shlex.split(line.split("#")[0])
            assert words[:1 + len(path.split())] == ["rigbench", *path.split()], line
            command.make_context(path, words[1 + len(path.split()):])  # raises on an unknown option or bad value


def test_no_help_names_rigbench_source_code():
    """`score --help` pointed at `analysis/score.SUITES`: a file a user who installed the package
    never opens. Help says what a thing is in words (docs/ paths and the sweep example are files a
    user has)."""
    from rigbench.cli.examples import EXAMPLES

    for path in EXAMPLES:
        shown = CliRunner().invoke(cli.app, [*path.split(), "--help"], terminal_width=80).output
        flat = " ".join(shown.split())
        assert not re.search(r"\b(analysis|reports|store|experiments|frameworks|runner)/\w+|\w+\.py\b", flat), (path, flat)
