"""What `rigbench score` says beside its number: the workloads whose speed was the host's
(analysis/host_bound.py) and what its 95% CI covers. The figures are the H200 suite's stored
trials (run 7ce121553301, docs/results/gpu-h200.md) against the H100's (aeade6d63661), which
stored no CPU time per step: 6 of 8 host-bound on the H200, and a CI of 0.975 to 0.987 from one
trial a side, while a second lease of the same H200 kind scored 1.24 to 1.28."""

from __future__ import annotations

import numpy as np
from typer.testing import CliRunner

from rigbench import cli
from rigbench.analysis.score import compute_score
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store
from rigbench.workloads import WORKLOADS

H100 = {"hostname": "h100", "cpu_model": "Intel Xeon"}
H200 = {"hostname": "h200", "cpu_model": "Intel Xeon"}


def gpu(workload: str, step_ms: float, gpu_pct: float | None, cpu_ms: float | None, rid: int | None = None,
        run_id: str = "h200") -> Result:
    """A suite trial on a GPU: `cpu_ms` None as the H100 bundle's trials, stored before rigbench
    measured the CPU time per step."""
    batch = WORKLOADS[workload].default_batch
    spec = TrialSpec(workload=workload, device="cuda:0", batch_size=batch)
    times = list(np.random.default_rng(rid or 0).normal(step_ms / 1e3, step_ms / 1e5, 100))
    metrics = Metrics(samples_per_s=batch * 1e3 / step_ms, step_time_ms_median=step_ms, cpu_ms_per_step=cpu_ms,
                      gpu_util_pct_mean=gpu_pct, steps_measured=100)
    return Result(id=rid, run_id=run_id, created_at="2026-01-01T00:00:00+00:00", spec=spec, status="ok",
                  device_name="NVIDIA H200", metrics=metrics, step_times_s=times)


# the H200's stored figures: mlp, cnn and resnet host-bound, dcgan not (GPU busy 94%)
H200_SUITE = {"mlp": (1.66, 23.6, 1.65), "cnn": (2.21, 26.1, 2.22), "resnet": (10.91, 43.4, 10.83),
              "dcgan": (9.09, 93.7, 9.08)}
H100_SUITE = {"mlp": 1.71, "cnn": 2.54, "resnet": 7.96, "dcgan": 9.21}


def _sides(repeats: int = 1) -> tuple[dict[str, tuple[Result, ...]], dict[str, tuple[Result, ...]]]:
    ours = {w: tuple(gpu(w, step, pct, cpu, rid=i) for i in range(repeats)) for w, (step, pct, cpu) in H200_SUITE.items()}
    reference = {w: (gpu(w, step, 60.0, None, run_id="h100"),) for w, step in H100_SUITE.items()}
    return ours, reference


def test_score_names_the_host_bound_workloads_on_each_side():
    ours, reference = _sides()
    score = compute_score(ours, reference, "gpu")
    assert score is not None
    by_workload = {item.workload: item.as_dict()["host_bound"] for item in score.items}
    # the reference stored no CPU time per step: it cannot say (None), which is not "no"
    assert by_workload == {"mlp": {"ours": True, "reference": None}, "cnn": {"ours": True, "reference": None},
                           "dcgan": {"ours": False, "reference": None},
                           "resnet": {"ours": True, "reference": None}}
    [line] = [n for n in score.notes() if n.startswith("host-bound")]
    assert line.startswith("host-bound here: mlp, cnn, resnet (3 of 4"), line
    assert "the reference cannot say" in line and "the host's" in line
    # neither side host-bound: no line
    calm = {w: (gpu(w, 9.0, 95.0, 9.0),) for w in H200_SUITE}
    assert not [n for n in compute_score(calm, calm, "gpu").notes() if n.startswith("host-bound")]


def test_a_busy_reference_is_named():
    """A reference timed while other processes took the CPU ran slow, so the speed-ups over it read
    high: said under the score and per workload in --json, not only our own busy trials."""
    ours, reference = _sides()
    assert not [n for n in compute_score(ours, reference, "gpu").notes() if n.startswith("busy")]
    slowed = {w: (trials[0].model_copy(update={"metrics": trials[0].metrics.model_copy(
        update={"others_cpu_pct_mean": share})}),) for (w, trials), share in zip(reference.items(), (78.0, 4.0, 81.0, 2.0))}
    score = compute_score(ours, slowed, "gpu")
    assert {i.workload: i.as_dict()["busy"] for i in score.items}["mlp"] == {"ours": False, "reference": True}
    [line] = [n for n in score.notes() if n.startswith("busy")]
    assert line.startswith("busy in the reference: other processes used 78-81% of its machine's CPU while its "
                           "trials of mlp, resnet were timed"), line
    assert "read high" in line


def test_a_ci_from_one_trial_a_side_says_it_covers_neither_runs_nor_hosts():
    ours, reference = _sides()
    score = compute_score(ours, reference, "gpu")
    assert score.as_dict()["ci_covers"] == "within trials"
    [line] = [n for n in score.notes() if n.startswith("95% CI")]
    assert "not run-to-run or host-to-host variation" in line and "--repeat 3" in line
    # repeats on our side only: the reference's single trials are named, not hidden
    ours, reference = _sides(repeats=3)
    partial = compute_score(ours, reference, "gpu")
    assert partial.as_dict()["ci_covers"] == "repeats in part"
    [line] = [n for n in partial.notes() if n.startswith("95% CI")]
    assert "one trial in the reference: mlp, cnn, dcgan, resnet, the noise within" in line and "--repeat 3" in line
    # repeats on both sides: run-to-run spread is in the interval, no within-trial line
    both = compute_score(ours, ours, "gpu")
    assert both.as_dict()["ci_covers"] == "repeats"
    assert not [n for n in both.notes() if n.startswith("95% CI")]


def test_the_score_command_prints_both(tmp_path):
    db = str(tmp_path / "g.db")
    store = Store(db)
    ours, reference = _sides()
    for run_id, machine, side in (("h100", H100, reference), ("h200", H200, ours)):
        store.add_run(run_id, "2026-01-01T00:00:00+00:00", "rigbench run", machine)
        for trials in side.values():
            for r in trials:
                store.add_result(r.model_copy(update={"id": None, "run_id": run_id}))
    done = CliRunner().invoke(cli.app, ["score", "h200", "--reference", "h100", "--db", db],
                              env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    text = " ".join(done.output.split())
    assert "(95% CI " in text and ", within trials only)" in text
    assert "host-bound here: mlp, cnn, resnet (3 of 4" in text
    assert "95% CI: the noise between steps within each trial only" in text
