"""The process-scaling study's arithmetic against hand numbers (analysis/process_scaling.py)
and its plan (experiments/scaling.plan_process_scaling)."""

import pytest

from rigbench.analysis.process_scaling import decide_processes, process_scaling_rows, scaling_verdict, studies
from rigbench.errors import UsageError
from rigbench.experiments.scaling import plan_process_scaling
from rigbench.spec import Metrics, Result, TrialSpec


def result(rid, n, batch, step_s, allreduce_ms=None, comm=None):
    times = [step_s * f for f in (0.98, 1.0, 1.02, 0.99, 1.01)]
    spec = TrialSpec(workload="mlp", batch_size=batch, world_size=n)
    return Result(id=rid, run_id="r", created_at="t", spec=spec, status="ok", step_times_s=times,
                  metrics=Metrics(samples_per_s=batch * n / step_s, step_time_ms_median=step_s * 1e3,
                                  steps_measured=len(times), allreduce_grad_ms=allreduce_ms, comm_share=comm))


def test_weak_scaling_by_hand():
    # one process: 64 samples in 0.1 s = 640/s; two: 128 in 0.125 s = 1024/s
    rows = process_scaling_rows([result(1, 1, 64, 0.1), result(2, 2, 64, 0.125, allreduce_ms=20.0, comm=0.3)])
    one, two = rows
    assert (one.speedup, one.efficiency) == (1.0, 1.0)
    assert two.global_batch == 128
    assert two.speedup == pytest.approx(1024 / 640)
    assert two.efficiency == pytest.approx(0.8)
    low, high = two.efficiency_ci
    assert low <= two.efficiency <= high
    # predicted step: 0.1 s (same per-rank batch) + 0.020 s all-reduce -> 128 / 0.12
    assert two.predicted_samples_per_s == pytest.approx(128 / 0.12)
    assert two.predicted_efficiency == pytest.approx(128 / 0.12 / (2 * 640))
    assert scaling_verdict(rows) == "scales to 2 processes with efficiency 0.80"
    # stored listings carry no raw step times: the same figures, without the CI
    bare = process_scaling_rows([r.model_copy(update={"step_times_s": []}) for r in
                                 (result(1, 1, 64, 0.1), result(2, 2, 64, 0.125, allreduce_ms=20.0))])
    assert bare[1].efficiency == pytest.approx(0.8) and bare[1].efficiency_ci is None


def test_strong_scaling_scales_the_compute_with_the_rank_batch():
    rows = process_scaling_rows([result(1, 1, 64, 0.1), result(2, 2, 32, 0.08, allreduce_ms=10.0, comm=0.6)])
    two = rows[1]
    assert two.global_batch == 64
    assert two.efficiency == pytest.approx((64 / 0.08) / (2 * 640))  # 0.625
    assert two.predicted_samples_per_s == pytest.approx(64 / (0.1 * 32 / 64 + 0.010))
    assert scaling_verdict(rows).startswith("communication-bound beyond 1: at 2 processes 60%")


def test_an_efficiency_above_1_beyond_its_interval_blames_the_baseline():
    # 4 ranks on a busy 2-core VM once read 1.87: one process at 2 threads had lost most of its speed
    rows = process_scaling_rows([result(1, 1, 64, 0.5), result(2, 2, 64, 0.125)])
    assert rows[1].efficiency_ci[0] > 1
    assert scaling_verdict(rows) == ("scales to 2 processes with efficiency 4.00 (above 1: each rank outran the one "
                                     "process, whose speed is the baseline; a busy machine or its threads slowed it, "
                                     "so time the study again on a quiet machine)")
    # near 1, within its interval: as measured
    near = process_scaling_rows([result(1, 1, 64, 0.1), result(2, 2, 64, 0.099)])
    assert scaling_verdict(near) == "scales to 2 processes with efficiency 1.01"


def test_without_the_one_process_trial_there_is_no_ratio():
    [row] = process_scaling_rows([result(2, 2, 64, 0.125, allreduce_ms=20.0)])
    assert row.speedup is None and row.efficiency is None and row.predicted_samples_per_s is None
    assert scaling_verdict([row]) is None


def test_the_plan_puts_one_process_first_and_splits_a_strong_batch(monkeypatch):
    # planning only: the CPU without asking a framework child which devices it sees
    monkeypatch.setattr("rigbench.experiments.plan.chosen_devices", lambda framework, devices, default: ["cpu"])
    weak = plan_process_scaling("mlp", [2, 4], batch_size=64)
    assert [(s.world_size, s.batch_size) for s in weak] == [(1, 64), (2, 64), (4, 64)]
    strong = plan_process_scaling("mlp", [4, 2], batch_size=64, mode="strong")
    assert [(s.world_size, s.batch_size) for s in strong] == [(1, 64), (2, 32), (4, 16)]
    with pytest.raises(UsageError, match="does not divide by 3"):
        plan_process_scaling("mlp", [3], batch_size=64, mode="strong")


def test_studies_pair_each_multi_process_trial_with_its_one_process_base():
    base64, base32 = result(1, 1, 64, 0.1), result(2, 1, 32, 0.06)
    weak, strong = result(3, 2, 64, 0.125, allreduce_ms=20.0), result(4, 2, 16, 0.05, allreduce_ms=20.0)
    found = studies([base64, base32, weak, strong])
    assert [r.id for r in found[("mlp", "torch", "cpu", "fp32", "weak", 64)]] == [1, 3]
    assert [r.id for r in found[("mlp", "torch", "cpu", "fp32", "strong", 32)]] == [2, 4]


def test_the_recommendation_learns_the_process_count_and_ignores_ranks_elsewhere():
    from rigbench.analysis.recommend import recommend

    results = [result(1, 1, 64, 0.1), result(2, 2, 64, 0.125, allreduce_ms=20.0, comm=0.3)]
    assert decide_processes(results, "cpu")[:2] == (2, "processes: scales to 2 processes with efficiency 0.80")
    lines = {line.decision: line for line in recommend(results, ["cpu"], {}, "sgd", 60000)}
    assert lines["processes"].value == 2
    # the data-parallel trial's 1024 samples/s (two ranks' batches) is no one-process speed
    assert lines["device"].numbers["cpu"]["samples_per_s"] == pytest.approx(640.0)
