"""lr-find's `Try it:` line: a `rigbench train` command that `train` parses back into exactly
the configuration the range test measured (its spec), quoted for a shell, without a password."""

import shlex
from types import SimpleNamespace

import typer

from rigbench.cli import app
from rigbench.cli.advise import _print_lr_find, lr_find_summary
from rigbench.spec import LrFindOptions, Result, TrialSpec
from tests.unit import test_lr_find_rule as rule


def try_it(capsys, spec: TrialSpec, db: str | None) -> list[str]:
    """The printed hint's words, after a range test of `spec` with a clear valley."""
    result = Result(run_id="r", created_at="2026-01-01T00:00:00+00:00", spec=spec, status="ok",
                    lr_curve=[tuple(row) for row in rule.curve_of(rule.valley())])
    summary = lr_find_summary(result)
    assert summary["suggested_lr"] is not None
    _print_lr_find(summary, SimpleNamespace(db_url="sqlite:///x.db", results=[result]), db)  # type: ignore[arg-type]
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("Try it: ")]
    words = shlex.split(line.removeprefix("Try it: "))
    assert words[:2] == ["rigbench", "train"]
    return words[2:]


def train_params(words: list[str]) -> dict:
    """What `rigbench train` reads from these arguments (parsed, not run)."""
    command = typer.main.get_command(app).commands["train"]  # type: ignore[attr-defined]
    return command.make_context("train", list(words)).params


def test_the_hint_keeps_data_dir_framework_device_precision_threads_and_the_db(capsys):
    spec = TrialSpec(workload="catsdogs", framework="jax", device="cuda:0", batch_size=4, precision="bf16",
                     threads=3, lr_find=LrFindOptions(dataset="image_folder", data_dir="/some/my pets", steps=100))
    words = try_it(capsys, spec, "postgresql://bench:s3cret@db.lan/rig")
    assert "s3cret" not in " ".join(words)
    params = train_params(words)
    assert (params["workload"], params["dataset"], params["data_dir"]) == ("catsdogs", "image_folder", "/some/my pets")
    assert (params["framework"], params["device"], params["batch_size"]) == (["jax"], ["cuda:0"], ["4"])
    assert (params["precision"], params["threads"], params["db"]) == ("bf16", 3, "postgresql://bench@db.lan/rig")
    assert len(params["lr"]) == 1 and float(params["lr"][0]) > 0


def test_the_hint_names_the_workload_options_and_the_defaults_it_ran_with(capsys):
    spec = TrialSpec(workload="gpt", workload_options={"preset": "tiny", "vocab": 256}, batch_size=8,
                     lr_find=LrFindOptions(dataset="pysrc", steps=100))
    words = try_it(capsys, spec, None)
    lr = words[-1]
    assert words == ["gpt:preset=tiny,vocab=256", "--dataset", "pysrc", "--framework", "torch", "--device", "cpu",
                     "--batch-size", "8", "--precision", "fp32", "--lr", lr]
    assert train_params(words)["db"] is None
