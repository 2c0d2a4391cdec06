"""A sweep interrupted by SIGTERM, resumed, killed by SIGKILL, resumed again: exactly one
result per grid point in the database, and the killed sweep's trial process is gone."""

import json
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter

import pytest

from rigbench.experiments.sweep import spec_key
from rigbench.runner.forkserver import TRIAL_PROCESS_NAME
from rigbench.spec import Result
from tests.conftest import with_ctrl_c

psutil = pytest.importorskip("psutil")
pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(300)

GRID = ["mlp", "--device", "cpu", "--quick", "--seconds", "0", "--batch-size", "8,16,24",
        "--threads", "1"]


def stored_specs(db):
    """spec_key of every stored trial (one per row)."""
    try:
        with sqlite3.connect(db) as con:
            rows = con.execute("select result_json from trials").fetchall()
    except sqlite3.OperationalError:  # tables not created yet
        return []
    return [spec_key(Result.model_validate_json(body).spec) for (body,) in rows]


def trial_children(pid):
    """The sweep's trial processes that are under way."""
    found = []
    for p in psutil.Process(pid).children(recursive=True):
        try:
            # a cold trial runs rigbench.runner.child; a warm one is forked from the warm-start
            # server and renames its process
            if "rigbench.runner.child" in " ".join(p.cmdline()) or p.name() == TRIAL_PROCESS_NAME:
                found.append(p)
        except psutil.Error:  # it ended meanwhile
            pass
    return found


def start_and_wait(args, db, results):
    """Start `rigbench sweep ARGS`; return once `results` trials are stored and the next
    trial's process exists, however early in its start-up: the child learns its parent's pid
    from the environment (runner/child.exit_with_parent), so even a parent killed before the
    child's watcher thread starts is noticed."""
    proc = subprocess.Popen([sys.executable, "-m", "rigbench", "sweep", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=with_ctrl_c)
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None:
        children = trial_children(proc.pid) if len(stored_specs(db)) >= results else []
        if children:
            return proc, children
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"no trial in flight after {results} results: {proc.communicate()}")


def test_interrupted_sweeps_resume_to_one_result_per_point(tmp_path):
    db = str(tmp_path / "sweep.db")
    args = GRID + ["--db", db]

    # 1. SIGTERM during the second trial (it used to exit 143 without a word): stopped as by
    # Ctrl-C, exit 143, the first result kept and said so, the resume command shown
    proc, _ = start_and_wait(args, db, results=1)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert len(stored_specs(db)) == 1
    assert "interrupted (SIGTERM); 1 of 3 trials finished and was stored in sqlite:///" in stderr
    assert ("mlp torch cpu b16 fp32 t1 was stopped and not stored; 1 not started; 2 grid points left"
            in " ".join(stderr.split()))
    resume_cmd = stderr.split("Resume with: ", 1)[1].strip()
    assert resume_cmd == shlex.join(["rigbench", "sweep", *args, "--resume"])

    # 2. the printed command resumes; SIGKILL the sweep during its second trial (the third point)
    resume_args = shlex.split(resume_cmd)[2:]
    proc, children = start_and_wait(resume_args, db, results=2)
    proc.kill()
    _, stderr = proc.communicate(timeout=60)
    _, alive = psutil.wait_procs(children, timeout=5)
    assert not alive, "the killed sweep's trial process kept running"
    assert "resume: 1 of 3 grid points already have a stored result" in stderr
    assert len(stored_specs(db)) == 2

    # 3. resume again: only the point left runs
    done = subprocess.run([sys.executable, "-m", "rigbench", "sweep", *resume_args, "--json"],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["grid_points"], summary["skipped"], summary["ran"]) == (3, 2, 1)
    assert "resume: 2 of 3 grid points already have a stored result" in done.stderr
    assert [(r["batch_size"], r["status"]) for r in summary["results"]] == [(8, "ok"), (16, "ok"), (24, "ok")]

    counts = Counter(stored_specs(db))
    assert len(counts) == 3 and set(counts.values()) == {1}, "exactly one result per grid point"
    assert {r["id"] for r in summary["results"]} == set(range(1, 4))
