"""A trial says how far it has got while it runs: its child writes a phase line as it enters each
slow part (runner/epoch_lines.py), the launcher hands the newest on, the CLI shows it. Found by
timing stderr: `rigbench run lstm -d cpu 2>log` said nothing for 101 s, `lr-find` for 47 s, the
first trial of any command for 10 s (starting torch)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rigbench import api
from rigbench.runner.launchers.progress_watch import wait_telling
from rigbench.runner.launchers.steps import Started
from rigbench.spec import MeasureOptions, TrialSpec

# The child says a phase, then waits until the test has heard it: every phase is heard whatever
# the machine's speed, never by luck of the poll's timing. It stays in its last phase until that
# is said again with the time spent in it.
HANDSHAKE = """
import os, sys, time
folder = sys.argv[1]
def wait_for(name):
    while not os.path.exists(os.path.join(folder, name)):
        time.sleep(0.01)
for name in ("starting torch", "warm-up (the first step took 1.2 s)", "timing: 10 steps"):
    print("rigbench: phase: " + name, file=sys.stderr, flush=True)
    wait_for("heard " + name.split()[0])
wait_for("heard again")
"""


def test_the_launcher_hands_on_each_phase_its_child_enters_and_again_while_it_stays(tmp_path, monkeypatch):
    monkeypatch.setattr("rigbench.runner.launchers.progress_watch.PROGRESS_POLL_S", 0.02)
    monkeypatch.setattr("rigbench.runner.launchers.progress_watch.QUIET_S", 0.1)
    stderr_path = tmp_path / "stderr.txt"
    heard: list[str] = []

    def on_progress(text: str) -> None:
        heard.append(text)
        (tmp_path / ("heard again" if " so far" in text else f"heard {text.split()[0]}")).touch()

    with open(stderr_path, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", HANDSHAKE, str(tmp_path)], stderr=err)
    try:
        ended = wait_telling(TrialSpec(workload="mlp", batch_size=8), Started(proc, stderr_path, None),
                             lambda: stderr_path, on_progress)
    finally:
        proc.kill()
    phases = [text for text in heard if not text.endswith(" so far")]
    assert ended and phases == ["starting torch", "warm-up (the first step took 1.2 s)", "timing: 10 steps"]
    # a phase said again is the one before it, with its time: "timing: 10 steps; 0:00:00 so far"
    again = [(heard[i - 1].split(";")[0], text) for i, text in enumerate(heard) if text.endswith(" so far")]
    assert again and all(text.startswith(before + "; ") for before, text in again)


def phases(stderr: Path) -> list[str]:
    prefix = "rigbench: phase: "
    return [line[len(prefix):] for line in stderr.read_text().splitlines() if line.startswith(prefix)]


def run_child(tmp_path: Path, spec: TrialSpec) -> list[str]:
    spec_path, report = tmp_path / "spec.json", tmp_path / "report.json"
    spec_path.write_text(spec.model_dump_json())
    with open(tmp_path / "stderr.txt", "wb") as err:
        subprocess.run([sys.executable, "-m", "rigbench.runner.child", str(spec_path), str(report)], stderr=err,
                       check=True, timeout=240)
    assert '"status": "ok"' in report.read_text().replace('":"', '": "')
    return phases(tmp_path / "stderr.txt")


@pytest.mark.slow
def test_a_speed_trial_child_says_each_phase_in_order(tmp_path):
    pytest.importorskip("torch")
    said = run_child(tmp_path, TrialSpec(workload="mlp", batch_size=8, threads=1, measure=MeasureOptions.quick()))
    assert said[:3] == ["starting torch", "building the model", "first step (allocation, kernel choice, compilation)"]
    assert said[3].startswith("warm-up (the first step took ") and said[4].startswith("timing: at least 3 steps")
    assert len(said) == 5  # nothing after the timing starts: the timed steps are left alone


@pytest.mark.slow
def test_an_lr_range_test_child_says_its_steps_every_tenth(tmp_path):
    """lr-find said nothing for its whole test (47 s here): now its data set, the model, then
    every tenth of its steps, with the lr and smoothed loss reached."""
    pytest.importorskip("torch")
    said = run_child(tmp_path, api.plan_lr_find("mlp", "digits", steps=20, threads=1))
    assert said[:4] == ["starting torch", "loading digits", "building the model", "step 1/20"]
    assert said[4:] and all(text.startswith(f"step {2 * (i + 1)}/20, lr ") and ", smoothed loss " in text
                            for i, text in enumerate(said[4:]))  # until the end, or the loss diverged


@pytest.mark.slow
def test_run_into_a_pipe_says_each_trials_place_and_phase_and_keeps_stdout_for_json(tmp_path):
    """End to end: the timing phase lasts 2 s or more (--seconds 2), so the launcher's poll (once
    a second) sees it in each trial whatever the machine's speed."""
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, "-m", "rigbench", "run", "mlp", "cnn", "-d", "cpu", "--quick", "--seconds", "2",
                           "--threads", "1", "--json", "--db", str(tmp_path / "r.db")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert [r["workload"] for r in json.loads(done.stdout)] == ["mlp", "cnn"]
    for place, label in (("1/2", "mlp torch cpu b64 fp32 t1"), ("2/2", "cnn torch cpu b64 fp32 t1")):
        assert f"  [{place}] {label}: timing: at least 3 steps and 2 s, about " in done.stderr, done.stderr
