"""The learning-rate range test (`rigbench lr-find`): one trial with `lr_find` set; the child
runs the adapter's `lr_find` and analysis/lr_find.py suggests a rate from the curve."""

from __future__ import annotations

import math

from rigbench.analysis.trials import workload_label
from rigbench.errors import UsageError
from rigbench.experiments.devices import chosen_devices
from rigbench.experiments.plan import check_batches_fill, check_thread_count, validation_message
from rigbench.spec import LrFindOptions, MeasureOptions, Precision, Result, TrialSpec
from rigbench.workloads import parse_workload_ref


def check_lr_find_workload(workload: str) -> None:
    """Refuse a workload the range test does not fit (Workload.lr_find) before any data set is
    prepared or child process started: it is known from the workload alone."""
    ref, _ = parse_workload_ref(workload)
    if not ref.lr_find:
        raise UsageError(f"lr-find needs one loss on a real data set; {ref.name} ({ref.task}) has not: "
                         "choose another workload")


def plan_lr_find(
    workload: str,
    dataset: str,
    device: str = "cpu",
    batch_size: int | None = None,
    start_lr: float = 1e-6,
    end_lr: float = 10.0,
    steps: int = 100,
    data_dir: str | None = None,
    precision: Precision = "fp32",
    threads: int | None = None,
    framework: str = "torch",
    timeout_s: float = 1800.0,
) -> TrialSpec:
    """A learning-rate range test (`rigbench lr-find`) on `dataset`, already checked by
    `prepare_data`: one trial, at the workload's reference batch unless `batch_size`, which the
    training set must fill (check_batches_fill)."""
    from rigbench.data import check_text_windows, train_samples, training_options

    ref, options = parse_workload_ref(workload)
    options = training_options(ref.name, options, dataset)  # byte text: a language model's vocab=256
    chosen = chosen_devices(framework, [device] if device else [], default=["cpu"])[0]
    check_lr_find_workload(ref.name)
    check_thread_count(threads)
    if end_lr <= start_lr:
        raise UsageError(f"--end-lr ({end_lr:g}) must be larger than --start-lr ({start_lr:g})")
    if not math.isfinite(end_lr / start_lr):  # the ramp's ratio: past a float it is inf, and every lr with it
        raise UsageError(f"--end-lr / --start-lr ({end_lr:g} / {start_lr:g}) is beyond a float: narrow the range")
    try:
        lr_find = LrFindOptions(dataset=dataset, data_dir=data_dir, start_lr=start_lr,
                                end_lr=end_lr, steps=steps)
        measure = MeasureOptions(timeout_s=timeout_s)
        spec = TrialSpec(workload=ref.name, workload_options=options, framework=framework,
                         device=chosen, batch_size=batch_size or ref.default_batch,
                         precision=precision, threads=threads, measure=measure, lr_find=lr_find)
    except ValueError as exc:
        raise UsageError(validation_message(exc)) from None
    check_text_windows(ref.name, dataset, data_dir, options)  # before the batch: 0 windows is the context's fault
    check_batches_fill([spec], dataset, train_samples(ref.name, dataset, data_dir, options))
    return spec


def train_argv(result: Result, lr: float) -> list[str]:
    """The `rigbench train` arguments that train at `lr` the configuration the range test
    `result` measured: its workload with options, data set and folder, framework, device, batch,
    precision and threads, read from the trial's spec (not from the command line), so that a
    rate found on one data set, framework or device is never tried on another. Framework,
    device and precision are always named, so the hint does not rest on train's defaults."""
    spec, opts = result.spec, result.spec.lr_find
    if opts is None:
        raise ValueError(f"trial {result.id} is not a learning-rate range test")
    argv = ["train", workload_label(result), "--dataset", opts.dataset]
    if opts.data_dir is not None:
        argv += ["--data-dir", opts.data_dir]
    argv += ["--framework", spec.framework, "--device", spec.device, "--batch-size", str(spec.batch_size),
             "--precision", spec.precision]
    if spec.threads is not None:
        argv += ["--threads", str(spec.threads)]
    return argv + ["--lr", f"{lr:.3g}"]
