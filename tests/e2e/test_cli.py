"""The `rigbench` command through a real subprocess, as a user runs it."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from rich.console import Console

from rigbench.frameworks import installed_frameworks
from rigbench.reports import terminal
from rigbench.workloads import WORKLOADS
from tests.conftest import busy_machine, framework_rss_mib, with_ctrl_c

pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(300)

REQUIRED_KEYS = {
    "id", "workload", "framework", "device", "batch_size", "precision", "threads", "status",
    "error", "samples_per_s", "samples_per_s_ci", "step_time_ms_median", "step_time_ms_iqr",
    "steps_measured", "warmup_s", "cpu_util_pct_mean", "cpu_util_pct_p95", "rss_peak_mib",
    "gpu_util_pct_mean", "gpu_mem_peak_mib", "params", "flops_per_sample", "epoch_seconds",
}


def rigbench(*args, check=True, timeout=240):
    proc = subprocess.run([sys.executable, "-m", "rigbench", *args], capture_output=True,
                          text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\nstdout:{proc.stdout}\nstderr:{proc.stderr}")
    return proc


@pytest.fixture()
def db(tmp_path):
    return str(tmp_path / "cli.db")


def test_run_json_then_results_commands(db, tmp_path):
    proc = rigbench("run", "mlp,cnn", "--device", "cpu", "--batch-size", "8,16", "--quick",
                    "--threads", "1", "--db", db, "--json")
    rows = json.loads(proc.stdout)  # stdout holds only the JSON array
    assert [(r["workload"], r["batch_size"]) for r in rows] == [("mlp", 8), ("mlp", 16), ("cnn", 8), ("cnn", 16)]
    for row in rows:
        assert REQUIRED_KEYS <= set(row)
        assert row["status"] == "ok", row["error"]
        low, high = row["samples_per_s_ci"]
        assert low <= row["samples_per_s"] <= high
        assert row["threads"] == 1
        # epoch time = reference data set size / measured speed
        size = 60_000 if row["workload"] == "mlp" else 50_000
        assert row["epoch_seconds"] == pytest.approx(size / row["samples_per_s"])
    assert "trial 1/4" in proc.stderr or "mlp torch cpu b8" in proc.stderr

    listed = rigbench("results", "list", "--db", db).stdout
    assert "mlp" in listed and "cnn" in listed
    shown = rigbench("results", "show", str(rows[0]["id"]), "--db", db).stdout
    assert "samples_per_s" in shown and "step_times_s" in shown
    assert "None logical cores" not in shown and "logical cores" in shown  # machine line filled
    full = json.loads(rigbench("results", "show", str(rows[0]["id"]), "--json", "--db", db).stdout)
    assert len(full["step_times_s"]) == rows[0]["steps_measured"]
    csv_path = tmp_path / "out.csv"
    rigbench("results", "export", "--format", "csv", "-o", str(csv_path), "--db", db)
    lines = csv_path.read_text().splitlines()
    assert len(lines) == 5 and lines[0].startswith("id,")
    exported = json.loads(rigbench("results", "export", "--format", "json", "--db", db).stdout)
    assert [r["id"] for r in exported] == [r["id"] for r in rows]


def test_table_output(db):
    proc = rigbench("run", "autoencoder", "-d", "cpu", "--quick", "--db", db)
    assert "samples/s" in proc.stdout and "autoencoder" in proc.stdout and "ok" in proc.stdout
    # the next steps name the database the run used (issue 23: they omitted --db)
    [row] = [t for t in proc.stdout.splitlines() if "autoencoder" in t and t.rstrip().endswith("ok")]
    assert f"See one trial with: rigbench results show {row.split()[0]} --db {db}" in proc.stdout
    assert f"--db {db} --out report.html" in proc.stdout


def test_a_trial_beside_processes_that_take_every_core_is_flagged_busy(db):
    """The whole chain on real processes: tracker, window summary, the stored figure, the
    table's flag and the line under it (docs/METHODOLOGY.md, "A busy machine")."""
    with busy_machine():
        proc = rigbench("run", "mlp", "-d", "cpu", "-b", "8", "--quick", "--threads", "1", "--db", db)
    [row] = json.loads(rigbench("results", "export", "--db", db).stdout)
    assert row["others_cpu_pct_mean"] >= 10.0, row
    [line] = [t for t in proc.stdout.splitlines() if t.lstrip().startswith(f"{row['id']} ")]  # the trial's row
    assert " busy " in line and line.rstrip().endswith("ok")
    assert f"busy: other processes used {row['others_cpu_pct_mean']:.0f}% of this machine's CPU while trial {row['id']} was timed" in proc.stdout.replace("\n", " ")
    assert "(busy: other processes used" in proc.stderr  # the progress line


