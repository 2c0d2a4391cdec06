"""Every metric of a trial, defined once: name, type, unit, description and source.

`Metrics` is the one definition. Each field is declared with `metric(unit, source, about)`,
so its unit, where it comes from and its one-line description sit on the same line as its
type; `METRICS` lists them in declaration order, and that order is the order of the metric
columns in `Result.row()` (`--json`, `results export` JSON and CSV). Adding a metric is one
line here plus the code that fills it (a tracker declares its fields in trackers/summary.py;
the runner copies them by that declaration).

Sources:
- `protocol`: the trial's timed steps, as the child process reports them (step times, losses,
  warm-up, the framework allocator's peak).
- `tracker`: a parent-side sampler, summarised over the measured window
  (trackers/summary.py says which tracker produces which field).
- `training`: the epochs of a training run (`rigbench train`; analysis/training.py).
- `lr_find`: a learning-rate range test (`rigbench lr-find`; analysis/lr_find.py).
- `counting`: facts counted rather than timed: parameters, FLOPs, bytes, data set sizes.
- `ranks`: a data-parallel trial's per-rank reports combined (analysis/ranks.py: straggler
  ratio, communication share, memory per rank as max and sum); empty for one process.
- `launch`: the parent's own clock around the whole trial, from starting its process to its
  result (runner/session.py).
- `energy`: the energy tracker's sources combined (runner/assemble.py): the total, per sample,
  what was read and why anything was not; with `--energy estimate`, a separate, labelled
  estimate for the sources that were not read (analysis/energy_estimate.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

Source = Literal["protocol", "tracker", "training", "lr_find", "counting", "energy", "ranks", "launch"]
SOURCES: tuple[str, ...] = get_args(Source)


def metric(unit: str, source: Source, about: str, default: Any = None) -> Any:
    """A Metrics field: its default (None: a failed trial has few metrics) with its unit,
    source and description attached (read back through METRICS)."""
    return Field(default, description=about, json_schema_extra={"unit": unit, "source": source})


class Metrics(BaseModel):
    """The summary numbers of a trial (all optional: a failed trial has few).
    Accuracy figures are fractions (0.9 = 90%)."""

    samples_per_s: float | None = metric(
        "samples/s", "protocol", "throughput: batch (data parallel: global_batch, every rank together) / median step time "
                                "(training: samples / training time)")
    samples_per_s_ci: tuple[float, float] | None = metric(
        "samples/s", "protocol", "95% CI of samples_per_s [low, high] (analysis/stats.median_ci)")
    tokens_per_s: float | None = metric(
        "tokens/s", "protocol", "language models (token input: lstm, gpt): samples_per_s x the sequence length "
                                "the trial ran (its options' context); the unit language-model speeds are quoted in")
    step_time_ms_median: float | None = metric("ms", "protocol", "median time of one timed training step")
    step_time_ms_iqr: float | None = metric("ms", "protocol", "interquartile range of the step times")
    step_time_cv: float | None = metric("", "protocol", "coefficient of variation of the step times")
    noisy: bool | None = metric(
        "", "protocol", "step_time_cv above the noise threshold (analysis/stats.NOISY_CV)")
    steps_measured: int = metric("steps", "protocol", "timed steps kept", default=0)
    first_step_s: float | None = metric(
        "s", "protocol", "the first step alone (compilation, allocation, autotuning)")
    warmup_s: float | None = metric("s", "protocol", "all untimed warm-up steps, the first included")
    cpu_ms_per_step: float | None = metric(
        "ms", "protocol", "CPU time (user + system, all threads) of the trial's process per timed step "
                          "(data parallel: every rank's, summed)")
    cpu_util_pct_mean: float | None = metric(
        "%", "tracker", "trial's process tree CPU use, mean (100 = every logical core busy)")
    cpu_util_pct_p95: float | None = metric("%", "tracker", "trial's process tree CPU use, 95th percentile")
    system_cpu_pct_mean: float | None = metric("%", "tracker", "whole machine's CPU use, mean")
    system_cpu_pct_p95: float | None = metric("%", "tracker", "whole machine's CPU use, 95th percentile")
    others_cpu_pct_mean: float | None = metric(
        "%", "tracker", "other processes' CPU use while the trial was timed, mean: the whole machine's less the "
                        "trial's, per sample (100 = every logical core); `busy` from analysis/contention.BUSY_OTHERS_PCT")
    rss_peak_mib: float | None = metric("MiB", "tracker", "peak resident memory of the trial's process tree")
    gpu_util_pct_mean: float | None = metric("%", "tracker", "GPU busy time (NVML utilisation), mean")
    gpu_mem_peak_mib: float | None = metric(
        "MiB", "tracker", "peak GPU memory of the trial's processes (NVML; else device-wide)")
    allocator_peak_mib: float | None = metric(
        "MiB", "protocol", "peak memory held by the framework's allocator (data parallel: the largest rank's)")
    capped_peak_mib: float | None = metric(
        "MiB", "protocol", "under --memory-limit (CPU): the peak of what the cap counts, resident memory when it "
                           "was set plus address space mapped since (RLIMIT_AS); max-batch budgets this")
    params: int | None = metric("parameters", "counting", "trainable parameters of the network")
    flops_per_sample: float | None = metric(
        "FLOP", "counting", "training FLOPs per sample (forward + backward)")
    dataset: str | None = metric(
        "", "counting", "data set: the workload's reference set, or the one trained on")
    epoch_seconds: float | None = metric(
        "s", "protocol", "one epoch of `dataset`: its size / samples_per_s (training runs: measured)")
    suggested_lr: float | None = metric(
        "", "lr_find", "the range test's suggested learning rate (docs/STRATEGY.md)")
    bytes_per_sample: float | None = metric(
        "bytes", "counting", "estimated device-memory traffic per training sample (roofline)")
    bytes_estimate_revision: int | None = metric(
        "", "counting", "the memory-traffic estimate's revision behind bytes_per_sample: 2 counts the trial's "
                        "precision and fused attention; none stored: an earlier count, fp32 bytes, attention unfused")
    epochs: int | None = metric("epochs", "training", "epochs trained")
    accuracy_per_epoch: list[float | None] | None = metric(
        "fraction", "training", "held-out accuracy after each epoch")
    final_accuracy: float | None = metric("fraction", "training", "held-out accuracy after the last epoch")
    best_accuracy: float | None = metric("fraction", "training", "best held-out accuracy over the epochs")
    target_accuracy: float | None = metric(
        "fraction", "training", "the accuracy asked for (--target-accuracy)")
    target_loss: float | None = metric(
        "nats", "training", "the held-out loss asked for (--target-loss; language models: nats per token)")
    seconds_to_target: float | None = metric(
        "s", "training", "training time until held-out accuracy first reached the target (or the held-out "
                         "loss first fell to the target loss)")
    epochs_to_target: int | None = metric(
        "epochs", "training", "epochs until held-out accuracy first reached the target (or the held-out "
                              "loss first fell to the target loss)")
    eval_loss_per_epoch: list[float | None] | None = metric(
        "", "training", "held-out loss after each epoch (language models: next-token cross-entropy, nats per token)")
    final_eval_loss: float | None = metric("", "training", "held-out loss after the last epoch")
    best_eval_loss: float | None = metric("", "training", "lowest held-out loss over the epochs")
    perplexity: float | None = metric(
        "", "training", "language models: exp(final_eval_loss), the held-out perplexity per token")
    bits_per_byte: float | None = metric(
        "bits", "training", "byte-level text: final_eval_loss / ln 2, held-out bits per byte")
    baseline_loss: float | None = metric(
        "nats", "training", "text: the unigram entropy of the training bytes, the held-out loss of a model that "
                            "ignores context (a model must get below it)")
    train_seconds: float | None = metric(
        "s", "training", "training time over all epochs, evaluation excluded")
    eval_seconds: float | None = metric("s", "training", "evaluation time over all epochs")
    input_fraction: float | None = metric(
        "fraction", "training", "share of training time waiting for batches")
    copy_fraction: float | None = metric(
        "fraction", "training", "share of training time in host-to-device copies")
    diverged_at_epoch: int | None = metric("epoch", "training", "epoch whose loss became non-finite, if any")
    step_time_ms_mean: float | None = metric("ms", "protocol", "mean time of one timed training step")
    final_loss: float | None = metric(
        "", "protocol", "the last training loss (training runs: last epoch's mean)")
    dataset_size: int | None = metric("samples", "counting", "training samples in `dataset`")
    gpu_util_pct_p95: float | None = metric(
        "%", "tracker", "GPU busy time (NVML utilisation), 95th percentile")
    gpu_power_w_mean: float | None = metric(
        "W", "tracker", "GPU board power draw (NVML), mean over the measured window")
    gpu_power_w_peak: float | None = metric(
        "W", "tracker", "GPU board power draw (NVML), highest sample in the measured window")
    gpu_other_processes_max: float | None = metric(
        "processes", "tracker", "other processes holding a context on the trial's GPU in the measured window, most at "
                                "once (NVML's compute-process list: who holds memory, not who computes; none where "
                                "ours cannot be told apart, e.g. in a container)")
    gpu_others_sm_pct_mean: float | None = metric(
        "%", "tracker", "share of the measured window in which other processes' kernels ran on the trial's GPU "
                        "(NVML's per-process utilisation), mean; none where unreadable or where ours cannot be "
                        "told apart")
    gpu_energy_j: float | None = metric(
        "J", "tracker", "GPU energy over the measured window (NVML energy counter; see energy_method)")
    cpu_energy_j: float | None = metric(
        "J", "tracker", "CPU package energy over the measured window (RAPL, all sockets, other processes included)")
    dram_energy_j: float | None = metric("J", "tracker", "DRAM energy over the measured window (RAPL)")
    cpu_power_w_mean: float | None = metric("W", "tracker", "CPU package power (RAPL): cpu_energy_j / window")
    cpu_power_w_peak: float | None = metric(
        "W", "tracker", "CPU package power (RAPL), highest between two samples in the window")
    dram_power_w_mean: float | None = metric("W", "tracker", "DRAM power (RAPL): dram_energy_j / window")
    dram_power_w_peak: float | None = metric(
        "W", "tracker", "DRAM power (RAPL), highest between two samples in the window")
    energy_j: float | None = metric(
        "J", "energy", "measured energy over the window: the sum of the gpu/cpu/dram figures that were read")
    energy_per_sample_j: float | None = metric(
        "J/sample", "energy", "energy_j per training sample processed in the window (training: evaluation included)")
    energy_per_epoch_j: float | None = metric(
        "J", "training", "measured energy per epoch, evaluation included (mean over the epochs)")
    energy_to_target_j: float | None = metric(
        "J", "training", "measured energy until held-out accuracy first reached the target")
    energy_method: str | None = metric(
        "", "energy", "what energy was read, per source (gpu: nvml-counter or nvml-power-integrated; cpu: rapl-...)")
    energy_note: str | None = metric(
        "", "energy", "why an energy source was not read, or why a figure is approximate")
    # Only with `--energy estimate` (MeasureOptions.energy); never added into energy_j.
    energy_estimate_j: float | None = metric(
        "J", "energy", "ESTIMATE, not measured: sources without a counter, TDP x utilisation x window "
                       "(cpu: TDP x busy threads / the package's threads; gpu: TDP x gpu_util_pct_mean/100)")
    energy_estimate_per_sample_j: float | None = metric(
        "J/sample", "energy", "ESTIMATE, not measured: energy_estimate_j per training sample processed in the window")
    energy_estimate_basis: str | None = metric(
        "", "energy", "how energy_estimate_j was estimated per source (TDP, spec-sheet row, share busy, "
                      "window), or why a source could not be")
    global_batch: int | None = metric(
        "samples", "counting", "samples per training step over every rank: batch_size x world_size")
    straggler_ratio: float | None = metric(
        "", "ranks", "slowest rank's mean step time / fastest rank's (1.0 = even; data parallel only)")
    comm_share: float | None = metric(
        "fraction", "ranks", "share of a synchronous step spent synchronising gradients: "
                             "1 - no-sync median / median, per-step maxima over the ranks")
    nosync_step_time_ms_median: float | None = metric(
        "ms", "ranks", "median step without gradient synchronisation (DDP no_sync), per-step max over the ranks")
    rank_rss_peak_mib_max: float | None = metric("MiB", "ranks", "largest rank process's own peak resident memory")
    rank_rss_peak_mib_sum: float | None = metric(
        "MiB", "ranks", "SUM over the ranks of each process's own peak resident memory (peaks may not coincide)")
    rank_allocator_peak_mib_sum: float | None = metric(
        "MiB", "ranks", "SUM over the ranks of each allocator's peak (per-rank maximum: allocator_peak_mib)")
    replicas_identical: bool | None = metric(
        "", "ranks", "every rank held the same parameters (sha256) after the timed steps")
    allreduce_grad_ms: float | None = metric(
        "ms", "ranks", "pre-run check: one all-reduce of the model's fp32 gradient bytes (slowest rank's median)")
    allreduce_busbw_gbs: float | None = metric(
        "GB/s", "ranks", "pre-run check: all-reduce bus bandwidth at the gradient bytes (nccl-tests: "
                         "bytes/time x 2(n-1)/n)")
    allreduce_latency_us: float | None = metric(
        "µs", "ranks", "pre-run check: all-reduce time of the smallest message (4 KiB)")
    allreduce_table: list[list[float]] | None = metric(
        "", "ranks", "pre-run check: [bytes, seconds, bus bandwidth B/s] per message size")
    trial_s: float | None = metric(
        "s", "launch", "the whole trial on the parent's clock: starting its process, the framework's import and "
                       "set-up, counting, warm-up and compilation, timing, shutdown (a sweep's estimate reads it "
                       "from this machine's earlier trial of the same configuration)")


@dataclass(frozen=True)
class MetricDef:
    """One metric as METRICS lists it."""

    name: str
    unit: str
    source: Source
    about: str


def _definitions() -> tuple[MetricDef, ...]:
    defs = []
    for name, field in Metrics.model_fields.items():
        extra = field.json_schema_extra
        if not isinstance(extra, dict) or field.description is None:
            raise TypeError(f"Metrics.{name} is not declared with metric(...)")
        source = extra["source"]
        if source not in SOURCES:
            raise TypeError(f"Metrics.{name}: unknown source {source!r}")
        defs.append(MetricDef(name, str(extra["unit"]), source, field.description))  # type: ignore[arg-type]
    return tuple(defs)


#: Every metric, in the order of the row's metric columns.
METRICS: tuple[MetricDef, ...] = _definitions()
METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)
