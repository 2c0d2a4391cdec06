"""What the commands' consoles write on a terminal: text the user gave or stored is shown as it
is, never read as rich markup."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from rigbench.cli import app
from rigbench.cli.console import err
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store


def one_result_db(tmp_path: Path) -> str:
    path = str(tmp_path / "r.db")
    store = Store(path)
    store.add_run("run1", "2026-01-01T00:00:00+00:00", "rigbench run", {"hostname": "box"})
    store.add_result(Result(run_id="run1", created_at="2026-01-01T00:00:00+00:00", status="ok",
                            spec=TrialSpec(workload="mlp", device="cpu", batch_size=16),
                            metrics=Metrics(samples_per_s=100.0)))
    return path


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
