"""Turn a trial's reports (one per rank) and the parent's tracker samples into a Result.

The ranks' reports are merged first (launchers/merge.merge_reports: a step lasts as long as
its slowest rank); every figure counted in samples uses the global batch (`global_batch`)."""

from __future__ import annotations

import psutil

from rigbench.analysis.energy_estimate import estimate_energy
from rigbench.analysis.lr_find import suggest_lr
from rigbench.analysis.ranks import rank_metrics, rank_record
from rigbench.analysis.stats import throughput_summary
from rigbench.analysis.training import train_summary
from rigbench.child_report import ChildReport
from rigbench.hw.cpu import cpu_identity
from rigbench.metrics import METRIC_NAMES, Metrics
from rigbench.result_rules import result_problems
from rigbench.runner.launchers import Outcome
from rigbench.runner.launchers.merge import merge_reports
from rigbench.spec import LrFindOptions, Result, TrainOptions, TrialSpec
from rigbench.textlimits import clip_result
from rigbench.timestamps import now_iso
from rigbench.trackers.energy import MIN_ENERGY_WINDOW_S
from rigbench.trackers.summary import ALL_FIELDS, TRACKER_FIELDS, counter_delta, summarize
from rigbench.workloads import epoch_samples, get_workload, shaped

MIB = 2**20

def global_batch(spec: TrialSpec) -> int:
    """The samples one training step of the trial processes: `spec.batch_size` is the
    per-rank batch (what each process feeds its model), and the `spec.world_size` ranks of a
    data-parallel trial each take one per synchronous step, so the trial's global batch is
    batch_size x world_size (the batch itself for one process). Throughput (samples/s and its
    CI), epoch time and samples processed (energy per sample) all count this global batch."""
    return spec.batch_size * spec.world_size


def tokens_per_s(spec: TrialSpec, samples_per_s: float | None) -> float | None:
    """A language model's throughput in tokens (workload layout "tokens"): samples/s x the
    sequence length the trial ran, its options' context (`workloads.shaped`), so a gpt at
    context 1024 and one at 64 are not read as equally fast per sample. None for other
    layouts and without a throughput. Speed and training trials alike: both set samples/s."""
    if samples_per_s is None:
        return None
    workload = shaped(get_workload(spec.workload), spec.workload_options)
    return samples_per_s * workload.input_shape[0] if workload.layout == "tokens" else None


def build_result(spec: TrialSpec, outcome: Outcome, run_id: str) -> Result:
    """Summarise a trial: its ranks' reports merged (the slowest rank's step times), step
    statistics over the global batch, trackers over the measured window only, and epoch time
    from the workload's reference data set."""
    report = merge_reports(outcome.reports)  # once: the helpers below get it passed
    workload = get_workload(spec.workload)
    metrics = Metrics(
        params=report.params,
        flops_per_sample=report.flops_per_sample,
        bytes_per_sample=report.bytes_per_sample,
        bytes_estimate_revision=report.bytes_estimate_revision,
        first_step_s=report.first_step_s,
        warmup_s=report.warmup_s,
        dataset=workload.dataset.name,
        dataset_size=epoch_samples(workload, spec.workload_options),
        final_loss=report.losses[-1] if report.losses else None,
        global_batch=global_batch(spec),
        **(rank_metrics(outcome.reports) if spec.is_data_parallel else {}),
    )
    if report.allocator_peak_bytes is not None:
        metrics.allocator_peak_mib = report.allocator_peak_bytes / MIB
    if report.capped_peak_bytes is not None:
        metrics.capped_peak_mib = report.capped_peak_bytes / MIB
    # kind "train" and "lr_find" carry their option blocks (TrialSpec validates it)
    if spec.train is not None:
        _add_train_metrics(metrics, spec, spec.train, global_batch(spec), report)
    elif spec.lr_find is not None:
        _add_lr_find_metrics(metrics, spec.lr_find, report)
    elif report.status == "ok" and report.step_times_s:
        summary = throughput_summary(report.step_times_s, global_batch(spec), report.step_windows)
        for key in summary.keys() & set(METRIC_NAMES):  # the statistics that are metrics
            setattr(metrics, key, summary[key])
        metrics.samples_per_s_ci = (summary["samples_per_s_ci_low"], summary["samples_per_s_ci_high"])
        if report.measure_cpu_s is not None:  # one process's (data parallel: the merged report's)
            metrics.cpu_ms_per_step = 1e3 * report.measure_cpu_s / len(report.step_times_s)
        metrics.epoch_seconds = epoch_samples(workload, spec.workload_options) / summary["samples_per_s"]
    metrics.tokens_per_s = tokens_per_s(spec, metrics.samples_per_s)
    if report.measure_start is not None and report.measure_end is not None:
        window = summarize(outcome.samples, report.measure_start, report.measure_end,
                           interval_slack=spec.measure.sample_interval_s)
        for field in ALL_FIELDS:  # every tracker's declared fields, none by hand
            setattr(metrics, field.metric, window[field.metric])
        _add_energy(metrics, spec, outcome, report, report.measure_start, report.measure_end)
    return _within_rules(clip_result(Result(  # a child's error text can be any length: stored clipped
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
        step_windows=report.step_windows,
        tracker_samples=outcome.samples,
        epoch_records=report.epochs,
        loss_curve=report.loss_curve,
        lr_curve=report.lr_curve,
        ranks=[rank_record(r) for r in outcome.reports] if spec.is_data_parallel else [],
    )))


def _within_rules(result: Result) -> Result:
    """An ok result that breaks result_rules (a broken clock, a bug) is stored as a crash with
    the reasons, never as a figure: the rules a bundle's results are held to (store/bundle.py)."""
    problems = result_problems(result)
    if result.status != "ok" or not problems:
        return result
    return result.model_copy(update={"status": "crash", "error": "the measurement is not a valid result: "
                                     + "; ".join(problems)})


