"""Commands that advise how to use the hardware: lr-find, scaling (docs/STRATEGY.md; recommend:
cli/recommend.py)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

import typer

from rigbench import api
from rigbench.cli import interrupts
from rigbench.cli.common import (
    DATA_DIR_HELP,
    DATASET_HELP,
    DB_HELP,
    _check_precision,
    _run_with_progress,
    app,
    db_flag,
    energy_option,
    framework_option,
    handles_usage_errors,
    no_answer,
    parse_compile,
    stored_text,
)
from rigbench.cli.console import downloading, err, out
from rigbench.compile_modes import CompileMode
from rigbench.errors import UsageError
from rigbench.json_text import strict_json
from rigbench.reports.table_fit import Column, FitTable
from rigbench.spec import EnergyMode, Result
from rigbench.units import parse_positive_ints, split_list
from rigbench.workloads import get_workload

if TYPE_CHECKING:
    from rigbench.analysis.process_scaling import ProcessRow
    from rigbench.analysis.scaling import ScalingRow


def _print(text: str) -> None:
    out.print(text, highlight=False, markup=False, soft_wrap=True)


def _finish(outcome: api.RunOutcome, planned: int, db: str | None) -> None:
    """An interrupted command's last line, after what its finished trials show (as sweep and
    max-batch do): what was kept, and the command that lists them; exit 128 + the signal."""
    if outcome.interrupted:
        see = (f"; see them: rigbench results list --run {outcome.run_id}{db_flag(db)}"
               if any(r.status != "interrupted" for r in outcome.results) else "")
        err.print(interrupts.kept_text(outcome.results, planned, "trial", outcome.stopped,
                                       f"{outcome.db_url} (run {outcome.run_id})") + see,
                  highlight=False, markup=False, soft_wrap=True)
        raise interrupts.interrupted_exit()


def _check_positive(**values: int | None) -> None:
    for name, value in values.items():
        if value is not None and value < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")


# --------------------------------------------------------------------------- lr-find


def lr_find_summary(result: Result) -> dict[str, Any]:
    """The JSON of `rigbench lr-find`: the suggestion, the rule and figures behind it, the curve."""
    from rigbench.analysis.lr_find import suggest_lr

    opts = result.spec.lr_find
    if opts is None:
        raise ValueError(f"trial {result.id} is not a learning-rate range test")
    s = suggest_lr(result.lr_curve, opts.steps, opts.diverge_factor)
    if result.status != "ok":  # no curve to read: say nothing about one
        s = type(s)(None, s.rule, None, None, None, len(result.lr_curve), s.skipped, f"the trial ended {result.status}")
    return {
        "trial_id": result.id, "run_id": result.run_id, "status": result.status, "error": result.error,
        "workload": result.spec.workload, "dataset": opts.dataset, "train_samples": result.metrics.dataset_size,
        "device": result.spec.device, "device_name": result.device_name, "batch_size": result.spec.batch_size,
        "precision": result.spec.precision, "threads": result.threads,
        "optimizer": get_workload(result.spec.workload).optimizer,
        "start_lr": opts.start_lr, "end_lr": opts.end_lr, "planned_steps": opts.steps,
        "suggested_lr": s.lr, "rule": s.rule, "lr_at_min": s.lr_at_min, "min_smoothed_loss": s.min_loss,
        "lr_steepest": s.lr_steepest, "skipped_points": s.skipped, "stop": s.stop, "notes": s.notes,
        "curve": [list(p) for p in result.lr_curve],  # [lr, loss, smoothed loss] per step
    }


@app.command("lr-find", short_help="Learning-rate range test on real data.")
@handles_usage_errors
def lr_find(
    workload: str = typer.Argument(..., metavar="WORKLOAD", help="Workload to test, e.g. mlp or cnn."),
    dataset: str | None = typer.Option(None, "--dataset", help=DATASET_HELP),
    device: str = typer.Option("cpu", "--device", "-d", help="Device to run on: cpu, cuda:0, mps, xpu:0, dml:0."),
    batch_size: int | None = typer.Option(None, "--batch-size", "-b", help="Batch size (default: the workload's). The suggestion holds for this batch size."),
    start_lr: float = typer.Option(1e-6, "--start-lr", help="Learning rate of the first step."),
    end_lr: float = typer.Option(10.0, "--end-lr", help="Learning rate of the last step, if the loss has not diverged before."),
    steps: int = typer.Option(100, "--steps", help="Steps of the exponential ramp from --start-lr to --end-lr."),
    precision: str = typer.Option("fp32", "--precision", help="fp32, tf32, bf16 or fp16."),
    threads: int | None = typer.Option(None, "--threads", help="CPU threads for the framework (default: its own choice)."),
    framework: str = framework_option(),
    data_dir: str | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
    offline: bool = typer.Option(False, "--offline", help="Never download: fail with the list of files to put in place."),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON on stdout: the suggestion, its rule and figures, and the whole curve (interrupted: {interrupted, run_id, db, trial_id: null, suggested_lr: null, curve: []})."),
) -> None:
    """Learning-rate range test: grow the lr exponentially on real batches, stop when the loss diverges, suggest a rate."""
    from rigbench.analysis.lr_find import MIN_POINTS
    from rigbench.reports import terminal

    _check_precision(precision, [device])
    if not 0 < start_lr < end_lr:
        raise UsageError(f"--start-lr must be more than 0 and less than --end-lr ({end_lr:g}), got {start_lr:g}")
    if steps < MIN_POINTS + 1:  # the first step is always skipped (analysis/lr_find.py)
        raise UsageError(f"--steps must be at least {MIN_POINTS + 1}: a suggestion needs {MIN_POINTS} points "
                         "after the first, which is skipped")
    _check_positive(batch_size=batch_size, threads=threads)
    api.check_thread_count(threads)
    api.check_lr_find_workload(workload)
    api.chosen_devices(framework, [device] if device else [], default=["cpu"])  # before the data set is fetched
    with downloading() as shown:
        name = api.prepare_data(workload, dataset, data_dir, download=not offline, progress=shown)
    spec = api.plan_lr_find(workload, name, device=device, batch_size=batch_size, start_lr=start_lr,
                            end_lr=end_lr, steps=steps, data_dir=data_dir, precision=precision,  # type: ignore[arg-type]
                            threads=threads, framework=framework)
    outcome = _run_with_progress([spec], db)
    if as_json and outcome.interrupted:  # stdout stays one JSON object, as every other --json's does
        # a run is written with its first result: stopped before one, there is no run to name
        print(strict_json({"interrupted": True, "run_id": outcome.run_id if outcome.results else None,
                           "db": outcome.db_url, "trial_id": None, "suggested_lr": None, "curve": []}, indent=2))
    _finish(outcome, 1, db)
    summary = lr_find_summary(outcome.results[0])
    if as_json:
        print(strict_json(summary, indent=2))
    else:
        _print_lr_find(summary, outcome, db)
    if summary["suggested_lr"] is None:
        why = ("; ".join(summary["notes"]) if summary["status"] == "ok" else
               f"the test ended {summary['status']}: {terminal.error_line(summary['error'] or '')}")
        raise no_answer(f"lr-find has no learning rate to suggest: {why}")


def _print_lr_find(s: dict[str, Any], outcome: api.RunOutcome, db: str | None) -> None:
    # A trial that did not end ok may not have counted its samples: then the header leaves them out
    samples = f" ({s['train_samples']} training samples)" if s["train_samples"] is not None else ""
    _print(f"lr-find {s['workload']} on {s['dataset']}{samples}, "
           f"{s['device']} b{s['batch_size']} {s['precision']}, {s['optimizer']}: lr {s['start_lr']:g} -> "
           f"{s['end_lr']:g} over up to {s['planned_steps']} steps")
    if s["status"] != "ok":
        _print(f"The test ended `{s['status']}`: {s['error']}")
        return
    _print(f"Stopped: {s['stop']}.")
    if s["suggested_lr"] is None:
        _print("No suggestion: " + "; ".join(s["notes"]))
    else:
        _print(f"Suggested learning rate: {s['suggested_lr']:.3g} (for batch {s['batch_size']})")
        _print(f"  rule: {s['rule']}: minimum smoothed loss {s['min_smoothed_loss']:.4g} at lr "
               f"{s['lr_at_min']:.3g} (first {s['skipped_points']} points skipped)")
        if s["lr_steepest"] is not None:
            _print(f"  steepest descent (shown, not suggested): lr {s['lr_steepest']:.3g}")
        for note in s["notes"]:
            _print(f"  note: {note}")
    out.print(lr_curve_table(s))
    _print(f"Stored in {outcome.db_url} (trial {s['trial_id']}); every step: rigbench results show "
           f"{s['trial_id']} --json{db_flag(db)} (lr_curve: lr, loss, smoothed loss)")
    if s["suggested_lr"] is not None:
        _print(f"Try it: {train_hint(outcome.results[0], s['suggested_lr'], db)}")


def train_hint(result: Result, lr: float, db: str | None) -> str:
    """The `rigbench train` command that trains the range test's own configuration at `lr`,
    quoted for a shell; the database as other hints name it (db_flag: no password)."""
    from rigbench.experiments.lr_find import train_argv

    return "rigbench " + shlex.join(train_argv(result, lr)) + db_flag(db)


def lr_curve_table(s: dict[str, Any]) -> FitTable:
    """A few points of the range test's curve (lr_find_summary), its minimum marked."""
    from rigbench.analysis.lr_find import compact_curve

    table = FitTable([Column("lr", "right"), Column("smoothed loss", "right"), Column("")],
                     title="curve (every few steps)")
    keep = [s["lr_at_min"]] if s["lr_at_min"] is not None else []
    for lr, loss in compact_curve(s["curve"], rows=8, keep_lrs=keep):
        table.add_row(f"{lr:.3g}", f"{loss:.4f}", "<- minimum" if lr in keep else "")
    return table


