"""Metrics are defined once (rigbench.metrics): the model, the trackers' declarations, the
runner's copying and the flat rows (`--json`, CSV) all follow that one definition."""

from __future__ import annotations

import csv
import io
import os
import time

import pytest

from rigbench.child_report import ChildReport
from rigbench.metrics import METRIC_NAMES, METRICS, SOURCES, Metrics
from rigbench.runner.assemble import build_result
from rigbench.runner.launchers import Outcome
from rigbench.spec import ROW_HEAD_COLUMNS, EpochRecord, Result, TrialSpec
from rigbench.store.export import to_csv
from rigbench.trackers import nvml
from rigbench.trackers.sampler import Tracker
from rigbench.trackers.summary import ALL_FIELDS, MIB, TRACKER_FIELDS
from tests.unit.fakes import FakeNVML

#: The row keys documented before metrics were generated (README "JSON fields" and
#: "Training on real data"): output stays compatible, so each must stay.
DOCUMENTED_ROW_KEYS = (
    "id run_id created_at workload workload_options framework device device_name batch_size "
    "precision threads status error samples_per_s samples_per_s_ci step_time_ms_median "
    "step_time_ms_iqr step_time_cv noisy steps_measured first_step_s warmup_s cpu_util_pct_mean "
    "cpu_util_pct_p95 system_cpu_pct_mean system_cpu_pct_p95 rss_peak_mib gpu_util_pct_mean "
    "gpu_mem_peak_mib allocator_peak_mib params flops_per_sample dataset epoch_seconds software "
    "lr compile channels_last suggested_lr bytes_per_sample epochs accuracy_per_epoch "
    "final_accuracy best_accuracy target_accuracy seconds_to_target epochs_to_target "
    "train_seconds eval_seconds input_fraction copy_fraction diverged_at_epoch final_extra"
).split()


def _result(**metrics) -> Result:
    return Result(id=1, run_id="r", created_at="2026-01-01T00:00:00+00:00",
                  spec=TrialSpec(workload="cnn", batch_size=8, threads=4), status="ok", threads=2,
                  metrics=Metrics(**metrics))


def test_every_metric_has_a_unit_a_known_source_and_a_description():
    assert METRIC_NAMES == tuple(Metrics.model_fields)
    assert len(set(METRIC_NAMES)) == len(METRIC_NAMES)
    for m in METRICS:
        assert m.source in SOURCES, m
        assert m.about.strip(), m
    by_name = {m.name: m for m in METRICS}
    assert by_name["gpu_power_w_mean"].unit == "W" and by_name["gpu_power_w_mean"].source == "tracker"
    assert by_name["params"].source == "counting"


def test_every_tracker_field_is_a_tracker_metric_and_every_tracker_metric_has_one_producer():
    produced = [f.metric for f in ALL_FIELDS]
    tracker_metrics = sorted(m.name for m in METRICS if m.source == "tracker")
    assert sorted(produced) == tracker_metrics  # each once, and nothing else
    assert set(produced) <= set(METRIC_NAMES)


def test_each_tracker_declares_sample_keys_it_really_produces():
    tracker = Tracker(os.getpid(), interval=0.02)
    tracker.start()
    deadline = time.monotonic() + 10
    while not tracker.samples and time.monotonic() < deadline:
        time.sleep(0.02)
    samples = tracker.stop()
    assert samples and tracker.error is None
    cpu_sample = samples[0]
    fake = FakeNVML(os.getpid())
    gpu = nvml.gpu_sample(fake, fake.nvmlDeviceGetHandleByIndex(0), os.getpid())
    assert {f.sample_key for f in TRACKER_FIELDS["cpu"]} <= set(cpu_sample)
    assert {f.sample_key for f in TRACKER_FIELDS["nvml"]} <= set(gpu)


def test_row_is_the_head_columns_then_every_metric_then_software_final_extra_and_ranks():
    row = _result(samples_per_s=10.0, samples_per_s_ci=(9.0, 11.0), gpu_power_w_mean=250.0).row()
    assert tuple(row) == ROW_HEAD_COLUMNS + METRIC_NAMES + ("software", "final_extra", "ranks")
    assert row["ranks"] == []  # one process: no rank records
    assert set(DOCUMENTED_ROW_KEYS) <= set(row)
    for name in ("final_loss", "gpu_util_pct_p95", "dataset_size", "step_time_ms_mean",
                 "gpu_power_w_mean", "gpu_power_w_peak", "kind", "world_size"):
        assert name in row
    assert row["samples_per_s_ci"] == [9.0, 11.0]  # a list, as JSON writes it
    assert row["gpu_power_w_mean"] == 250.0
    assert row["threads"] == 2  # as the framework reported them; the spec asked for 4
    assert row["kind"] == "speed" and row["world_size"] == 1


def test_final_extra_is_the_last_epochs_other_losses():
    r = _result()
    r.epoch_records = [EpochRecord(epoch=1, steps=1, train_loss=1.0, train_seconds=1.0, eval_seconds=0.0,
                                   extra={"recon_mse": 0.5})]
    assert r.row()["final_extra"] == {"recon_mse": 0.5}