def _add_train_metrics(metrics: Metrics, spec: TrialSpec, opts: TrainOptions, batch: int,
                       report: ChildReport) -> None:
    """A training run's figures come from its epochs, not from the speed protocol: its data
    set is the one it trained on, and epoch time is measured, not extrapolated. `batch` is
    the global batch: rank 0's epochs count its steps, and every rank took one per step."""
    language_model = get_workload(spec.workload).metric == "perplexity"
    summary = train_summary(report.epochs, batch, opts.target_accuracy, opts.target_loss,
                            language_model=language_model,
                            byte_level=report.baseline_loss is not None)  # a baseline: it trained on a byte corpus
    for key, value in summary.items():
        setattr(metrics, key, value)
    metrics.baseline_loss = report.baseline_loss
    metrics.dataset = opts.dataset
    metrics.dataset_size = report.train_samples
    metrics.diverged_at_epoch = report.diverged_at_epoch


def _add_lr_find_metrics(metrics: Metrics, opts: LrFindOptions, report: ChildReport) -> None:
    """A learning-rate range test: its suggestion (rule in analysis/lr_find.py) and the data
    set it ran on. It has no throughput: its steps run at changing rates, one host copy each."""
    metrics.dataset = opts.dataset
    metrics.dataset_size = report.train_samples
    if report.lr_curve:
        metrics.final_loss = report.lr_curve[-1][1]
        metrics.suggested_lr = suggest_lr(report.lr_curve, opts.steps, opts.diverge_factor).lr


def _add_energy(metrics: Metrics, spec: TrialSpec, outcome: Outcome, report: ChildReport,
                start: float, end: float) -> None:
    """Total measured energy, per sample, and (training) per epoch and to the target, from the
    energy tracker's sources that were read; what was read and why not, from the tracker."""
    metrics.energy_method = outcome.energy_method
    notes = [outcome.energy_note] if outcome.energy_note else []
    read = [f for f in TRACKER_FIELDS["energy"] if f.statistic == "delta" and getattr(metrics, f.metric) is not None]
    if read:
        metrics.energy_j = sum(getattr(metrics, f.metric) for f in read)
        if end - start < MIN_ENERGY_WINDOW_S:
            notes.append(f"the measured window ({end - start:.2f} s) is under {MIN_ENERGY_WINDOW_S:g} s, and each of "
                         "its edges is read between two energy readings about 0.1 s apart: approximate; time "
                         "longer (--seconds)")
        samples = _samples_processed(spec, metrics, report)
        if samples:
            metrics.energy_per_sample_j = metrics.energy_j / samples
        if spec.train is not None:
            _add_epoch_energy(metrics, outcome.samples, report, [f.sample_key for f in read], start)
    metrics.energy_note = "; ".join(notes) or None
    if spec.measure.energy == "estimate":
        _add_energy_estimate(metrics, spec, report, end - start)


def _add_energy_estimate(metrics: Metrics, spec: TrialSpec, report: ChildReport, window_s: float) -> None:
    """`--energy estimate`: TDP x utilisation for the sources the counters did not read
    (rule in analysis/energy_estimate.py), in metrics of its own, never added to energy_j."""
    on_cpu = spec.device == "cpu"
    estimate = estimate_energy(
        window_s, cpu_measured=metrics.cpu_energy_j is not None,
        # A CPU trial's device name is the CPU's (as the roofline matches it); else ask the OS.
        cpu_name=report.device_name if on_cpu else cpu_identity().get("model"),
        cpu_util_pct=metrics.cpu_util_pct_mean, logical_cpus=psutil.cpu_count(logical=True) or 1,
        gpu=not on_cpu, gpu_measured=metrics.gpu_energy_j is not None,
        gpu_name=None if on_cpu else report.device_name, gpu_util_pct=metrics.gpu_util_pct_mean)
    metrics.energy_estimate_j = estimate.joules
    metrics.energy_estimate_basis = estimate.basis
    samples = _samples_processed(spec, metrics, report)
    if estimate.joules is not None and samples:
        metrics.energy_estimate_per_sample_j = estimate.joules / samples


def _samples_processed(spec: TrialSpec, metrics: Metrics, report: ChildReport) -> int:
    """Training samples processed in the measured window: the timed steps' global batches,
    or every epoch's training set (a training run's window holds its epochs; every rank
    reports the whole set's size, of which each trains its share); 0 when unknown."""
    if spec.train is not None:
        return (metrics.epochs or 0) * (report.train_samples or 0)
    if spec.lr_find is not None:
        return 0  # steps at changing rates, not a throughput: no per-sample figure
    return metrics.steps_measured * global_batch(spec)


def _add_epoch_energy(metrics: Metrics, samples: list[dict], report: ChildReport, keys: list[str],
                      start: float) -> None:
    """Energy between consecutive epoch ends (the first from the window's start)."""
    ends = [e.ended_at for e in report.epochs]
    if not ends or any(t is None for t in ends):
        return  # stored by an older rigbench: no epoch timestamps

    def energy(t0: float, t1: float) -> float | None:
        parts = [counter_delta(samples, key, t0, t1) for key in keys]
        return None if any(p is None for p in parts) else sum(p for p in parts if p is not None)

    bounds = [start, *(t for t in ends if t is not None)]
    per_epoch = [energy(a, b) for a, b in zip(bounds, bounds[1:])]
    if all(e is not None for e in per_epoch):
        metrics.energy_per_epoch_j = sum(e for e in per_epoch if e is not None) / len(per_epoch)
    if metrics.epochs_to_target:
        metrics.energy_to_target_j = energy(start, bounds[metrics.epochs_to_target])
