"""Bad input and environment faults end in one line on stderr naming what to change, exit
code 2, no traceback, and nothing stored is lost (issue 11). In process, with typer's
CliRunner: no trial runs here."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rigbench.cli import app
from rigbench.experiments import devices as experiment_devices
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store


@pytest.fixture(autouse=True)
def _cpu_only(monkeypatch):
    """Device listing normally asks torch in a child process; here the CPU is the machine."""
    monkeypatch.setattr(experiment_devices, "framework_devices", lambda framework: ["cpu"])


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def assert_one_line_error(result, *fragments: str) -> str:
    """Exit code 2 and exactly one line on stderr, holding each fragment."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("rigbench: error: ")
    assert "Traceback" not in result.output + result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def stored_db(tmp_path: Path, **spec_fields) -> str:
    """A database with one stored speed result."""
    path = str(tmp_path / "results.db")
    store = Store(path)
    store.add_run("run1", "2026-01-01T00:00:00+00:00", "test", {"hostname": "h"})
    spec = TrialSpec(workload="mlp", device="cpu", batch_size=16, **spec_fields)
    store.add_result(Result(run_id="run1", created_at="2026-01-01T00:00:00+00:00", spec=spec,
                            status="ok", metrics=Metrics(samples_per_s=100.0)))
    return path


def test_a_file_that_is_not_sqlite(tmp_path):
    junk = tmp_path / "notes.db"
    junk.write_text("these are my notes, not a database\n" * 20)
    line = assert_one_line_error(invoke("results", "list", "--db", str(junk)), "file is not a database", "--db")
    assert str(junk) in line
    assert junk.read_text().startswith("these are my notes")  # untouched


def test_read_only_database_on_run_keeps_what_is_stored(tmp_path):
    # Read-only through SQLite's own URI (mode=ro): as root, chmod would not stop writes.
    path = stored_db(tmp_path)
    read_only = f"sqlite:///file:{path}?mode=ro&uri=true"
    result = invoke("run", "mlp", "--device", "cpu", "--quick", "--db", read_only)
    assert_one_line_error(result, "cannot write to the database", "attempt to write a readonly database")
    assert [r.status for r in Store(path).list()] == ["ok"]
    assert [r.status for r in Store(read_only).list()] == ["ok"]  # reading it still works


@pytest.mark.parametrize(("content", "fragments"), [
    (b"batch_sizes = [16]\n# caf\xe9\n", ("is not UTF-8 text", "byte 0xe9", "save it as UTF-8")),
    (b"batch_sizes = [16\n", ("is not valid TOML",)),
    (b"batch_sizes = [true]\n", ("'batch_sizes'[0]", "valid integer", "True")),
    (b"lrs = [false]\n", ("'lrs'[0]", "valid number")),
    (b"steps = true\n", ("'steps'", "valid integer")),
    (b'quick = "yes"\n', ("'quick'", "valid boolean")),
    (b'workloads = ["mlpp"]\n', ("sweep.toml: ", "mlpp")),
    (b'framework = ["nope"]\n', ("sweep.toml: ", "unknown framework 'nope'")),
])
def test_bad_sweep_files(tmp_path, content, fragments):
    config = tmp_path / "sweep.toml"
    config.write_bytes(content)
    assert_one_line_error(invoke("sweep", "--config", str(config), "--dry-run",
                                 "--db", str(tmp_path / "x.db")), *fragments)


def test_output_into_a_missing_folder(tmp_path):
    db = stored_db(tmp_path)
    missing = tmp_path / "no_such_dir"
    assert_one_line_error(invoke("results", "export", "--format", "csv", "-o", str(missing / "x.csv"), "--db", db),
                          f"cannot write --output {missing / 'x.csv'}", "No such file or directory")
    assert_one_line_error(invoke("report", "-o", str(missing / "r.html"), "--db", db),
                          f"cannot write --out {missing / 'r.html'}", "No such file or directory")
    assert not missing.exists()


@pytest.mark.parametrize("args", [
    ("run", "mlp", "-b", "16,,32"),
    ("run", "mlp", "-b", ",16"),
    ("run", "mlp", "-b", "16", "-b", ""),
    ("sweep", "mlp", "--dry-run", "-b", "16,,32"),
])
def test_an_empty_list_item_names_the_flag(tmp_path, args):
    assert_one_line_error(invoke(*args, "--db", str(tmp_path / "x.db")), "--batch-size has an empty item")
    assert not (tmp_path / "x.db").exists()