def test_csv_columns_follow_the_row():
    text = to_csv([_result(gpu_power_w_peak=300.0)])
    reader = csv.DictReader(io.StringIO(text))
    assert tuple(reader.fieldnames or ()) == tuple(_result().row())
    assert next(reader)["gpu_power_w_peak"] == "300.0"


def _gpu_samples(start: float) -> list[dict]:
    """NVML-shaped samples every 0.1 s from `start`: power 200, 220, 240, 260 W; one sample
    before the window at 900 W that must not count."""
    fake = FakeNVML(123)
    handle = fake.nvmlDeviceGetHandleByIndex(0)
    base = nvml.gpu_sample(fake, handle, 123, nvml.OthersCompute(fake, handle))
    out = [{"t": start - 0.5, "proc_cpu_pct": 1.0, "sys_cpu_pct": 1.0, "others_cpu_pct": 0.0, "rss_bytes": float(MIB),
            **base, "gpu_power_w": 900.0}]
    for i in range(4):
        out.append({"t": start + 0.1 * (i + 1), "proc_cpu_pct": 50.0, "sys_cpu_pct": 60.0, "others_cpu_pct": 10.0,
                    "rss_bytes": float(100 * MIB), **base, "gpu_power_w": 200.0 + 20 * i})
    for s in out:  # cumulative energy counters (GPU, RAPL package and DRAM), from before the window
        s.update(gpu_energy_j=(s["t"] - start + 1) * 230.0, cpu_energy_j=(s["t"] - start + 1) * 50.0,
                 dram_energy_j=(s["t"] - start + 1) * 5.0)
    return out


def test_build_result_stores_every_declared_tracker_field_gpu_power_included():
    spec = TrialSpec(workload="cnn", batch_size=8, device="cuda:0")
    report = ChildReport(status="ok", measure_start=1000.0, measure_end=1000.4,
                         step_times_s=[0.1, 0.11, 0.12, 0.1], losses=[2.0, 1.5])
    samples = _gpu_samples(1000.0)
    result = build_result(spec, Outcome(reports=[report], samples=samples), run_id="r")
    m = result.metrics
    assert m.gpu_power_w_mean == pytest.approx(230.0)
    assert m.gpu_power_w_peak == pytest.approx(260.0)
    assert m.gpu_util_pct_mean == 42 and m.gpu_util_pct_p95 == 42
    assert m.gpu_mem_peak_mib == 1024  # the fake's 1 GiB for the tracked pid
    assert m.rss_peak_mib == pytest.approx(100.0)
    assert m.final_loss == 1.5 and m.step_time_ms_mean == pytest.approx(107.5)
    for field in ALL_FIELDS:
        assert getattr(m, field.metric) is not None, field
    row = result.row()
    assert row["gpu_power_w_mean"] == pytest.approx(230.0) and row["gpu_power_w_peak"] == pytest.approx(260.0)


def test_build_result_without_gpu_samples_leaves_gpu_metrics_empty():
    spec = TrialSpec(workload="cnn", batch_size=8)
    report = ChildReport(status="ok", measure_start=1000.0, measure_end=1000.4, step_times_s=[0.1, 0.1])
    samples = [{k: v for k, v in s.items() if not k.startswith("gpu_")} for s in _gpu_samples(1000.0)]
    m = build_result(spec, Outcome(reports=[report], samples=samples), run_id="r").metrics
    assert m.cpu_util_pct_mean == pytest.approx(50.0)
    assert m.gpu_power_w_mean is None and m.gpu_power_w_peak is None and m.gpu_mem_peak_mib is None


def test_language_models_report_tokens_per_second_from_the_context_they_ran():
    """tokens/s = samples/s x the trial's sequence length: the options' context for the gpt,
    the LSTM's 32 steps; none for a network whose input is no token sequence."""
    from rigbench.runner.assemble import tokens_per_s

    report = ChildReport(status="ok", step_times_s=[0.1, 0.1, 0.1])
    gpt = build_result(TrialSpec(workload="gpt", workload_options={"context": 128}, batch_size=8),
                       Outcome(reports=[report], samples=[]), run_id="r").metrics
    assert gpt.samples_per_s == pytest.approx(80.0) and gpt.tokens_per_s == pytest.approx(80.0 * 128)
    assert tokens_per_s(TrialSpec(workload="gpt", workload_options={"preset": "small"}, batch_size=1), 2.0) == 2048
    assert tokens_per_s(TrialSpec(workload="lstm", batch_size=1), 10.0) == 320
    cnn = build_result(TrialSpec(workload="cnn", batch_size=8), Outcome(reports=[report], samples=[]), run_id="r")
    assert cnn.metrics.samples_per_s and cnn.metrics.tokens_per_s is None
    assert tokens_per_s(TrialSpec(workload="gpt", batch_size=8), None) is None
    # a training run's samples/s (analysis/training.train_summary) counts the same way
    train = TrialSpec(workload="gpt", batch_size=8, train={"dataset": "pysrc", "epochs": 1})
    assert tokens_per_s(train, 10.0) == 640
    assert "tokens_per_s" in build_result(TrialSpec(workload="gpt", batch_size=8),
                                          Outcome(reports=[report], samples=[]), run_id="r").row()