# --------------------------------------------------------------------------- scaling


def _compile_variants(compile_: bool, modes: list[str] | None) -> bool | list[CompileMode]:
    """The scaling study's compile variants: the modes named, else True (the device's defaults)
    or False (--no-compile)."""
    if not modes:
        return compile_
    if not compile_:
        raise UsageError("--compile-mode names modes to time and --no-compile times none: drop one")
    return parse_compile(modes, "--compile-mode", switches=False)


@app.command(short_help="Speed-ups of threads, precisions, compile, processes.")
@handles_usage_errors
def scaling(
    workload: str = typer.Argument(..., metavar="WORKLOAD", help="Workload to time, e.g. cnn or resnet:depth=56."),
    device: str = typer.Option("cpu", "--device", "-d", help="Device: cpu, cuda:0, mps, xpu:0, dml:0."),
    batch_size: int | None = typer.Option(None, "--batch-size", "-b", help="Batch size of every trial (default: the workload's; its small one with --quick)."),
    threads: list[str] | None = typer.Option(None, "--threads", metavar="N", help="Thread counts, e.g. 1,2,4 (default on the CPU: 1, 2, 4, ... up to the logical cores; none on other devices)."),
    precision: list[str] | None = typer.Option(None, "--precision", metavar="P", help="Precisions to compare with fp32, e.g. bf16,fp16 (default: tf32 on CUDA, bf16, fp16)."),
    compile_: bool = typer.Option(True, "--compile/--no-compile", help="Also time the graph compiler: torch.compile, and with torch on CUDA its reduce-overhead mode (CUDA graphs); XLA in TensorFlow and Keras. Compilation is in first_step_s, not in the timed steps."),
    compile_mode: list[str] | None = typer.Option(None, "--compile-mode", metavar="MODE", help="The torch.compile modes to time instead, e.g. default,reduce-overhead,max-autotune."),
    channels_last: bool = typer.Option(True, "--channels-last/--no-channels-last", help="Also time the NHWC memory layout (convolutional workloads; others show `unsupported`)."),
    quick: bool = typer.Option(False, "--quick", help="Smoke run: small batch, 1 warm-up step, short timing windows."),
    rounds: int = typer.Option(1, "--rounds", metavar="N", help="Run the baseline and every variant N times, every other round in reverse order, so that a steady drift in the machine's speed cancels out of the speed-ups (the baseline always runs first and last too, which measures that drift)."),
    processes: list[str] | None = typer.Option(None, "--processes", metavar="N", help="Study data-parallel process counts instead, e.g. 1,2,4 (one process is always the baseline): throughput, speed-up and efficiency with CIs, next to the point predicted from one process plus the measured all-reduce of the gradients."),
    strong: bool = typer.Option(False, "--strong/--weak", help="With --processes: --weak (default) keeps -b per rank, so the global batch grows with N; --strong keeps -b as the global batch, each rank taking -b / N."),
    framework: str = framework_option(),
    energy: EnergyMode = energy_option(),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print only a JSON array of table rows on stdout."),
) -> None:
    """Speed-up of thread counts, precisions, torch.compile and channels-last over the fp32 eager
    default; with --processes, how the workload scales over data-parallel processes."""
    from rigbench.analysis.scaling import scaling_table
    from rigbench.reports import terminal

    _check_positive(batch_size=batch_size)
    # the process study times one fp32 configuration per count: a knob given with it would be
    # silently ignored, so it is refused (and --strong means nothing without --processes)
    ignored = [flag for flag, given in (("--threads", threads), ("--precision", precision),
                                        ("--compile-mode", compile_mode), ("--no-compile", not compile_),
                                        ("--no-channels-last", not channels_last), ("--rounds", rounds != 1))
               if given]
    if processes and ignored:
        raise UsageError(f"--processes studies process counts alone: drop {', '.join(ignored)} "
                         "(run the thread/precision study without --processes)")
    if strong and not processes:
        raise UsageError("--strong is for the process study: give --processes too, e.g. --processes 1,2")
    if processes:
        _process_scaling(workload, device, batch_size, parse_positive_ints(processes, "--processes"),
                         "strong" if strong else "weak", quick, framework, energy, db, as_json)
        return
    precisions = split_list(precision, "--precision") if precision else None
    specs = api.plan_scaling(workload, device, batch_size,
                             threads=parse_positive_ints(threads, "--threads") if threads else None,
                             precisions=precisions,
                             compile=_compile_variants(compile_, compile_mode),
                             channels_last=channels_last,
                             quick=quick, framework=framework, energy=energy, rounds=rounds)
    from rigbench.experiments.plan import emulated_bf16

    if slow := emulated_bf16(specs):
        err.print(f"rigbench: warning: {slow}", highlight=False, markup=False, soft_wrap=True)
    outcome = _run_with_progress(specs, db)
    rows = scaling_table(outcome.results)
    if as_json:
        print(strict_json([r.row() for r in rows], indent=2))
    elif rows:  # an interrupted study shows what finished, as sweep does
        out.print(scaling_table_view(rows, title=f"{specs[0].label()}: speed-up over the fp32 eager default"))
        drift = baseline_drift_line(rows)
        for line in ([drift] if drift else []) + terminal.busy_lines(outcome.results):
            _print(line)
        _print(f"{stored_text(outcome.results, outcome.db_url, outcome.run_id, db)} A row measured more than once shows the "
               "mean of its trials and the span of their 95% CIs; a variant whose interval overlaps the baseline's "
               "is marked 'within noise'.")
    _finish(outcome, len(specs), db)
    if not any(r.knob != "baseline" and r.speedup is not None for r in rows):
        base = next((r for r in rows if r.knob == "baseline"), None)
        why = ("no variant ended ok" if base is not None and base.samples_per_s is not None else
               f"the fp32 eager baseline ended {base.status if base else 'without a result'}")
        raise no_answer(f"scaling has no speed-up to show: {why}")