@pytest.mark.parametrize("args", [
    ("results", "list"), ("results", "show", "1"), ("results", "export"),
    ("report", "-o", "r.html"), ("compare", "a", "b"), ("score",), ("roofline",),
])
def test_a_read_never_creates_the_database(tmp_path, args, monkeypatch):
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "no" / "such" / "dir" / "x.db"
    for db in (f"sqlite:///{missing}", str(missing)):
        assert_one_line_error(invoke(*args, "--db", db), "does not exist", "--db")
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("args", [("results", "list"), ("report", "-o", "r.html"), ("roofline",)])
def test_a_read_leaves_an_empty_file_as_it_was(tmp_path, args, monkeypatch):
    # SQLite takes a 0-byte file for an empty database: a read wrote the schema into it
    monkeypatch.chdir(tmp_path)
    empty = tmp_path / "x.db"
    empty.touch()
    assert_one_line_error(invoke(*args, "--db", str(empty)), "empty file", "--db")
    assert empty.stat().st_size == 0


def test_comparing_two_bundle_files_needs_no_database(tmp_path):
    bundle = tmp_path / "bundle.json"
    exported = invoke("results", "export", "--format", "bundle", "-o", str(bundle), "--db", stored_db(tmp_path))
    assert exported.exit_code == 0, exported.output
    other = tmp_path / "other.json"  # a second machine's export, here the same results
    other.write_bytes(bundle.read_bytes())
    missing = tmp_path / "missing" / "x.db"
    compared = invoke("compare", str(bundle), str(other), "--db", str(missing))
    assert compared.exit_code == 0, (compared.output, compared.stderr)
    assert "mlp" in compared.stdout
    assert not missing.parent.exists()


def test_results_list_tells_apart_what_only_the_setup_changes(tmp_path):
    db = stored_db(tmp_path)
    store = Store(db)
    for fields in ({"threads": 2}, {"compile": True}, {"channels_last": True}):
        spec = TrialSpec(workload="mlp", device="cpu", batch_size=16, **fields)
        store.add_result(Result(run_id="run1", created_at="2026-01-01T00:00:01+00:00", spec=spec,
                                status="ok", metrics=Metrics(samples_per_s=100.0)))
    listed = invoke("results", "list", "--db", db)
    assert listed.exit_code == 0, listed.output
    rows = [line for line in listed.stdout.splitlines() if " mlp " in line]
    assert len(rows) == 4 and len(set(rows)) == 4
    for text in ("t2", "compile", "NHWC"):
        assert sum(text in row for row in rows) == 1
    # --limit keeps the newest and says that older rows exist
    newest = invoke("results", "list", "--limit", "3", "--db", db)
    assert newest.exit_code == 0 and [line.split()[0] for line in newest.stdout.splitlines() if " mlp " in line] == [
        "2", "3", "4"]
    assert "The newest 3 of 4 results shown; all of them: --limit 4." in newest.stdout
    assert "The newest" not in listed.stdout


@pytest.mark.parametrize("args, fragments", [
    (["--limit", "0"], ["--limit must be at least 1"]),
    (["--limit", "-1"], ["--limit must be at least 1"]),
    (["--status", "bogus"], ["'bogus' is not a status", "interrupted"]),
])
def test_results_list_refuses_a_limit_or_status_that_means_nothing(tmp_path, args, fragments):
    assert_one_line_error(invoke("results", "list", "--db", stored_db(tmp_path), *args), *fragments)


@pytest.mark.parametrize("args, fragments", [
    (["--framework", "nope"], ["nope"]),
    (["-d", "gpu9"], ["'gpu9' is not available to torch here"]),
])
def test_recommend_no_run_checks_names_as_a_run_would(tmp_path, args, fragments):
    """--no-run only reads, but a misspelt framework or device must not plan for nothing."""
    result = invoke("recommend", "mlp", "--no-run", "--db", stored_db(tmp_path), *args)
    assert_one_line_error(result, *fragments)


@pytest.mark.parametrize("args, fragments", [
    (["--processes", "1,2", "--precision", "bf16", "--threads", "1"], ["drop --threads, --precision"]),
    (["--processes", "1,2", "--rounds", "3"], ["drop --rounds"]),
    (["--strong"], ["--strong is for the process study"]),
])
def test_scaling_refuses_options_its_study_would_ignore(tmp_path, args, fragments):
    result = invoke("scaling", "mlp", "--quick", "--db", str(tmp_path / "r.db"), *args)
    assert_one_line_error(result, *fragments)
    assert not (tmp_path / "r.db").exists()  # refused before anything ran or was stored


