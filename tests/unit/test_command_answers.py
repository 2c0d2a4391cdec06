"""Exit codes (README, "Exit codes"): 0 when a command gave what it was asked for, 1 when it ran
but could not (no suggested rate, no batch that fits, no training run that ended ok, no
speed-up, no device and batch to recommend), 2 for what is known to be wrong before anything
runs, 128 + the signal when interrupted. The trials are faked: only the commands' own rule is
under test."""

import json
import sys
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from rigbench import api
from rigbench.analysis.recommend_model import Line
from rigbench.cli import advise, app, core
from rigbench.experiments import max_batch
from rigbench.experiments.max_batch import MIB, MaxBatchOutcome
from rigbench.experiments.recommend import RecommendOutcome
from rigbench.spec import Metrics, Result, TrialSpec


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def result(spec: TrialSpec, status: str = "ok", speed: float | None = None, **metrics) -> Result:
    if speed is not None:
        metrics.update(samples_per_s=speed, samples_per_s_ci=(0.95 * speed, 1.05 * speed), steps_measured=10)
    return Result(id=1, run_id="r1", created_at="2026-01-01T00:00:00+00:00", spec=spec, status=status,
                  error=None if status == "ok" else f"it ended {status}", metrics=Metrics(**metrics))


def faked_trials(monkeypatch, module, status_of, interrupted: bool = False) -> None:
    """The module's trials end as `status_of(spec)` says ("ok" with 100 samples/s), or, when
    `interrupted`, only the first one does and the second is stopped."""
    def run(specs, db):
        done = specs[:1] if interrupted else specs
        results = [result(s, status, 100.0 if status == "ok" else None) for s in done if (status := status_of(s))]
        return api.RunOutcome("r1", "sqlite:///x.db", results, interrupted, specs[1] if interrupted else None)
    monkeypatch.setattr(module, "_run_with_progress", run)
    monkeypatch.setattr(api, "prepare_data", lambda workload, dataset, data_dir, download, **_: "digits")


def test_lr_find_without_a_suggestion_exits_1_saying_why(tmp_path, monkeypatch):
    # before: "No suggestion" exited 0, while a trial that ended `unsupported` exited 1
    faked_trials(monkeypatch, advise, lambda s: "ok")  # no curve: too few points to read
    res = invoke("lr-find", "mlp", "--dataset", "digits", "--db", str(tmp_path / "l.db"))
    assert res.exit_code == 1, res.output
    assert "No suggestion: only 0 usable points" in res.stdout
    assert res.stderr.strip().splitlines()[-1].startswith("rigbench: lr-find has no learning rate to suggest: only 0")


def test_an_interrupted_lr_find_still_prints_one_json_object(tmp_path, monkeypatch):
    # before: nothing on stdout, where run, sweep, max-batch, scaling and recommend print JSON
    def stopped(specs, db):
        return api.RunOutcome("r1", "sqlite:///x.db", [], True, specs[0])
    monkeypatch.setattr(advise, "_run_with_progress", stopped)
    monkeypatch.setattr(api, "prepare_data", lambda workload, dataset, data_dir, download, **_: "digits")
    res = invoke("lr-find", "mlp", "--dataset", "digits", "--json", "--db", str(tmp_path / "l.db"))
    assert res.exit_code == 130, res.output
    # run r1 was never written (a run is written with its first result): no run to name
    assert json.loads(res.stdout) == {"interrupted": True, "run_id": None, "db": "sqlite:///x.db", "trial_id": None,
                                      "suggested_lr": None, "curve": []}
    assert res.stderr.strip().splitlines()[-1].startswith("interrupted (Ctrl-C); no trial had finished")


TF32_OFF_CUDA = ("rigbench: error: --precision tf32 is an NVIDIA GPU format (Ampere and later), "
                 "not on cpu: use fp32 there, or -d cuda:N")