def _process_scaling(workload: str, device: str, batch_size: int | None, counts: list[int], mode: str,
                     quick: bool, framework: str, energy: EnergyMode, db: str | None, as_json: bool) -> None:
    from rigbench.analysis.process_scaling import process_scaling_rows, scaling_verdict
    from rigbench.reports import terminal

    specs = api.plan_process_scaling(workload, counts, device, batch_size, mode=mode, quick=quick,
                                     framework=framework, energy=energy)
    outcome = _run_with_progress(specs, db)
    rows = process_scaling_rows(outcome.results)
    if as_json:
        print(strict_json([r.row() for r in rows], indent=2))
    elif rows:
        out.print(process_scaling_view(rows, title=f"{specs[0].label()}: {mode} scaling over processes"))
        verdict = scaling_verdict(rows)
        if verdict:
            _print(f"{workload} on {device}: {verdict}.")
        for line in terminal.busy_lines(outcome.results):
            _print(line)
        _print(f"{stored_text(outcome.results, outcome.db_url, outcome.run_id, db)} Efficiency = speed-up / processes "
               "(95% CI); predicted = one process's step (scaled to the rank's batch) + the measured all-reduce of the "
               "gradients, without overlap (docs/METHODOLOGY.md).")
    _finish(outcome, len(specs), db)
    if not any(r.processes > 1 and r.speedup is not None for r in rows):
        raise no_answer("scaling has no speed-up to show: no process count above one ended ok beside one process")