@pytest.mark.parametrize("command", [["run", "mlp", "-d", "cpu"], ["sweep", "mlp", "-d", "cpu", "-b", "8"]])
def test_a_timing_window_longer_than_the_timeout_is_refused(tmp_path, command):
    """Every trial would end `timeout`, and a sweep's --resume would then count them as done."""
    result = invoke(*command, "--seconds", "30", "--timeout", "5", "--db", str(tmp_path / "r.db"))
    assert_one_line_error(result, "--seconds 30", "--timeout 5")
    assert not (tmp_path / "r.db").exists()


@pytest.mark.parametrize("args, fragments", [
    (["dcgan", "--dataset", "digits"], ["dcgan", "choose another workload"]),
    (["mlp", "--dataset", "digits", "--steps", "5"], ["--steps must be at least 6"]),
    (["mlp", "--dataset", "digits", "--start-lr", "1e-200", "--end-lr", "1e200"], ["beyond a float"]),
])
def test_lr_find_refuses_what_could_never_give_a_suggestion(tmp_path, args, fragments):
    result = invoke("lr-find", *args, "--db", str(tmp_path / "r.db"))
    assert_one_line_error(result, *fragments)
    assert not (tmp_path / "r.db").exists()  # before any child process ran


@pytest.mark.parametrize("args, given", [(["--workers", "2"], "--workers"), (["--pin-memory"], "--pin-memory")])
def test_loader_options_without_the_loader_are_refused(tmp_path, args, given):
    result = invoke("train", "mlp", "--dataset", "digits", *args, "--db", str(tmp_path / "r.db"))
    assert_one_line_error(result, given, "--input loader")


@pytest.mark.parametrize("args, fragment", [(["--timeout", "0"], "--timeout must be more than 0 seconds"),
                                            (["--threads", "0"], "--threads must be at least 1")])
def test_train_names_the_flag_as_run_does(tmp_path, args, fragment):
    assert_one_line_error(invoke("train", "mlp", "--dataset", "digits", *args, "--db", str(tmp_path / "r.db")), fragment)


@pytest.mark.parametrize("args", [
    ("run", "mlp", "--quick", "--threads", "100000"), ("sweep", "mlp", "--dry-run", "--threads", "1,100000"),
    ("scaling", "mlp", "--threads", "1,5000"), ("train", "mlp", "--dataset", "mnist", "--threads", "5000"),
    ("lr-find", "mlp", "--dataset", "mnist", "--threads", "5000"), ("calibrate", "--quick", "--threads", "5000"),
])
def test_more_threads_than_any_machine_has_is_refused_before_any_trial(tmp_path, args):
    # torch's thread pool segfaulted at 100,000 (stored as a crash); train/lr-find refuse before
    # fetching mnist (no network here: the fetch would fail first)
    result = invoke(*args, "--db", str(tmp_path / "r.db"))
    assert_one_line_error(result, "--threads", "at most 4096")
    assert not (tmp_path / "r.db").exists()


def test_a_stored_thread_count_over_the_input_bound_still_reads(tmp_path):
    spec = TrialSpec(workload="mlp", batch_size=8, threads=100000)  # the bound is on input, not on stored specs
    assert TrialSpec.model_validate_json(spec.model_dump_json()).threads == 100000


def test_max_batch_refuses_an_unknown_framework_before_it_starts_a_run(tmp_path):
    db = str(tmp_path / "r.db")
    assert_one_line_error(invoke("max-batch", "mlp", "--framework", "nope", "--db", db), "unknown framework 'nope'")
    assert not Path(db).exists()  # not even an empty database


def test_an_empty_db_is_refused_not_the_default_database():
    """`--db "$UNSET"` must not write to (or read) the default database without a word."""
    assert_one_line_error(invoke("results", "list", "--db", ""), "--db is empty")


@pytest.mark.parametrize("args", [
    ("run", "mlp", "--compile", "on", "--quick"),
    ("run", "--compile", "reduce-overhead", "mlp"),
    ("run", "mlp,off", "--compile"),
])
def test_a_value_after_compile_on_run_is_named_as_such(tmp_path, args):
    """`run mlp --compile on` (sweep's spelling) said "unknown workload 'on'"."""
    result = invoke(*args, "--db", str(tmp_path / "c.db"))
    assert_one_line_error(result, "--compile takes no value here", "was read as a workload", "--compile-mode MODE")
    assert not (tmp_path / "c.db").exists()


@pytest.mark.parametrize("args", [["run", "mlp", "-d", "cpu", "--quick"], ["results", "list"], ["report"]])
@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
def test_an_in_memory_database_is_refused_before_anything_runs(args, url):
    # `run --db sqlite://` said "Stored in sqlite://" and suggested a `results show` that found nothing
    assert_one_line_error(invoke(*args, "--db", url), f"--db {url} is an in-memory database, gone when the command ends")
