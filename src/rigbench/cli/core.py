"""The core commands: run, train, workloads, devices, results show|export|flush, report
(`results list` and `results runs`: listing.py)."""

from __future__ import annotations

import contextlib
import os
import sys

import typer

from rigbench import api
from rigbench.cli import interrupts
from rigbench.cli.common import (
    COMPILE_MODE_HELP,
    DATA_DIR_HELP,
    DATASET_HELP,
    DB_HELP,
    SWITCHES,
    WHERE_HELP,
    _check_precision,
    _run_with_progress,
    app,
    db_flag,
    energy_option,
    framework_option,
    handles_usage_errors,
    no_answer,
    parse_compile,
    results_app,
    say_none_match,
    show_hint,
    stored_text,
)
from rigbench.cli.console import downloading, err, out, progress_bar, progressed, working
from rigbench.compile_modes import COMPILE_MODES, CompileMode
from rigbench.errors import UsageError
from rigbench.json_text import strict_json
from rigbench.spec import EnergyMode
from rigbench.units import (
    parse_memory_limit,
    parse_positive_floats,
    parse_positive_ints,
    split_list,
    split_workload_refs,
    with_preset,
)

PRESET_HELP = ("The named workloads' preset, e.g. `gpt --preset small` (the same as gpt:preset=small); "
               "presets: rigbench workloads.")


def _compile_setting(compile_: bool, mode: str | None, workloads: list[str] | None) -> CompileMode:
    """`--compile` is torch.compile's default mode; `--compile-mode MODE` names another. It
    takes no value here, so `--compile on` made `on` a workload: said as what it is."""
    given = {w.strip() for text in workloads or [] for w in text.split(",")}
    value = next((w for w in given if w in SWITCHES or w in COMPILE_MODES), None) if compile_ else None
    if value is not None:
        raise UsageError(f"--compile takes no value here ({value!r} was read as a workload): `--compile` alone is "
                         "torch.compile's default mode, `--compile-mode MODE` another; `rigbench sweep --compile "
                         "off,on` tries several")
    if mode is not None:
        return parse_compile([mode], "--compile-mode", switches=False)[0]
    return "default" if compile_ else "off"


