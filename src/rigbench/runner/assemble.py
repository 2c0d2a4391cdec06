"""Turn a child's report and the parent's tracker samples into a Result."""

from __future__ import annotations

from rigbench.analysis.lr_find import suggest_lr
from rigbench.analysis.stats import throughput_summary
from rigbench.analysis.training import train_summary
from rigbench.metrics import METRIC_NAMES, Metrics
from rigbench.runner.launchers import Outcome
from rigbench.spec import LrFindOptions, Result, TrainOptions, TrialSpec
from rigbench.textlimits import clip_result
from rigbench.timestamps import now_iso
from rigbench.trackers.summary import ALL_FIELDS, summarize
from rigbench.workloads import get_workload

MIB = 2**20


def build_result(spec: TrialSpec, outcome: Outcome, run_id: str) -> Result:
    """Summarise a trial: step statistics from the child's timings, trackers over the
    child's measured window only, and epoch time from the workload's reference data set."""
    report = outcome.report
    workload = get_workload(spec.workload)
    metrics = Metrics(
        params=report.params,
        flops_per_sample=report.flops_per_sample,
        bytes_per_sample=report.bytes_per_sample,
        first_step_s=report.first_step_s,
        warmup_s=report.warmup_s,
        dataset=workload.dataset.name,
        dataset_size=workload.dataset.train_size,
        final_loss=report.losses[-1] if report.losses else None,
    )
    if report.allocator_peak_bytes is not None:
        metrics.allocator_peak_mib = report.allocator_peak_bytes / MIB
    # kind "train" and "lr_find" carry their option blocks (TrialSpec validates it)
    if spec.train is not None:
        _add_train_metrics(metrics, spec.train, spec.batch_size, report)
    elif spec.lr_find is not None:
        _add_lr_find_metrics(metrics, spec.lr_find, report)
    elif report.status == "ok" and report.step_times_s:
        summary = throughput_summary(report.step_times_s, spec.batch_size)
        for key in summary.keys() & set(METRIC_NAMES):  # the statistics that are metrics
            setattr(metrics, key, summary[key])
        metrics.samples_per_s_ci = (summary["samples_per_s_ci_low"], summary["samples_per_s_ci_high"])
        metrics.epoch_seconds = workload.dataset.train_size / summary["samples_per_s"]
    if report.measure_start is not None and report.measure_end is not None:
        window = summarize(outcome.samples, report.measure_start, report.measure_end,
                           interval_slack=spec.measure.sample_interval_s)
        for field in ALL_FIELDS:  # every tracker's declared fields, none by hand
            setattr(metrics, field.metric, window[field.metric])
    return clip_result(Result(  # a child's error text can be any length: stored clipped
        run_id=run_id,
        created_at=now_iso(),
        spec=spec,
        status=report.status,
        error=report.error,
        device_name=report.device_name,
        threads=report.threads,
        metrics=metrics,
        software=report.software,
        step_times_s=report.step_times_s,
        tracker_samples=outcome.samples,
        epoch_records=report.epochs,
        loss_curve=report.loss_curve,
        lr_curve=report.lr_curve,
    ))


def _add_train_metrics(metrics: Metrics, opts: TrainOptions, batch_size: int, report) -> None:
    """A training run's figures come from its epochs, not from the speed protocol: its data
    set is the one it trained on, and epoch time is measured, not extrapolated."""
    summary = train_summary(report.epochs, batch_size, opts.target_accuracy)
    for key, value in summary.items():
        setattr(metrics, key, value)
    metrics.dataset = opts.dataset
    metrics.dataset_size = report.train_samples
    metrics.diverged_at_epoch = report.diverged_at_epoch


def _add_lr_find_metrics(metrics: Metrics, opts: LrFindOptions, report) -> None:
    """A learning-rate range test: its suggestion (rule in analysis/lr_find.py) and the data
    set it ran on. It has no throughput: its steps run at changing rates, one host copy each."""
    metrics.dataset = opts.dataset
    metrics.dataset_size = report.train_samples
    if report.lr_curve:
        metrics.final_loss = report.lr_curve[-1][1]
        metrics.suggested_lr = suggest_lr(report.lr_curve, opts.steps, opts.diverge_factor).lr