def process_scaling_view(rows: list[ProcessRow], title: str) -> FitTable:
    """The process-scaling rows as a table."""
    from rigbench.reports import terminal

    table = FitTable([
        Column("trial", "right"), Column("processes", "right", short="N"),
        Column("batch/rank", "right", priority=40, short="b/rank"), Column("global batch", "right", priority=45, short="batch"),
        Column("samples/s [95% CI]", "right", short="samples/s"), Column("speed-up", "right", priority=70),
        Column("efficiency [95% CI]", "right", priority=80, short="efficiency"),
        Column("predicted samples/s", "right", priority=50, short="predicted"),
        Column("predicted eff.", "right", priority=55, short="pred. eff."), Column("comm share", "right", priority=35, short="comm"),
        Column("straggler", "right", priority=30), Column("note", priority=20, cut=True),
    ], title=title, more="--json")

    def num(value: float | None, fmt: str) -> str:
        return "-" if value is None else fmt.format(value)

    for r in rows:
        efficiency = terminal.interval(r.efficiency, r.efficiency_ci if r.processes > 1 else None, "{:.2f}".format)
        note = "" if r.status == "ok" else f"{r.status}: {terminal.error_line(r.error)}"
        table.add_row(*terminal.cells(
            str(r.trial_id or "-"), str(r.processes), str(r.batch_per_rank), str(r.global_batch),
            terminal.interval(r.samples_per_s, r.samples_per_s_ci), num(r.speedup, "{:.2f}x"), efficiency,
            num(r.predicted_samples_per_s, "{:,.1f}"), num(r.predicted_efficiency, "{:.2f}"),
            num(r.comm_share, "{:.0%}"), num(r.straggler_ratio, "{:.2f}"), note))
    return table