@app.command(short_help="Time training steps of workloads on devices (the main job).")
@handles_usage_errors
def run(
    workloads: list[str] | None = typer.Argument(None, metavar="WORKLOAD", help="Workloads to train (default: all but the transformers gpt and vit). Options as NAME:key=value, e.g. resnet:depth=56 or gpt:preset=small. See `rigbench workloads`."),
    preset: str | None = typer.Option(None, "--preset", metavar="NAME", help=PRESET_HELP),
    device: list[str] | None = typer.Option(None, "--device", "-d", metavar="DEVICE", help="Device(s), repeated or comma-separated: cpu, cuda:0, mps, xpu:0, dml:0 (default: every available one)."),
    batch_size: list[str] | None = typer.Option(None, "--batch-size", "-b", metavar="N", help="Batch size(s), e.g. --batch-size 16,64 (default: each workload's reference batch)."),
    precision: str = typer.Option("fp32", "--precision", help="fp32, tf32 (NVIDIA Ampere+ matrix maths), bf16 or fp16 (bf16/fp16: autocast mixed precision)."),
    compile_: bool = typer.Option(False, "--compile", help="Compile the training step: torch.compile (its default mode), XLA in TensorFlow and Keras; compilation shows in first_step_s, not in the timed steps."),
    compile_mode: str | None = typer.Option(None, "--compile-mode", metavar="MODE", help=COMPILE_MODE_HELP + " (implies --compile)."),
    channels_last: bool = typer.Option(False, "--channels-last", help="NHWC memory layout (convolutional workloads only)."),
    threads: int | None = typer.Option(None, "--threads", help="CPU threads for the framework (default: the framework's own choice; with --processes, per rank: the usable cores // the ranks)."),
    processes: int = typer.Option(1, "--processes", metavar="N", help="Data-parallel ranks per trial, each with its share of the global batch: torch (torchrun + DistributedDataParallel; gloo on the CPU, NCCL and one GPU per rank on CUDA), jax (jax.distributed), tensorflow (MultiWorkerMirroredStrategy), keras-jax (keras.distribution.DataParallel on jax.distributed). --batch-size is each rank's batch; the global batch is N times it."),
    data_parallel: bool = typer.Option(False, "--data-parallel", help="Run even one process (--processes 1) through the data-parallel launcher and wrapper (DDP over NCCL or gloo, jax.distributed, TF's multi-worker strategy): compared with the same trial without it, the wrapper's own cost. Implied by --processes above 1."),
    nnodes: int = typer.Option(1, "--nnodes", metavar="N", help="Machines the trial spans (torch, jax, keras-jax, tensorflow): run the same command on each with its --node-rank; --processes ranks on each."),
    node_rank: int = typer.Option(0, "--node-rank", metavar="R", help="This machine's place, 0 to N-1; node 0 hosts the rendezvous and stores the trial with every rank's record."),
    rdzv_endpoint: str | None = typer.Option(None, "--rdzv-endpoint", metavar="HOST:PORT", help="Where the nodes meet (torch: torchrun's c10d rendezvous; jax: jax.distributed's coordinator; tensorflow: rigbench's rank store): node 0's address and a free port, the same on every node."),
    steps: int | None = typer.Option(None, "--steps", help="Time at least this many steps (default 10; 3 with --quick)."),
    seconds: float | None = typer.Option(None, "--seconds", help="...and keep timing for at least this many seconds (default 2; 0.5 with --quick)."),
    quick: bool = typer.Option(False, "--quick", help="Smoke run: small batches, 1 warm-up step, short timing windows."),
    repeat: int = typer.Option(1, "--repeat", metavar="N", help="Run every trial N times, every other round in reverse order. A trial's CI covers the noise between its steps, not between trials: `rigbench compare` judges configurations with at least two trials a side on the trials (docs/COMPARING.md)."),
    memory_limit: str | None = typer.Option(None, "--memory-limit", metavar="SIZE", help="Cap each process's memory (each rank of a data-parallel trial: N ranks may take N x SIZE), e.g. 2GiB or 512MiB; past it the trial ends as `oom`. Linux only."),
    timeout: float | None = typer.Option(None, "--timeout", help="Kill a trial after this many seconds (status `timeout`; default 600)."),
    lr: float | None = typer.Option(None, "--lr", help="Learning rate (default: the workload's)."),
    framework: list[str] | None = framework_option(many=True),
    energy: EnergyMode = energy_option(),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print only a JSON array of results on stdout (progress goes to stderr)."),
) -> None:
    """Train workloads on devices, each trial in its own process; store and show the results."""
    from rigbench.reports import terminal

    _check_precision(precision)
    if threads is not None and threads < 1:
        raise UsageError("--threads must be at least 1")
    if steps is not None and steps < 2:
        raise UsageError("--steps must be at least 2")
    if seconds is not None and seconds < 0:
        raise UsageError("--seconds cannot be negative")
    if timeout is not None and timeout <= 0:
        raise UsageError("--timeout must be more than 0 seconds")
    if lr is not None and lr <= 0:
        raise UsageError("--lr must be more than 0")
    api.check_rounds(repeat, "--repeat")
    node = api.node_launch(nnodes, node_rank, rdzv_endpoint)  # checked before any device is asked
    specs = api.plan_run(
        workloads=with_preset(split_workload_refs(workloads), preset), devices=split_list(device, "--device"),
        batch_sizes=parse_positive_ints(batch_size, "--batch-size"), precision=precision,  # type: ignore[arg-type]
        threads=threads, frameworks=split_list(framework, "--framework") or ["torch"], steps=steps,
        seconds=seconds, quick=quick,
        memory_limit_bytes=parse_memory_limit(memory_limit) if memory_limit is not None else None,
        timeout_s=timeout, lr=lr, compile=_compile_setting(compile_, compile_mode, workloads), channels_last=channels_last,
        energy=energy, processes=processes, nodes=nnodes, data_parallel=data_parallel,
    )
    specs = api.in_rounds(specs, repeat)
    if nnodes > 1:
        os.environ.update(node.env())  # the agent's part of the launch (rigbench/ranks.NodeLaunch)
    elif rdzv_endpoint:
        err.print("note: --rdzv-endpoint is ignored with --nnodes 1 (one machine's ranks meet at a free port "
                  "of their own)", highlight=False)
    if processes > 1 and threads is None:
        err.print(api.threads_per_rank_line(specs[0]), highlight=False)
    outcome = _run_with_progress(specs, db)
    if nnodes > 1 and node_rank != 0:
        ran = (f"failed in {outcome.node_failed} of {outcome.node_trials} trial(s) (why: above)" if outcome.node_failed
               else f"ran {outcome.node_trials} trial(s)")
        err.print(f"node {node_rank}: this node's ranks {ran}; node 0 stores the trials with every rank's record",
                  highlight=False, soft_wrap=True)
    if as_json:
        print(strict_json([r.row() for r in outcome.results], indent=2))
    elif outcome.results:
        out.print(terminal.results_table(outcome.results, title=f"run {outcome.run_id}"))
        for line in terminal.busy_lines(outcome.results):
            out.print(line, highlight=False, markup=False, soft_wrap=True)
        speedups = api.speedups_over_cpu(outcome.results)
        if speedups:
            out.print(terminal.speedup_table(speedups))
        hint = show_hint(outcome.results, db)
        out.print(stored_text(outcome.results, outcome.db_url, outcome.run_id, db)
                  + (f" See one trial with: {hint}" if hint else ""), highlight=False, markup=False, soft_wrap=True)
        out.print(f"Report: rigbench report --run {outcome.run_id}{db_flag(db)} --out report.html",
                  highlight=False, markup=False, soft_wrap=True)
    if outcome.interrupted:
        err.print(interrupts.kept_text(outcome.results, len(specs), "trial", outcome.stopped,
                                       f"{outcome.db_url} (run {outcome.run_id})"),
                  highlight=False, markup=False, soft_wrap=True)
        raise interrupts.interrupted_exit()


