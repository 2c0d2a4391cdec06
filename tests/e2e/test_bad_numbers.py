"""Every bad number is refused up front (issue 23, items 5-7): exit 2, one line naming the flag,
field or key and what it must be, nothing stored. The rules are rigbench.numlimits', the same
for flags, sweep files and the API; rows stored before them are still read. In process, with
typer's CliRunner: no trial runs here."""

import json
import logging
import sqlite3
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from rigbench.cli import app
from rigbench.experiments import devices as experiment_devices
from rigbench.numlimits import MAX_INT
from rigbench.spec import LrFindOptions, MeasureOptions, Metrics, Result, TrialSpec
from rigbench.store import Store
from rigbench.sweep_spec import SweepSpec

HUGE = "99999999999999999999"  # past the database's 64-bit integers


@pytest.fixture(autouse=True)
def _cpu_only(monkeypatch):
    """Device listing normally asks torch in a child process; here the CPU is the machine."""
    monkeypatch.setattr(experiment_devices, "framework_devices", lambda framework: ["cpu"])


def refused(tmp_path: Path, *args: str, db: str | None = None) -> str:
    """Run `rigbench ARGS --db DB`: exit 2, one line on stderr, no traceback. Without `db`, a
    new file that must not be made (nothing was stored). Returns the line."""
    path = tmp_path / "x.db"
    result = CliRunner().invoke(app, [*args, "--db", db or str(path)])
    assert result.exit_code == 2, (result.exit_code, result.output, result.stderr, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rigbench: error: "), result.stderr
    assert "Traceback" not in result.output + result.stderr
    assert not path.exists()
    return lines[0]


@pytest.mark.parametrize(("args", "fragment"), [
    # item 5: an infinite lr trained with the default one; NaN was a pydantic traceback
    (("run", "mlp", "-d", "cpu", "--quick", "--lr", "inf"), "--lr must be a finite number, got inf"),
    (("run", "mlp", "-d", "cpu", "--quick", "--lr", "nan"), "--lr must be a finite number, got nan"),
    (("train", "mlp", "--dataset", "digits", "--lr", "0.1,inf"), "--lr must be a finite number, got inf"),
    (("sweep", "mlp", "--dry-run", "--lr", "nan"), "--lr must be a finite number, got nan"),
    # item 6: stored rows no command could read, or the launcher's clock overflowed
    (("lr-find", "mlp", "--dataset", "digits", "--end-lr", "inf"), "--end-lr must be a finite number, got inf"),
    (("run", "mlp", "-d", "cpu", "--quick", "--timeout", "inf"), "--timeout must be a finite number, got inf"),
    (("run", "mlp", "-d", "cpu", "--quick", "--timeout", "1e300"), "--timeout must be at most 31536000 seconds"),
    (("sweep", "mlp", "--dry-run", "--seconds=-inf"), "--seconds must be a finite number, got -inf"),
    (("train", "mlp", "--timeout", "nan"), "--timeout must be a finite number, got nan"),
    # item 7: SQLite's OverflowError on storing or looking up past its integers
    (("run", "mlp", "-d", "cpu", "--quick", "-b", HUGE), f"--batch-size must be at most {MAX_INT}"),
    (("run", "mlp", "-d", "cpu", "--quick", "--threads", HUGE), f"--threads must be at most {MAX_INT}"),
    (("sweep", "mlp", "--dry-run", "-b", f"16,{HUGE}"), f"--batch-size must be at most {MAX_INT}"),
    (("lr-find", "mlp", "--dataset", "digits", "-b", HUGE), f"--batch-size must be at most {MAX_INT}"),
    (("run", "mlp", "-d", "cpu", "--quick", "--memory-limit", f"{HUGE}GiB"), "--memory-limit must be at most"),
    (("results", "show", HUGE), f"TRIAL_ID must be at most {MAX_INT}"),
    (("results", "list", "--limit", HUGE), f"--limit must be at most {MAX_INT}"),
])
def test_a_bad_number_is_one_line_naming_the_flag(tmp_path, args, fragment):
    assert fragment in refused(tmp_path, *args)


@pytest.mark.parametrize(("body", "fragment"), [
    (b"lrs = [0.1, inf]\n", "'lrs'[1]: Input should be a finite number"),
    (b"timeout = nan\n", "'timeout': Input should be a finite number"),
    (b"seconds = 1e12\n", "'seconds': Input should be less than or equal to 31536000"),
    (f"batch_sizes = [{MAX_INT + 1}]\n".encode(), f"'batch_sizes'[0]: Input should be less than or equal to {MAX_INT}"),
])
def test_a_bad_number_in_a_sweep_file_names_its_key(tmp_path, body, fragment):
    config = tmp_path / "sweep.toml"
    config.write_bytes(b'workloads = ["mlp"]\n' + body)
    assert fragment in refused(tmp_path, "sweep", "--config", str(config), "--dry-run")


@pytest.mark.parametrize("make", [
    lambda: TrialSpec(workload="mlp", batch_size=8, lr=float("inf")),
    lambda: TrialSpec(workload="mlp", batch_size=8, lr=float("nan")),
    lambda: TrialSpec(workload="mlp", batch_size=MAX_INT + 1),
    lambda: TrialSpec(workload="mlp", batch_size=8, threads=MAX_INT + 1),
    lambda: TrialSpec(workload="mlp", batch_size=8, workload_options={"width": float("inf")}),
    lambda: MeasureOptions(timeout_s=float("inf")),
    lambda: MeasureOptions(min_seconds=1e10),
    lambda: LrFindOptions(dataset="digits", end_lr=float("inf")),
    lambda: SweepSpec(lrs=[float("nan")]),
])
def test_the_api_refuses_the_same_numbers(make):
    with pytest.raises(ValidationError):
        make()


def test_a_validation_error_past_a_commands_checks_is_one_line(tmp_path, monkeypatch):
    # A TrialSpec a command builds from values it did not check itself never shows pydantic's
    # traceback: here the planner is made to build one with a NaN learning rate.
    from rigbench.cli import core

    def plan_run(**kwargs):
        return [TrialSpec(workload="mlp", batch_size=8, lr=float("nan"))]

    monkeypatch.setattr(core.api, "plan_run", plan_run)
    line = refused(tmp_path, "run", "mlp", "-d", "cpu", "--quick")
    assert line == "rigbench: error: invalid setting: lr: Input should be a finite number"


# --- rows stored before the rules: read, or skipped and named, never a crash -----------------

def _mlp_trials(path: Path, batches: tuple[int, ...], **metrics: float) -> Store:
    """A database at `path` with one run of ok mlp trials, one per batch at 100 samples/s a sample."""
    store = Store(str(path))
    store.add_run("r1", "2026-01-01T00:00:00+00:00", "rigbench run", {"hostname": "h"})
    for batch in batches:
        store.add_result(Result(run_id="r1", created_at="2026-01-01T00:00:00+00:00", status="ok",
                                spec=TrialSpec(workload="mlp", batch_size=batch),
                                metrics=Metrics(samples_per_s=100.0 * batch, **metrics)))
    return store


def _stored_with_bad_numbers(tmp_path: Path) -> str:
    """Five rows, edited with plain SQL as an older rigbench or another tool left them: 1 fine;
    2 a timeout stored as JSON Infinity; 3 as null (what pydantic wrote for `--timeout inf`);
    4 an end_lr stored as the text "inf"; 5 an infinite throughput."""
    path = tmp_path / "old.db"
    store = _mlp_trials(path, (8, 16, 32, 64))
    spec = TrialSpec(workload="mlp", kind="lr_find", batch_size=64, lr_find=LrFindOptions(dataset="digits"))
    store.add_result(Result(run_id="r1", created_at="2026-01-01T00:00:01+00:00", status="ok", spec=spec))
    con = sqlite3.connect(path)
    for trial, old, new in ((2, '"timeout_s":600.0', '"timeout_s":Infinity'),
                            (3, '"timeout_s":600.0', '"timeout_s":null'),
                            (5, '"end_lr":10.0', '"end_lr":"inf"'),
                            (4, '"samples_per_s":6400.0', '"samples_per_s":Infinity')):
        changed = con.execute("update trials set result_json = replace(result_json, ?, ?) where id = ?",
                              (old, new, trial))
        assert changed.rowcount == 1
        assert new in con.execute("select result_json from trials where id = ?", (trial,)).fetchone()[0]
    con.commit()
    con.close()
    return str(path)


def test_stored_rows_with_bad_numbers_never_break_a_command(tmp_path, caplog):
    db = _stored_with_bad_numbers(tmp_path)
    runner = CliRunner()
    with caplog.at_level(logging.WARNING, logger="rigbench.store"):
        listed = runner.invoke(app, ["results", "list", "--db", db])
        exported = runner.invoke(app, ["results", "export", "--db", db])
        csv = runner.invoke(app, ["results", "export", "--format", "csv", "--db", db])
        bundle = runner.invoke(app, ["results", "export", "--format", "bundle", "--db", db])
        report = runner.invoke(app, ["report", "-o", str(tmp_path / "r.html"), "--db", db])
    for done in (listed, exported, csv, bundle, report):
        assert done.exit_code == 0, (done.output, done.exception)
    assert [row["batch_size"] for row in json.loads(exported.stdout)] == [8]
    assert len(csv.stdout.strip().splitlines()) == 2  # the header and row 1
    assert [r["id"] for r in json.loads(bundle.stdout)["results"]] == [1]
    skipped = [r.getMessage() for r in caplog.records if "skipped 4 stored result(s)" in r.getMessage()]
    assert len(skipped) == 5 and "trial 2 (spec.measure.timeout_s: Input should be a finite number)" in skipped[0]
    assert runner.invoke(app, ["results", "show", "1", "--db", db]).exit_code == 0
    for trial, field in ((2, "spec.measure.timeout_s"), (3, "spec.measure.timeout_s"),
                         (4, "metrics.samples_per_s"), (5, "spec.lr_find.end_lr")):
        line = refused(tmp_path, "results", "show", str(trial), db=db)
        assert f"trial {trial} cannot be read ({field}: " in line


def test_a_stored_ok_row_without_a_positive_throughput_is_skipped_not_a_crash(tmp_path, caplog):
    # An ok trial's samples/s of 0 or below (rigbench stores such a trial as a crash: result_rules)
    # reached the geometric mean of its repeats and broke report, roofline, compare --frameworks
    # and recommend --no-run over the whole database with "geometric mean needs positive values".
    path = tmp_path / "old.db"
    store = _mlp_trials(path, (8, 16, 32, 64), steps_measured=5)
    con = sqlite3.connect(path)
    for trial, old, new in ((2, '"samples_per_s":1600.0', '"samples_per_s":-5.0'),
                            (3, '"samples_per_s":3200.0', '"samples_per_s":0.0')):
        assert con.execute("update trials set result_json = replace(result_json, ?, ?) where id = ?",
                           (old, new, trial)).rowcount == 1
    con.commit()
    con.close()
    db, runner = str(path), CliRunner()
    with caplog.at_level(logging.WARNING, logger="rigbench.store"):
        for args in (["report", "-o", str(tmp_path / "r.html")], ["roofline"], ["compare", "--frameworks"],
                     ["recommend", "mlp", "--no-run", "--run", "r1"]):
            done = runner.invoke(app, [*args, "--db", db])
            assert done.exit_code == 0, (args, done.output, done.exception)
    skipped = [r.getMessage() for r in caplog.records if "skipped 2 stored result(s)" in r.getMessage()]
    assert skipped and "trial 2 (metrics.samples_per_s: " in skipped[0]
    assert [r.id for r in store.list()] == [1, 4]
    assert "trial 3 cannot be read (metrics.samples_per_s: " in refused(tmp_path, "results", "show", "3", db=db)


def test_a_table_dropped_by_hand_is_one_line_not_a_traceback(tmp_path):
    # Opening a database at the current revision runs one query, so a table dropped by another
    # program is met only when a command reads it: it was SQLAlchemy's OperationalError traceback.
    path = tmp_path / "damaged.db"
    _mlp_trials(path, (8,), steps_measured=5)
    con = sqlite3.connect(path)
    con.execute("drop table trial_samples")
    con.commit()
    con.close()
    for args in (["results", "show", "1"], ["results", "export", "--format", "bundle"]):
        line = refused(tmp_path, *args, db=str(path))
        assert "the database failed: no such table: trial_samples" in line, line
    assert [r.id for r in Store(str(path)).list()] == [1]  # what a command can still read, it reads
