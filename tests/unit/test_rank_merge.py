"""A data-parallel trial's ranks become one report and one Result (DESIGN.md, "Data parallel"):
step i lasts as long as the slowest rank's step i, any failing rank fails the trial, and
throughput counts the global batch (per-rank batch x world_size). Numbers by hand."""

from __future__ import annotations

import pytest

from rigbench.child_report import ChildReport
from rigbench.runner.assemble import build_result, global_batch
from rigbench.runner.launchers import Outcome
from rigbench.runner.launchers.merge import merge_reports, step_count_disagreement
from rigbench.spec import EpochRecord, TrainOptions, TrialSpec
from rigbench.workloads import get_workload


def rank(r: int, steps: list[float], world_size: int = 2, **fields) -> ChildReport:
    fields.setdefault("status", "ok")
    return ChildReport(rank=r, world_size=world_size, step_times_s=steps, **fields)


def test_a_step_lasts_as_long_as_its_slowest_rank():
    merged = merge_reports([rank(0, [0.10, 0.20]), rank(1, [0.15, 0.12])])
    assert merged.step_times_s == [0.15, 0.20]
    assert merged.status == "ok" and merged.error is None
    assert (merged.rank, merged.world_size) == (0, 2)


def test_steps_timed_in_windows_keep_windows_cut_at_every_ranks_boundary():
    merged = merge_reports([rank(0, [0.1, 0.2, 0.2, 0.2], step_windows=[1, 3]),
                            rank(1, [0.1, 0.1, 0.3, 0.3], step_windows=[2, 2])])
    assert merged.step_times_s == [0.1, 0.2, 0.3, 0.3] and merged.step_windows == [1, 1, 2]
    crashed = merge_reports([rank(0, [0.1, 0.1], step_windows=[2]), rank(1, [0.1], step_windows=[1])])
    assert crashed.status == "crash" and crashed.step_windows == []


def test_losses_and_description_from_rank_0_peaks_and_window_over_every_rank():
    r0 = rank(0, [0.1], losses=[2.0, 1.5], loss_curve=[2.0], params=10, device_name="cuda0", threads=4,
              software={"torch": "2"}, measure_start=100.0, measure_end=110.0, allocator_peak_bytes=300,
              first_step_s=1.0, warmup_s=2.0)
    r1 = rank(1, [0.1], losses=[9.0], loss_curve=[9.0], params=10, device_name="cuda1", threads=4,
              measure_start=99.5, measure_end=109.0, allocator_peak_bytes=500, first_step_s=1.5, warmup_s=1.8)
    merged = merge_reports([r0, r1])
    assert merged.losses == [2.0, 1.5] and merged.loss_curve == [2.0]
    assert merged.device_name == "cuda0" and merged.software == {"torch": "2"} and merged.params == 10
    assert merged.allocator_peak_bytes == 500 and isinstance(merged.allocator_peak_bytes, int)
    assert (merged.measure_start, merged.measure_end) == (99.5, 110.0)  # earliest start, latest end
    assert (merged.first_step_s, merged.warmup_s) == (1.5, 2.0)  # the slowest rank's
    merged.losses.append(0.0)
    assert r0.losses == [2.0, 1.5]  # the trial's report shares nothing with rank 0's


def test_values_no_rank_reported_stay_unknown():
    merged = merge_reports([rank(0, [0.1]), rank(1, [0.1], allocator_peak_bytes=7)])
    assert merged.allocator_peak_bytes == 7
    assert merged.measure_start is None and merged.measure_end is None


def test_one_report_is_the_trials_as_it_is():
    only = ChildReport(status="ok", step_times_s=[0.3, 0.1])
    assert merge_reports([only]) is only
    with pytest.raises(ValueError, match="at least one rank"):
        merge_reports([])


def test_the_first_failing_rank_names_the_trials_status():
    merged = merge_reports([
        rank(0, [0.1, 0.1], world_size=3),
        rank(1, [0.1], world_size=3, status="diverged", error="loss became nan", diverged_at_step=2),
        rank(2, [], world_size=3, status="crash", error="killed by SIGKILL"),
    ])
    assert merged.status == "diverged"
    assert merged.error == "rank 1: loss became nan"
    assert merged.diverged_at_step == 2
    # a failed trial keeps the steps every rank timed, the slowest of each
    assert merge_reports([rank(0, [0.1, 0.3]), rank(1, [0.2], status="timeout")]).step_times_s == [0.2]


def test_a_failing_rank_without_an_error_text_is_named_by_its_status():
    merged = merge_reports([rank(0, [0.1], status="oom"), rank(1, [0.1])])
    assert (merged.status, merged.error) == ("oom", "rank 0: oom")


def test_ranks_that_timed_different_step_counts_are_a_crash_naming_them():
    reports = [rank(0, [0.1] * 10, world_size=3), rank(1, [0.1] * 9, world_size=3),
               rank(2, [0.1] * 10, world_size=3)]
    merged = merge_reports(reports)
    assert merged.status == "crash"
    assert merged.error == ("the ranks timed different numbers of steps, so no step can be matched "
                            "across them: 10 on ranks 0, 2; 9 on rank 1")
    assert merged.step_times_s == []
    assert step_count_disagreement(reports[:1] + reports[2:]) is None


def test_a_reports_rank_and_world_size_default_to_one_process():
    old = ChildReport.model_validate_json('{"status": "ok", "step_times_s": [0.1]}')  # written before ranks
    assert (old.rank, old.world_size) == (0, 1)
    with pytest.raises(ValueError, match=r"rank must be in \[0, 2\)"):
        ChildReport(status="ok", rank=2, world_size=2)