@app.command(short_help="Train on a real data set to an accuracy or loss target.")
@handles_usage_errors
def train(
    workload: str = typer.Argument(..., metavar="WORKLOAD", help="Workload to train, e.g. mlp, cnn, resnet:depth=56, gpt (on text: --dataset pysrc)."),
    preset: str | None = typer.Option(None, "--preset", metavar="NAME", help=PRESET_HELP),
    dataset: str | None = typer.Option(None, "--dataset", help=DATASET_HELP),
    epochs: int = typer.Option(10, "--epochs", help="Epochs to train, each followed by a held-out evaluation."),
    target_accuracy: float | None = typer.Option(None, "--target-accuracy", help="Report time and epochs to reach this held-out accuracy (0.9 or 90 both mean 90%)."),
    target_loss: float | None = typer.Option(None, "--target-loss", help="Report time and epochs until the held-out loss falls to this (language models: nats per token; the unigram baseline of pysrc is 3.216)."),
    max_train_samples: int | None = typer.Option(None, "--max-train-samples", metavar="N", help="Train on a random N of the training samples (text: windows of the sequence length); the held-out set stays whole."),
    lr: list[str] | None = typer.Option(None, "--lr", metavar="LR", help="Learning rate(s), e.g. --lr 0.001,0.01,0.1 (default: the workload's)."),
    batch_size: list[str] | None = typer.Option(None, "--batch-size", "-b", metavar="N", help="Batch size(s), e.g. --batch-size 32,128 (default: the workload's)."),
    device: list[str] | None = typer.Option(None, "--device", "-d", metavar="DEVICE", help="Device(s) (default: cpu)."),
    precision: str = typer.Option("fp32", "--precision", help="fp32, tf32, bf16 or fp16."),
    threads: int | None = typer.Option(None, "--threads", help="CPU threads for the framework."),
    compile_: bool = typer.Option(False, "--compile", help="Compile the training step: torch.compile (its default mode), XLA in TensorFlow and Keras; compilation is paid in epoch 1, so it counts in the training time and the time to a target."),
    compile_mode: str | None = typer.Option(None, "--compile-mode", metavar="MODE", help=COMPILE_MODE_HELP + " (implies --compile)."),
    input_mode: str = typer.Option("resident", "--input", help="resident: the data set lives on the device; loader: a DataLoader feeds it from host memory (input and copy times are reported)."),
    workers: int = typer.Option(0, "--workers", help="DataLoader worker processes (--input loader)."),
    pin_memory: bool = typer.Option(False, "--pin-memory", help="Pinned host memory for faster copies to a GPU (--input loader)."),
    data_dir: str | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
    offline: bool = typer.Option(False, "--offline", help="Never download: fail with the list of files to put in place."),
    timeout: float = typer.Option(3600, "--timeout", help="Kill a training run after this many seconds."),
    energy: EnergyMode = energy_option(),
    framework: list[str] | None = framework_option(many=True),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print only a JSON array of results on stdout."),
) -> None:
    """Train on a real data set: held-out accuracy (language models: loss, perplexity, bits per
    byte) per epoch, time and epochs to a target. Into a file or a pipe (no progress bar), one
    line per finished epoch on stderr."""
    from rigbench.reports import terminal

    devices = split_list(device, "--device")
    frameworks = split_list(framework, "--framework") or ["torch"]
    _check_precision(precision, devices or ["cpu"])
    for name in frameworks:  # before the data set is fetched (minutes), whose error would hide the typo
        api.chosen_devices(name, devices, default=["cpu"])
    if input_mode not in ("resident", "loader"):
        raise UsageError(f"--input must be resident or loader, got {input_mode!r}")
    if epochs < 1:
        raise UsageError("--epochs must be at least 1")
    if threads is not None and threads < 1:  # as `run` says it, not the spec field's words
        raise UsageError("--threads must be at least 1")
    api.check_thread_count(threads)  # before the data set is fetched
    if workers < 0:  # named by its flag, not as the spec field `workers`
        raise UsageError(f"--workers cannot be negative, got {workers}: give 0 or more")
    if timeout <= 0:
        raise UsageError("--timeout must be more than 0 seconds")
    if target_accuracy is not None:
        target_accuracy = target_accuracy / 100 if target_accuracy > 1 else target_accuracy
        if not 0 < target_accuracy <= 1:
            raise UsageError("--target-accuracy must be between 0 and 1 (or 0 and 100 as a percentage)")
    if target_loss is not None and target_loss <= 0:
        raise UsageError("--target-loss must be more than 0 (a held-out loss, e.g. 1.5)")
    if max_train_samples is not None and max_train_samples < 1:
        raise UsageError("--max-train-samples must be at least 1")
    lrs = parse_positive_floats(lr, "--lr")
    (workload,) = with_preset([workload], preset)
    with downloading() as shown:
        name = api.prepare_data(workload, dataset, data_dir, download=not offline, progress=shown)
    specs = api.plan_train(
        workload, name, epochs, lrs=lrs, batch_sizes=parse_positive_ints(batch_size, "--batch-size"),
        devices=devices, target_accuracy=target_accuracy, target_loss=target_loss,
        precision=precision,  # type: ignore[arg-type]
        threads=threads, frameworks=frameworks, data_dir=data_dir,
        input_mode=input_mode, workers=workers, max_train_samples=max_train_samples,
        pin_memory=pin_memory, timeout_s=timeout, energy=energy, compile=_compile_setting(compile_, compile_mode, [workload]),
    )
    outcome = _run_with_progress(specs, db)
    if as_json:
        print(strict_json([r.row() for r in outcome.results], indent=2))
    elif outcome.results:
        out.print(terminal.train_table(outcome.results, title=f"run {outcome.run_id}"))
        for line in (terminal.baseline_lines(outcome.results) + terminal.compile_lines(outcome.results)
                     + terminal.busy_lines(outcome.results)):
            out.print(line, highlight=False, markup=False, soft_wrap=True)
        hint = show_hint(outcome.results, db)
        out.print(stored_text(outcome.results, outcome.db_url, outcome.run_id, db)
                  + (f" Per-epoch figures: {hint}" if hint else ""), highlight=False, markup=False, soft_wrap=True)
    if outcome.interrupted:
        rest = interrupts.rest_command(specs, outcome.results)
        err.print(interrupts.kept_text(outcome.results, len(specs), "training run", outcome.stopped,
                                       f"{outcome.db_url} (run {outcome.run_id})")
                  + (f". The runs not finished: {rest}" if rest else ""), highlight=False, markup=False, soft_wrap=True)
        raise interrupts.interrupted_exit()
    if not any(r.status == "ok" for r in outcome.results):
        ended = ", ".join(sorted({r.status for r in outcome.results}))
        raise no_answer(f"no training run ended ok ({ended}; why: each run's line above)")