def baseline_drift_line(rows: list[ScalingRow]) -> str | None:
    """What the baseline's repeats say about the machine's drift over the run, or None where the
    baseline ran once."""
    base = next((r for r in rows if r.knob == "baseline"), None)
    if base is None or base.spread is None:
        return None
    each = ", ".join(f"{s:,.1f}" for s in base.samples_per_s_trials)
    also = [r.label for r in rows if r.repeats_baseline]
    counted = f" (counting {', '.join(also)}, its own thread count)" if also else ""
    return (f"The baseline's configuration ran {len(base.samples_per_s_trials)} times{counted}: {each} samples/s, "
            f"{base.spread:.0%} apart. Identical trials of this run differed by that much, so speed-ups "
            "within it are not resolved.")


def _scaling_note(r: ScalingRow) -> str:
    from rigbench.reports import terminal

    if r.status != "ok":
        return f"{r.status}: {terminal.error_line(r.error)}"
    notes = []
    if r.spread is not None:
        notes.append(f"mean of {len(r.samples_per_s_trials)}, {r.spread:.0%} apart")
    if r.within_noise:
        notes.append("within noise")
    if r.repeats_baseline:
        notes.append("the baseline's own thread count: counted in its row")
    if r.shi2016_column:
        notes.append(f"Shi et al. 2016 Table 7: {r.shi2016_column}")
    return "; ".join(notes)


def scaling_table_view(rows: list[ScalingRow], title: str) -> FitTable:
    """The scaling rows as a table: variant, threads, samples/s, speed-up, samples/J (only
    when some row has a measured energy), note."""
    from rigbench.reports import terminal

    energy = any(r.samples_per_j is not None for r in rows)
    table = FitTable([
        Column("trial", "right"), Column("variant", cut=True), Column("threads", "right", priority=50),
        Column("samples/s [95% CI]", "right", short="samples/s"), Column("speed-up", "right"),
        *([Column("samples/J", "right", priority=60)] if energy else []), Column("note", priority=30, cut=True),
    ], title=title, more="--json")
    for r in rows:
        per_joule = [terminal.samples_per_joule_cell(r.energy_per_sample_j)] if energy else []
        table.add_row(*terminal.cells(
            str(r.trial_id or "-"), r.label, "-" if r.threads is None else str(r.threads),
            terminal.interval(r.samples_per_s, r.samples_per_s_ci),
            "1.00x (baseline)" if r.knob == "baseline" else ("-" if r.speedup is None else f"{r.speedup:.2f}x"),
            *per_joule, _scaling_note(r)))
    return table