@pytest.mark.parametrize("command", [
    ["max-batch", "mlp"], ["lr-find", "mlp", "--dataset", "digits"], ["train", "mlp", "--dataset", "digits"],
    ["train", "mlp", "--dataset", "digits", "-d", "cuda:0,cpu"],
    # run and sweep used to run every trial to `unsupported`, exit 0
    ["run", "mlp", "-d", "cpu", "--quick"], ["sweep", "mlp", "-d", "cpu", "--quick"],
    ["sweep", "mlp", "-d", "cpu", "--quick", "--precision", "fp32"], ["sweep", "mlp", "-d", "cpu", "--dry-run"]])
def test_tf32_off_a_cuda_device_is_bad_input_before_anything_runs(tmp_path, command):
    """Every adapter ends a tf32 trial off CUDA `unsupported`: known from the flags, it is refused
    (max-batch used to probe, say nothing fits, and exit 0)."""
    res = invoke(*command, "--precision", "tf32", "--db", str(tmp_path / "t.db"))
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == TF32_OFF_CUDA
    assert not (tmp_path / "t.db").exists()


@pytest.mark.parametrize("devices, args, refused", [
    (["cpu"], ["run", "mlp"], True),  # no -d: the devices found here, none of them CUDA
    (["cpu"], ["sweep", "mlp", "--precision", "fp32,tf32", "--dry-run"], True),
    (["cpu", "cuda:0"], ["run", "mlp"], True),  # one precision: every cpu trial would be unsupported
    (["cpu", "cuda:0"], ["run", "mlp", "-d", "cuda:0,cpu"], True),  # as train says it
    (["cpu", "cuda:0"], ["sweep", "mlp", "--dry-run"], True),  # the cpu would get only tf32
    (["cpu", "cuda:0"], ["sweep", "mlp", "--precision", "fp32,tf32", "--dry-run"], False),  # a product: see below
    (["cpu", "cuda:0"], ["sweep", "mlp", "-d", "cuda:0", "--dry-run"], False)])
def test_tf32_is_refused_where_the_devices_found_here_cannot_run_it(tmp_path, monkeypatch, devices, args, refused):
    """Where the devices are found only by asking the framework (no -d), the answer is still known
    before any trial. A sweep's grid is the product of its lists (docs/STRATEGY.md): one that lists
    tf32 with other precisions over CUDA and other devices keeps its points of tf32 off CUDA, which
    end `unsupported` with the reason, as channels-last does on a network without convolutions."""
    from rigbench.experiments import devices as device_lists

    monkeypatch.setattr(device_lists, "framework_devices", lambda framework: devices)
    precision = [] if "--precision" in args else ["--precision", "tf32"]
    res = invoke(*args, *precision, "--quick", "--db", str(tmp_path / "t.db"))
    if refused:
        assert res.exit_code == 2, res.output
        assert res.stderr.strip() == TF32_OFF_CUDA
    else:
        assert res.exit_code == 0, res.output
        assert "tf32" in res.stdout
    assert not (tmp_path / "t.db").exists()


def test_a_sweep_file_of_tf32_on_the_cpu_is_refused_and_scaling_keeps_its_unsupported_row(tmp_path):
    (tmp_path / "s.toml").write_text('workloads = ["mlp"]\ndevices = ["cpu"]\nprecisions = ["tf32"]\n')
    res = invoke("sweep", "--config", str(tmp_path / "s.toml"), "--dry-run", "--db", str(tmp_path / "t.db"))
    assert res.exit_code == 2, res.output
    assert res.stderr.strip() == TF32_OFF_CUDA
    # scaling is a study of variants beside a baseline: tf32 there is one row, `unsupported` with
    # the reason, and the study's other rows stand (docs/STRATEGY.md), so it is planned, not refused
    specs = api.plan_scaling("mlp", "cpu", precisions=["tf32"], threads=[1], compile=False, channels_last=False)
    assert [s.precision for s in specs] == ["fp32", "fp32", "tf32", "fp32"]