@pytest.mark.parametrize("args,message", [
    (["run", "nosuchnet"], "unknown workload 'nosuchnet': choose from mlp"),
    (["run", "mlp", "--device", "cuda:3"], "device 'cuda:3' is not available to torch here: choose from cpu"),
    (["run", "mlp", "--batch-size", "0"], "--batch-size must be at least 1"),
    (["run", "mlp", "--memory-limit", "lots"], "--memory-limit 'lots' is not a size"),
    (["run", "mlp", "--precision", "fp8"], "--precision must be fp32, tf32, bf16 or fp16"),
    (["run", "mlp", "--compile-mode", "fast"], "--compile-mode takes a torch.compile mode (default, reduce-overhead, "
                                               "max-autotune, max-autotune-no-cudagraphs), got 'fast'"),
    (["scaling", "mlp", "--no-compile", "--compile-mode", "default"], "--compile-mode names modes to time and "
                                                                      "--no-compile times none: drop one"),
    (["results", "show", "12345"], "no trial with id 12345"),
])
def test_bad_input_is_one_line_and_exit_2(db, args, message):
    from rigbench.store import Store

    Store(db)  # a read (results show) of a missing database is its own error: make it exist
    proc = rigbench(*args, "--db", db, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_failed_trials_are_stored_and_the_run_goes_on(db):
    proc = rigbench("run", "mlp", "-d", "cpu", "--quick", "--lr", "1e12", "--db", db, "--json")
    assert json.loads(proc.stdout)[0]["status"] == "diverged"
    limit = f"{int(framework_rss_mib('mlp') + 470)}MiB"  # 700 MiB with CPU torch: mlp fits, catsdogs not
    proc = rigbench("run", "catsdogs,mlp", "-d", "cpu", "-b", "32", "--quick", "--threads", "1",
                    "--memory-limit", limit, "--db", db, "--json")  # 1 thread: see test_max_batch
    assert [r["status"] for r in json.loads(proc.stdout)] == ["oom", "ok"]


def _trial_count(db):
    if not os.path.exists(db):
        return 0
    try:
        with sqlite3.connect(db) as con:
            return con.execute("select count(*) from trials").fetchone()[0]
    except sqlite3.OperationalError:  # tables not created yet
        return 0


def test_ctrl_c_keeps_finished_trials(db):
    psutil = pytest.importorskip("psutil")
    # A short trial (batch 8), then a long one (batch 4096: seconds per step on a CPU).
    proc = subprocess.Popen(
        [sys.executable, "-m", "rigbench", "run", "mlp", "-d", "cpu", "-b", "8,4096",
         "--quick", "--db", db],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=with_ctrl_c,
    )
    deadline = time.time() + 120
    while _trial_count(db) < 1 and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)  # the second trial's child is starting
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    said = " ".join(stderr.split())
    assert "interrupted (Ctrl-C); 1 of 2 trials finished and was stored in sqlite:///" in said
    assert "mlp torch cpu b4096 fp32 was stopped and not stored" in said
    with sqlite3.connect(db) as con:
        assert con.execute("select batch_size, status from trials").fetchall() == [(8, "ok")]
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert not alive, "the trial's child process outlived the interrupted run"


def test_workloads_and_devices_listings():
    rows = json.loads(rigbench("workloads", "--json").stdout)
    assert [row["name"] for row in rows] == list(WORKLOADS)  # every registered one, in order
    for row in rows:
        assert row["params"] > 0 and row["train_flops_per_sample"] > 0
        assert row["dataset_train_size"] > 0 and row["origin"]
    devices = json.loads(rigbench("devices", "--json").stdout)
    cpu = next(d for d in devices if d["id"] == "cpu")
    assert cpu["frameworks"] == installed_frameworks() and cpu["memory_bytes"] > 0  # every one sees the CPU
    # the table `rigbench devices` prints, from the same rows (a second command would probe
    # every framework again: seconds each)
    console = Console(width=200, record=True)
    console.print(terminal.devices_table(devices))
    table = console.export_text()
    assert "cpu" in table and all(name in table for name in installed_frameworks())