def test_global_batch_is_the_per_rank_batch_times_the_ranks():
    spec = TrialSpec(workload="mlp", batch_size=32)
    assert global_batch(spec) == 32
    assert global_batch(spec.model_copy(update={"world_size": 2})) == 64


def test_a_two_rank_trials_throughput_counts_the_global_batch():
    spec = TrialSpec(workload="mlp", batch_size=32, world_size=2)
    # per step the slowest rank: [0.15, 0.20, 0.30], median 0.20 s; 2 x 32 = 64 samples a step
    outcome = Outcome(reports=[
        rank(0, [0.10, 0.20, 0.30], losses=[1.0, 0.5], measure_start=10.0, measure_end=12.0),
        rank(1, [0.15, 0.12, 0.25], losses=[7.0, 7.0], measure_start=10.1, measure_end=12.1),
    ])
    result = build_result(spec, outcome, "run")
    m = result.metrics
    assert result.status == "ok"
    assert result.step_times_s == [0.15, 0.20, 0.30]
    assert m.step_time_ms_median == pytest.approx(200.0)
    assert m.samples_per_s == pytest.approx(64 / 0.20)  # 320, not 32 / 0.20
    assert m.epoch_seconds == pytest.approx(get_workload("mlp").dataset.train_size / 320)
    assert m.steps_measured == 3 and m.final_loss == 0.5


def test_a_two_rank_trials_energy_per_sample_counts_the_global_batch():
    spec = TrialSpec(workload="mlp", batch_size=8, world_size=2)
    samples = [{"t": 9.0 + 0.1 * i, "gpu_energy_j": 10.0 * i} for i in range(41)]  # 100 W
    outcome = Outcome(reports=[rank(0, [0.1] * 20, measure_start=10.0, measure_end=12.0),
                               rank(1, [0.1] * 20, measure_start=10.0, measure_end=12.0)],
                      samples=samples, energy_method="gpu: nvml-counter")
    m = build_result(spec, outcome, "run").metrics
    assert m.energy_j == pytest.approx(200.0)
    assert m.energy_per_sample_j == pytest.approx(200.0 / (20 * 16))  # 20 steps x (2 x 8) samples


def test_a_two_rank_training_runs_throughput_counts_the_global_batch():
    spec = TrialSpec(workload="mlp", batch_size=8, world_size=2, train=TrainOptions(dataset="digits", epochs=1))
    epochs = [EpochRecord(epoch=1, steps=10, train_loss=1.0, accuracy=0.5, train_seconds=2.0, eval_seconds=0.1)]
    outcome = Outcome(reports=[rank(0, [], epochs=epochs, train_samples=160),
                               rank(1, [], epochs=epochs, train_samples=160)])
    m = build_result(spec, outcome, "run").metrics
    assert m.samples_per_s == pytest.approx(10 * 16 / 2.0)  # rank 0's 10 steps, 16 samples each


def test_a_failing_rank_fails_the_stored_trial_and_leaves_no_throughput():
    spec = TrialSpec(workload="mlp", batch_size=8, world_size=2)
    outcome = Outcome(reports=[rank(0, [0.1] * 5), rank(1, [], status="crash", error="segfault")])
    result = build_result(spec, outcome, "run")
    assert (result.status, result.error) == ("crash", "rank 1: segfault")
    assert result.metrics.samples_per_s is None


def test_an_outcome_has_a_report_per_rank():
    with pytest.raises(ValueError, match="at least one"):
        Outcome(reports=[])
    outcome = Outcome(reports=[rank(0, [0.1, 0.1]), rank(1, [0.2, 0.05])])
    assert outcome.report.step_times_s == [0.2, 0.1]


def test_cpu_time_adds_up_over_the_ranks_and_stays_unknown_if_one_lacks_it():
    assert merge_reports([rank(0, [0.1], measure_cpu_s=1.5), rank(1, [0.1], measure_cpu_s=2.0)]).measure_cpu_s == 3.5
    assert merge_reports([rank(0, [0.1], measure_cpu_s=1.5), rank(1, [0.1])]).measure_cpu_s is None


def test_cpu_time_per_step_is_the_trials_cpu_seconds_over_its_timed_steps():
    spec = TrialSpec(workload="mlp", device="cpu", batch_size=8)
    report = ChildReport(status="ok", step_times_s=[0.1] * 4, measure_cpu_s=0.6, measure_start=1.0, measure_end=2.0)
    assert build_result(spec, Outcome(reports=[report]), "run").metrics.cpu_ms_per_step == pytest.approx(150.0)


def test_a_gpts_epoch_time_counts_its_corpus_in_sequences_of_the_trials_context():
    # 9,035,582,198 tokens // 64 = 141,180,971 sequences at the tiny preset, 16x those of GPT-2's
    # 1024: an epoch at 100 samples/s is 1,411,809.71 s, not the 88,238 s of 8,823,810 sequences
    spec = TrialSpec(workload="gpt", batch_size=8)
    result = build_result(spec, Outcome(reports=[rank(0, [0.08, 0.08, 0.08], world_size=1, losses=[5.0], measure_start=1.0,
                                                      measure_end=2.0)]), "run")
    assert result.metrics.samples_per_s == pytest.approx(100.0)
    assert result.metrics.dataset_size == 141_180_971
    assert result.metrics.epoch_seconds == pytest.approx(1_411_809.71)