def _searched(recommended: int | None) -> MaxBatchOutcome:
    return MaxBatchOutcome(
        workload="mlp", device="cpu", precision="fp32", limit_bytes=200 * MIB, probes=[],
        largest_ok=recommended, smallest_oom=8 if recommended is None else 2 * recommended, fixed_bytes=None,
        per_sample_bytes=None, recommended=recommended, margin=0.1, run_id="r1",
        reason="1 probe ran and none succeeded (batch 8 oom): not even batch 8 fits under the limit"
        if recommended is None else "the largest batch that ran", db_url="sqlite:///x.db")


@pytest.mark.parametrize("recommended, code", [(None, 1), (16, 0)])
def test_max_batch_exits_1_when_no_batch_fits(tmp_path, monkeypatch, recommended, code):
    monkeypatch.setattr(max_batch, "find_max_batch", lambda *a, **k: _searched(recommended))  # the command imports it when run
    res = invoke("max-batch", "mlp", "--memory-limit", "200MiB", "--db", str(tmp_path / "m.db"))
    assert res.exit_code == code, res.output
    assert f"recommended batch: {recommended or '-'}" in res.stdout  # the answer is printed either way
    if code:
        assert res.stderr.strip().splitlines()[-1] == (
            "rigbench: max-batch has no batch to recommend: 1 probe ran and none succeeded (batch 8 oom): not even "
            "batch 8 fits under the limit")


def test_an_interrupted_max_batch_says_the_command_that_searches_to_the_end(tmp_path, monkeypatch):
    # before: "...; a probe stopped half-way never is", and nothing on how to go on
    stopped = replace(_searched(16), interrupted=True)
    monkeypatch.setattr(max_batch, "find_max_batch", lambda *a, **k: stopped)
    monkeypatch.setattr(sys, "argv", ["rigbench", "max-batch", "mlp", "--memory-limit", "200MiB"])
    res = invoke("max-batch", "mlp", "--memory-limit", "200MiB", "--db", str(tmp_path / "m.db"))
    assert res.exit_code == 130, res.output
    assert "recommended batch: 16" in res.stdout
    assert "Stored in" not in res.stdout  # no probe: no run to list (`results list --run r1` would say none)
    assert res.stderr.strip().splitlines()[-1] == (
        "interrupted (Ctrl-C): no probe had finished: nothing was stored; a probe stopped half-way never is. A "
        "complete search: rigbench max-batch mlp --memory-limit 200MiB (a new one, from --start)")
    as_json = invoke("max-batch", "mlp", "--memory-limit", "200MiB", "--json", "--db", str(tmp_path / "m.db"))
    assert as_json.exit_code == 130 and json.loads(as_json.stdout)["run_id"] is None  # never written: no probe


@pytest.mark.parametrize("statuses, code", [(["unsupported", "unsupported"], 1), (["diverged", "ok"], 0)])
def test_train_exits_1_when_no_run_ended_ok(tmp_path, monkeypatch, statuses, code):
    ended = dict(zip([0.01, 1e6], statuses, strict=True))
    faked_trials(monkeypatch, core, lambda s: ended[s.lr])
    res = invoke("train", "mlp", "--dataset", "digits", "--lr", "0.01,1e6", "--json", "--db", str(tmp_path / "t.db"))
    assert res.exit_code == code, res.output
    assert [row["status"] for row in json.loads(res.stdout)] == statuses  # stdout stays JSON
    if code:
        assert res.stderr.strip() == "rigbench: no training run ended ok (unsupported; why: each run's line above)"


SCALING = ["scaling", "mlp", "--no-compile", "--no-channels-last", "--threads", "1", "--precision", "bf16"]


def test_scaling_without_a_speed_up_exits_1(tmp_path, monkeypatch):
    faked_trials(monkeypatch, advise, lambda s: "ok" if s.threads is None and s.precision == "fp32" else "unsupported")
    res = invoke(*SCALING, "--db", str(tmp_path / "s.db"))
    assert res.exit_code == 1, res.output
    assert "speed-up over the fp32 eager default" in res.stdout  # the table of what ran stands
    assert res.stderr.strip().splitlines()[-1] == "rigbench: scaling has no speed-up to show: no variant ended ok"


