"""What a command says on stderr while it works, where stderr is not a terminal (no bar is drawn
there): a line before seconds of work nothing else shows, and a line per phase of each trial
(runner/epoch_lines.py), with stdout left to --json. Found by timing each command's stderr
lines: `recommend mlp` said nothing for its first 6.5 s (torch asked for its devices) and
between its trials; a max-batch probe for up to 13 s."""

import json

from typer.testing import CliRunner

from rigbench.cli import app, show_progress_lines
from rigbench.cli.console import err
from rigbench.experiments.max_batch import MaxBatchOutcome
from rigbench.experiments.recommend import RecommendOutcome
from rigbench.runner import probe
from rigbench.spec import Metrics, Result, TrialSpec


def result(spec: TrialSpec, status: str = "ok") -> Result:
    return Result(run_id="r1", created_at="2026-01-01T00:00:00+00:00", spec=spec, status=status,
                  metrics=Metrics(samples_per_s=100.0))


def test_asking_a_framework_for_its_devices_is_said_first_on_a_terminal(monkeypatch, capsys):
    """`rigbench run` without -d (and calibrate, recommend) asked torch for its devices in a child
    process, seconds before anything was drawn on the terminal, bar or line. Into a pipe it says
    nothing: a device torch lacks is then a one-line error alone."""
    monkeypatch.setattr(probe, "probe_group", lambda names: {"torch": {"devices": [{"id": "cpu"}]}})
    show_progress_lines()
    for terminal, said in ((True, "asking torch which devices it can use (it starts in a child process: seconds)\n"),
                           (False, "")):
        monkeypatch.setattr(probe, "_answers", {})
        monkeypatch.setattr(err, "_force_terminal", terminal)
        assert probe.probe("torch") == {"devices": [{"id": "cpu"}]}
        assert capsys.readouterr().err == said


def test_max_batch_into_a_pipe_says_each_probes_phase(monkeypatch):
    def find(workload, device, on_probe, on_probe_start, on_probe_progress, **_):
        spec = TrialSpec(kind="probe", workload="mlp", batch_size=256)
        done = MaxBatchOutcome(workload="mlp", device="cpu", precision="fp32", limit_bytes=2**30, probes=[],
                               largest_ok=None, smallest_oom=None, fixed_bytes=None, per_sample_bytes=None,
                               recommended=None, margin=0.1, run_id="r1", limit_source="--memory-limit")
        on_probe_start(256, done)
        on_probe_progress(spec, "warm-up (the first step took 2.1 s)")
        done.probes.append(result(spec, "oom"))
        on_probe(done.probes[-1])
        return done

    monkeypatch.setattr("rigbench.experiments.max_batch.find_max_batch", find)  # the command imports it when run
    done = CliRunner().invoke(app, ["max-batch", "mlp", "--json"])
    lines = done.stderr.splitlines()
    at = lines.index("  batch 256: warm-up (the first step took 2.1 s)")
    assert lines[at + 1].startswith("  batch 256: oom")
    assert json.loads(done.stdout)["probes"][0]["status"] == "oom"


def test_recommend_into_a_pipe_says_each_trials_phase(monkeypatch):
    spec = TrialSpec(workload="mlp", batch_size=64)

    def recommend(workload, on_note, on_trial_end, on_trial_progress, **_):
        on_note("running batch sizes 64 on cpu: not measured yet")
        on_trial_progress(spec, "timing: at least 10 steps and 2 s, about 0:00:30 at the warm-up's pace")
        on_trial_end(result(spec))
        return RecommendOutcome("mlp", ["cpu"], [])

    monkeypatch.setattr("rigbench.api.recommend", recommend)
    done = CliRunner().invoke(app, ["recommend", "mlp", "--json"])
    assert done.exit_code == 0, done.output
    assert done.stderr.splitlines() == [
        "running batch sizes 64 on cpu: not measured yet",
        f"  {spec.label()}: timing: at least 10 steps and 2 s, about 0:00:30 at the warm-up's pace",
        f"  {spec.label()}: 100.0 samples/s"]
    assert json.loads(done.stdout)["workload"] == "mlp"


def test_long_reads_and_writes_show_a_spinner_on_a_terminal_and_nothing_in_a_pipe(monkeypatch, capsys):
    """`results export --format bundle` (20 s on 4,788 results), `results import` of its bundle
    (17 s) and `report` (7.5 s) drew nothing on a terminal until their end. Into a pipe they stay
    silent: an error found on the way (an --out that cannot be written) is one line alone."""
    from rigbench.cli.console import working

    for terminal, said in ((True, True), (False, False)):
        monkeypatch.setattr(err, "_force_terminal", terminal)
        monkeypatch.setattr(err, "is_interactive", terminal)
        with working("reading the results"):
            pass
        captured = capsys.readouterr()
        assert ("reading the results" in captured.err) is said and captured.out == ""
