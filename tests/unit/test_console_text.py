"""What the commands' consoles write on a terminal: text the user gave or stored is shown as it
is, never read as rich markup; a terminal whose encoding lacks a character shows an ASCII stand-in
for it (µs as us), while a file or a pipe gets UTF-8."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rigbench.cli import app
from rigbench.cli.console import err
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store

ROOT = Path(__file__).parents[2]


def one_result_db(tmp_path: Path) -> str:
    path = str(tmp_path / "r.db")
    store = Store(path)
    store.add_run("run1", "2026-01-01T00:00:00+00:00", "rigbench run", {"hostname": "box"})
    store.add_result(Result(run_id="run1", created_at="2026-01-01T00:00:00+00:00", status="ok",
                            spec=TrialSpec(workload="mlp", device="cpu", batch_size=16),
                            metrics=Metrics(samples_per_s=100.0, samples_per_s_ci=(90.0, 110.0),
                                            allreduce_latency_us=12.5)))
    return path


def on_a_terminal(*args: str, **env: str) -> str:
    """What `rigbench ARGS` writes on a real terminal (a pseudo-terminal) with `env` added."""
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "rigbench", *args], stdin=slave, stdout=slave, stderr=slave,
                            cwd=ROOT, env={**os.environ, "TERM": "dumb", "COLUMNS": "200", **env})
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the command has ended and closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(master)
    assert proc.returncode == 0, chunks
    return b"".join(chunks).decode("ascii").replace("\r\n", "\n")


@pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal is POSIX's")
def test_a_terminal_without_utf8_gets_ascii_stand_ins(tmp_path):
    """PYTHONIOENCODING=ascii (or a Latin-1 or a legacy Windows console) on a terminal: every
    stream was made UTF-8, which such a terminal shows as "â”€" for each "─". The terminal keeps
    its encoding: the table's rule, the interval's dash and micro's µ become ASCII, one
    character for one where a column depends on it; elsewhere µs stays µs."""
    db = one_result_db(tmp_path)
    listed = on_a_terminal("results", "list", "--db", db, PYTHONIOENCODING="ascii")
    assert "\n---" in listed and "100 [90-110]" in listed and "\\u" not in listed
    shown = on_a_terminal("results", "show", "1", "--db", db, PYTHONIOENCODING="ascii")
    assert "100 [90-110] samples/s" in shown and "allreduce_latency_us  12.5 us\n" in shown
    # into a file or a pipe UTF-8, whatever PYTHONIOENCODING says (test_platforms: cp1252)
    assert "allreduce_latency_us  12.5 µs\n" in CliRunner().invoke(app, ["results", "show", "1", "--db", db]).stdout


@pytest.mark.slow  # a report in a child process: about 6 s here
@pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal is POSIX's")
def test_the_spinner_of_a_terminal_without_braille_is_a_turning_line(tmp_path):
    r"""The spinner (an interactive terminal: TERM other than dumb) drew its braille dots on a
    terminal without them as "\u280b", "\u2819", ..."""
    db = one_result_db(tmp_path)
    drawn = on_a_terminal("report", "--db", db, "--out", str(tmp_path / "r.html"), PYTHONIOENCODING="ascii",
                          TERM="xterm")
    assert "writing" in drawn and "\\u" not in drawn


def test_the_spinner_shows_a_file_name_with_brackets_as_it_is(tmp_path, monkeypatch):
    """`rigbench report --out '[/]r.html'` on a terminal ended in a MarkupError traceback ("closing
    tag '[/]' has nothing to close"), and `--out '[bold]r.html'` drew the spinner's line bold,
    without its "[bold]": rich reads a str given to Console.status as markup."""
    monkeypatch.setattr(err, "_force_terminal", True)
    monkeypatch.setattr(err, "is_interactive", True)
    db = one_result_db(tmp_path)
    (tmp_path / "[").mkdir()
    for name in ("[/]r.html", "[bold]r.html"):  # the first: r.html in a folder named "["
        out = tmp_path / name
        done = CliRunner().invoke(app, ["report", "--db", db, "--out", str(out)], env={"COLUMNS": "500"})
        assert done.exit_code == 0, done.output
        assert f"writing {out}: reading the results" in done.stderr
        assert out.exists()


def test_a_terminal_too_narrow_for_the_essential_columns_is_told_that_text_was_cut(tmp_path):
    """Where even the columns never left out do not fit (`rigbench score` at 40 columns: "4,074…"
    for 4,074.2, "speed-…" for its header), rich cuts every column; the footnote said nothing
    of it, as it says of a cut note, and where the whole text is."""
    db = one_result_db(tmp_path)
    done = CliRunner().invoke(app, ["results", "list", "--db", db], env={"COLUMNS": "24"})
    assert done.exit_code == 0, done.output
    assert "…" in done.stdout
    assert "text ending in … was cut to fit (`rigbench results export` has it whole)" in " ".join(done.stdout.split())
    wide = CliRunner().invoke(app, ["results", "list", "--db", db], env={"COLUMNS": "200"})
    assert "…" not in wide.stdout and "was cut" not in wide.stdout


def test_an_error_line_writes_the_control_characters_it_quotes_out(tmp_path):
    """`rigbench: error: ...` quotes what was given or stored (here a --db path, as a glob or
    $RIGBENCH_DB may give it): an ESC in it turned the terminal's text red (or cleared it), where
    every other line the commands print writes it out (textlimits.visible)."""
    db = str(tmp_path / "\x1b[31mred.db")
    done = CliRunner().invoke(app, ["results", "list", "--db", db])
    assert done.exit_code == 2
    assert "\x1b" not in done.stderr and "\\x1b[31mred.db does not exist" in done.stderr


def test_a_warning_writes_the_stored_text_it_quotes_out(tmp_path):
    """A warning of the layers below (here: a run whose machine fingerprint cannot be read) went
    to Python's last-resort handler, which printed a stored run id's ESC as it was; the command
    now prints it through its stderr console, once."""
    import sqlite3

    db = str(tmp_path / "w.db")
    Store(db).add_run("r\x1b[31mred", "2026-01-01T00:00:00+00:00", "rigbench run", {"hostname": "box"})
    with sqlite3.connect(db) as conn:
        conn.execute("update runs set machine_json = '{oops'")
    done = subprocess.run([sys.executable, "-m", "rigbench", "results", "runs", "--db", db], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("run r\\x1b[31mred in ") and "its machine fingerprint cannot be read" in line