def test_an_interrupted_scaling_study_shows_its_finished_trials_and_how_to_list_them(tmp_path, monkeypatch):
    # before: one line, no table and no command, where sweep and max-batch print both
    faked_trials(monkeypatch, advise, lambda s: "ok", interrupted=True)
    res = invoke(*SCALING, "--db", str(tmp_path / "s.db"))
    assert res.exit_code == 130, res.output
    assert "speed-up over the fp32 eager default" in res.stdout and "fp32 eager, default threads" in res.stdout
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("interrupted (Ctrl-C); 1 of 4 trials finished and was stored in sqlite:///x.db (run r1)")
    assert last.endswith(f"; see them: rigbench results list --run r1 --db {tmp_path / 's.db'}")


def test_an_interrupted_recommendation_says_the_command_that_measures_the_rest(tmp_path, monkeypatch):
    # before: "the recommendation uses what finished (stored)", and nothing on how to go on
    lines = [Line("device", "cpu", "device: cpu"), Line("batch_size", 16, "batch size: 16")]
    monkeypatch.setattr(api, "recommend", lambda *a, **k: RecommendOutcome("mlp", ["cpu"], lines, interrupted=True))
    monkeypatch.setattr(sys, "argv", ["rigbench", "recommend", "mlp", "--quick", "--db", "postgresql://u:pw@h/r"])
    res = invoke("recommend", "mlp", "--quick", "--db", str(tmp_path / "r.db"))
    assert res.exit_code == 130, res.output
    assert "  - batch size: 16" in res.stdout
    assert res.stderr.strip().splitlines()[-1] == (
        "interrupted (Ctrl-C): the recommendation uses what finished (stored); the rest: rigbench recommend mlp "
        "--quick --db postgresql://u@h/r (it measures only what is missing)")


@pytest.mark.parametrize("flags, warned", [(["avx2", "fma"], True), (["avx2", "avx512_bf16"], False), ([], False)])
def test_scaling_and_sweep_warn_of_bf16_trials_a_cpu_can_only_emulate(tmp_path, monkeypatch, flags, warned):
    # scaling plans bf16 by default: on an AVX2-only CPU each such trial ran emulated (8.5 against
    # 940 samples/s for mlp), up to its --timeout, without a word
    from rigbench.cli import sweep as sweep_cli
    from rigbench.experiments import plan
    from rigbench.experiments.sweep import SweepOutcome

    monkeypatch.setattr(plan, "cpu_identity", lambda: {"model": "a CPU", "flags": flags})
    faked_trials(monkeypatch, advise, lambda s: "ok")
    scaled = invoke(*SCALING, "--db", str(tmp_path / "s.db"))
    monkeypatch.setattr(sweep_cli, "_sweep_with_progress", lambda grid, db, resume: SweepOutcome("r1", "x", grid))
    swept = invoke("sweep", "mlp", "-d", "cpu", "--precision", "fp32,bf16", "-b", "8,16", "--db", str(tmp_path / "w.db"))
    assert scaled.exit_code == 0 and swept.exit_code == 0, scaled.output + swept.output
    said = "rigbench: warning: bf16 on cpu: this CPU has no native bfloat16 (no avx512_bf16, amx or Arm bf16 flag), so "
    assert (said + "1 bf16 trial runs emulated, far slower than fp32") in scaled.stderr if warned else said not in scaled.stderr
    assert (said + "2 bf16 trials run emulated") in swept.stderr if warned else said not in swept.stderr


def test_recommend_without_a_device_and_batch_exits_1(tmp_path, monkeypatch):
    undecided = Line("device", None, "device: not measured (cpu): run without --no-run")
    monkeypatch.setattr(api, "recommend", lambda *a, **k: RecommendOutcome("mlp", ["cpu"], [undecided]))
    res = invoke("recommend", "mlp", "--no-run", "--db", str(tmp_path / "r.db"))
    assert res.exit_code == 1, res.output
    assert "  - device: not measured (cpu)" in res.stdout
    assert res.stderr.strip() == "rigbench: no recommendation: device: not measured (cpu): run without --no-run"