@app.command(short_help="List the reference workloads.")
@handles_usage_errors
def workloads(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List the reference workloads: shapes, data set size, parameters, FLOPs, origin."""
    from rigbench.reports import terminal

    rows = api.workloads_info()
    if as_json:
        print(strict_json(rows, indent=2))
    else:
        out.print(terminal.workloads_table(rows))


@app.command(short_help="List this machine's devices and their frameworks.")
@handles_usage_errors
def devices(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List this machine's devices and which frameworks can use each (each installed framework
    is asked in a child process: seconds each, side by side)."""
    from rigbench.reports import terminal

    progress = progress_bar()
    waiting: list[str] = []
    task = progress.add_task("", total=None)

    def probing(names: list[str]) -> None:
        waiting.extend(names)
        # into a pipe or a log there is no bar: say why nothing comes for seconds
        progressed(progress, task, f"asking {', '.join(names)} for devices",
                   f"asking {', '.join(names)} for devices (a child process each, seconds each)", total=len(names))

    def probed(name: str) -> None:
        waiting.remove(name)
        still = f"; waiting for {', '.join(waiting)}" if waiting else ""  # a line as each answers, into a pipe
        progressed(progress, task, f"waiting for {', '.join(waiting)}" if waiting else "done",
                   f"  {name} answered{still}", advance=1)

    with progress:
        rows = api.devices_info(on_probing=probing, on_probed=probed)
    if as_json:
        print(strict_json(rows, indent=2))
    else:
        out.print(terminal.devices_table(rows))


@results_app.command("show", short_help="Show one trial: its metrics, its spec, its machine.")
@handles_usage_errors
def results_show(
    trial_id: int = typer.Argument(..., help="The trial's id (first column of `results list`)."),
    as_json: bool = typer.Option(False, "--json", help="Print the full result with raw samples as JSON."),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Show one trial: its fields with a value, grouped and rounded; --json prints every field and raw sample."""
    from rigbench.reports import terminal
    from rigbench.store import Store

    store = Store(db, create=False)
    result = store.get(trial_id)
    if result is None:
        raise UsageError(f"no trial with id {trial_id} in {store.url}: see `rigbench results list`")
    if as_json:
        print(result.model_dump_json(indent=2))
    else:
        roof = api.result_roofline(result, api.device_calibrations(store, [result]).get(result.device_name or ""))
        out.print(terminal.result_detail(result, store.machine(result.run_id), roofline=roof,
                                         more=f"rigbench results show {trial_id} --json{db_flag(db)}"))
        for line in terminal.busy_lines([result]):
            out.print(line, highlight=False, markup=False, soft_wrap=True)


@results_app.command("export", short_help="Export results as JSON, CSV or a bundle.")
@handles_usage_errors
def results_export(
    fmt: str = typer.Option("json", "--format", help="json or csv (flat rows, the fields of `rigbench run --json`), or bundle (every field, raw samples, runs and the runs' `rigbench calibrate` peaks included: what `rigbench results import` reads)."),
    output: str | None = typer.Option(None, "--output", "-o", help="Write to this file instead of stdout."),
    run_id: str | None = typer.Option(None, "--run", help="Only this run (with --format bundle, a `rigbench calibrate` run exports its calibrations)."),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Export stored results as flat JSON or CSV rows, or as a full bundle for `results import`."""
    if fmt not in ("json", "csv", "bundle"):
        raise UsageError(f"--format must be json, csv or bundle, got {fmt!r}")
    from rigbench.store import Store
    from rigbench.store.bundle import write_bundle
    from rigbench.store.export import replacing, write_csv, write_json

    store = Store(db, create=False)
    said = fmt != "bundle" and not store.count(run_id=run_id)
    if said:  # an unknown --run refused before the output is touched
        say_none_match(store, {"--run": run_id})
    # written as they are read (store.stream): a fleet's database is not held in memory at once
    try:
        with replacing(output) if output else contextlib.nullcontext(sys.stdout) as fh, \
                working(f"writing the results as {fmt}") if output or not sys.stdout.isatty() else contextlib.nullcontext():
            if fmt == "bundle":  # full fidelity, importable (store/bundle.py); calibrate: calibrations only
                rows, measured = write_bundle(store, [run_id] if run_id else None, fh,
                                              spill_dir=os.path.dirname(os.path.abspath(output)) if output else None)
            else:
                rows, measured = (write_json if fmt == "json" else write_csv)(store.stream(run_id=run_id), fh), 0
            if not output and fmt == "json":
                fh.write("\n")
    except OSError as exc:
        if not output:
            raise
        raise UsageError(f"cannot write --output {output}: {exc.strerror}") from None
    if not rows and not measured and not said:
        say_none_match(store, {"--run": run_id})
    if output:
        also = f" and {measured} calibration measurements" if measured else ""
        err.print(f"wrote {rows} results{also} to {output}", highlight=False, markup=False, soft_wrap=True)


@results_app.command("flush", short_help="Store results spooled while the database was unreachable.")
@handles_usage_errors
def results_flush(db: str | None = typer.Option(None, "--db", help=DB_HELP)) -> None:
    """Store the results kept in the spool while this database was unreachable or busy (any command that opens it does so too)."""
    from rigbench.store import Store, spool

    store = Store(db, create=False, import_spool=False)
    done = store.flush_spool()
    for line in done.unreadable:
        err.print(f"set aside an unreadable spool file: {line}", highlight=False, markup=False, soft_wrap=True)
    if done.left:
        raise UsageError(f"{len(done.left)} spooled result(s) could not be stored in {store.url} ({done.reason}): "
                         f"they stay in {done.left[0].parent}")
    elsewhere = spool.spooled_elsewhere(store.url)
    others = f"; {elsewhere} more are spooled for other databases in {spool.spool_root()}: give their --db" if elsewhere else ""
    if done.imported or done.present:
        also = f" ({done.present} were already stored)" if done.present else ""
        out.print(f"Stored {done.imported} spooled result(s) in {store.url}{also}{others}", highlight=False, soft_wrap=True)
    else:
        out.print(f"No results are spooled for {store.url}{others}", highlight=False, soft_wrap=True)


@app.command(short_help="Write a self-contained HTML report.")
@handles_usage_errors
def report(
    run_id: list[str] | None = typer.Option(None, "--run", metavar="ID", help="Only this run; repeat for several (default: every stored result)."),
    where: list[str] | None = typer.Option(None, "--where", metavar="KEY=VALUE", help=WHERE_HELP),
    output: str = typer.Option("report.html", "--out", "-o", metavar="FILE", help="The HTML file to write (self-contained: opens offline)."),
    png_dir: str | None = typer.Option(None, "--png", metavar="DIR", help="Also write each chart as a PNG into DIR."),
    screenshot: str | None = typer.Option(None, "--screenshot", metavar="FILE", help="Also write a PNG of the page's top as headless Chromium draws it, 1400 px wide (needs playwright and chromium)."),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Write an HTML report: a summary per workload, then charts (speed per workload, speed-ups beside published ones, roofline, scaling, training, energy, resources), machines, failures."""
    with working(f"writing {output}: reading the results, drawing the charts"):
        done = api.report(output, db=db, run_ids=run_id or [], where=where or [], png_dir=png_dir,
                          screenshot=screenshot)
    out.print(f"Wrote {done.path} ({done.size_bytes / 1024:,.0f} KB): {done.trials} trial{'s' * (done.trials != 1)}, "
              f"{len(done.charts)} chart{'s' * (len(done.charts) != 1)}", highlight=False, markup=False, soft_wrap=True)
    if png_dir is not None:  # none, too, where nothing was drawn (only failed trials): not silence
        out.print(f"PNGs: {len(done.pngs)} in {png_dir}", highlight=False, markup=False, soft_wrap=True)
    if done.screenshot:
        out.print(f"Screenshot: {done.screenshot}", highlight=False, markup=False, soft_wrap=True)

