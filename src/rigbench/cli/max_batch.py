"""`rigbench max-batch`: the largest batch that fits in memory, found by probes
(experiments/max_batch.py), printed as a table of the probes and the lines under it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from rigbench.cli import interrupts
from rigbench.cli.common import (
    DB_HELP,
    _check_precision,
    app,
    db_flag,
    framework_option,
    handles_usage_errors,
    no_answer,
)
from rigbench.cli.console import err, no_bar, out, progressed
from rigbench.errors import UsageError
from rigbench.experiments import max_batch_logic as search  # its defaults: the library's are the command's
from rigbench.experiments.max_batch_logic import MIB, memory_metric
from rigbench.json_text import strict_json
from rigbench.spec import Result, TrialSpec
from rigbench.units import format_bytes, parse_memory_limit

if TYPE_CHECKING:
    from rigbench.experiments.max_batch import MaxBatchOutcome


def _probe_line(r: Result) -> str:
    from rigbench.reports import terminal

    peak = getattr(r.metrics, memory_metric(r.spec.device, [r]))
    text = f"  batch {r.spec.batch_size}: {r.status}"
    if peak is not None:
        text += f", peak {peak:,.0f} MiB"
    if r.metrics.samples_per_s:
        text += f", {r.metrics.samples_per_s:,.1f} samples/s"
    if r.status not in ("ok", "oom") and r.error:
        text += f" ({terminal.error_line(r.error, 160)})"
    return text


def _print_max_batch(o: MaxBatchOutcome, db: str | None) -> None:
    from rigbench.reports import terminal

    out.print(terminal.max_batch_table(o))

    def say(text: str) -> None:
        out.print(text, highlight=False, markup=False, soft_wrap=True)

    say(f"limit: {format_bytes(o.limit_bytes)} ({o.limit_source})")
    ok_probes = sum(r.status == "ok" for r in o.probes)
    if o.fixed_bytes is not None and o.per_sample_bytes is not None:  # set together
        fitted = (f"memory model (least squares over {ok_probes} ok probes, {o.memory_metric}): "
                  f"{o.fixed_bytes / MIB:,.1f} MiB + {o.per_sample_bytes / MIB:,.3f} MiB per sample")
        if o.per_sample_bytes <= 0:  # a fit to noise: batches too close together to see memory grow
            fitted = (f"memory model: none (over {ok_probes} ok probes memory did not grow with the batch: "
                      f"{o.per_sample_bytes / MIB:,.3f} MiB per sample, noise; batches further apart would show it)")
        say(fitted)
    else:
        say(f"memory model: none ({o.unfit or 'needs two ok probes with a memory figure'})")
    if o.expected_per_sample_bytes is not None:
        say(f"expected from the shape: {o.expected_per_sample_bytes / MIB:,.3f} MiB of activations per sample "
            f"(Korthikanti et al. 2022, no dropout; {(o.expected_scores_bytes or 0.0) / MIB:,.3f} MiB of it "
            f"attention scores, which a fused kernel does not keep), before the framework's temporaries")
    no_oom = "none found" if o.stopped or o.interrupted else f"none up to --max {o.max_batch}"
    say(f"largest ok: {o.largest_ok if o.largest_ok is not None else '-'}; smallest oom: "
        + (str(o.smallest_oom) if o.smallest_oom is not None else no_oom))
    for batch, headline, need in o.crashes_over_limit:
        say(f"batch {batch} crashed ({headline}) where the memory model puts it at {need / MIB:,.0f} MiB, over "
            f"the {(o.limit_bytes or 0) / MIB:,.0f} MiB limit: counted as out of memory (native code that uses an allocation that failed under "
            f"the cap crashes instead of raising)")
    if o.stopped is None and o.below_framework is None and (ending := o.ending()):  # a stop by status: below
        say(f"search: {ending}")
    if o.stopped is not None:
        say(f"search stopped at batch {o.stopped.spec.batch_size}: status {o.stopped.status}, which "
            f"says nothing about memory, so it is not counted as out of memory (see "
            f"`rigbench results show {o.stopped.id}{db_flag(db)}`)")
        if o.stopped_by_crash and o.fixed_bytes is None:
            say("a crash under the memory cap can be native code using an allocation that failed: with two ok "
                "probes below it, the memory model tells whether the batch is over the limit (try a smaller --start)")
        elif o.stopped_by_crash and o.fixed_bytes is not None and o.per_sample_bytes is not None:
            need = o.fixed_bytes + o.per_sample_bytes * o.stopped.spec.batch_size
            say(f"the memory model puts batch {o.stopped.spec.batch_size} at {need / MIB:,.0f} MiB, within the "
                f"{(o.limit_bytes or 0) / MIB:,.0f} MiB limit, so the crash is not counted as out of memory")
    if o.interrupted:
        unbounded = ("; none ran out of memory, so larger batches may fit: the batch below is the largest "
                     "that ran, no ceiling (`recommend` counts such a search as capping nothing)"
                     if o.smallest_oom is None else "")
        say(f"interrupted: the figures above rest on the probes that finished{unbounded}")
    say(f"recommended batch: {o.recommended if o.recommended is not None else '-'} ({o.reason})")
    if o.probes:  # none: its run was never written (a run is stored with its first result)
        say(f"Stored in {o.db_url} (run {o.run_id}): rigbench results list --run {o.run_id}{db_flag(db)}")


@app.command("max-batch", short_help="Find the largest batch that fits in memory.")
@handles_usage_errors
def max_batch(
    workload: str = typer.Argument(..., metavar="WORKLOAD", help="Workload, e.g. cnn or resnet:depth=56."),
    device: str = typer.Option("cpu", "--device", "-d", help="The device to fill: cpu, cuda:0, ..."),
    precision: str = typer.Option("fp32", "--precision", help="fp32, tf32, bf16 or fp16."),
    memory_limit: str | None = typer.Option(None, "--memory-limit", metavar="SIZE", help="CPU only: the memory the probes may use, e.g. 2GiB (default: 50% of the RAM available now). GPUs use their own memory. The CPU's search is Linux only."),
    start: int = typer.Option(search.DEFAULT_START, "--start", help="First batch to probe; it doubles (x4 or x8 where the memory line of the probes so far leaves room) until a probe runs out of memory."),
    max_: int = typer.Option(search.DEFAULT_MAX_BATCH, "--max", help="Never probe a batch above this."),
    tolerance: float = typer.Option(search.DEFAULT_TOLERANCE, "--tolerance", help="Stop bisecting when smallest oom - largest ok <= max(1, tolerance x largest ok): the default ends within 5% of the boundary, which itself moves a few percent between runs; 0 bisects down to one sample (about log2(batch) probes more), 0.25 needs fewer probes."),
    margin: float = typer.Option(search.DEFAULT_MARGIN, "--margin", help="Fraction of the limit the recommended batch leaves free, by the fitted memory model."),
    timeout: float | None = typer.Option(None, "--timeout", help="Kill a probe after this many seconds (status `timeout`, which stops the search; default 600)."),
    framework: str = framework_option(),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print only one JSON object on stdout: probes, model, limit, largest ok, smallest oom, recommendation."),
) -> None:
    """The largest batch that trains without running out of memory, and a recommended batch with a safety margin."""
    from rigbench.experiments.max_batch import find_max_batch

    _check_precision(precision, [device])
    if timeout is not None and timeout <= 0:
        raise UsageError("--timeout must be more than 0 seconds")
    limit = parse_memory_limit(memory_limit) if memory_limit is not None else None
    # find_max_batch checks the input, then opens (or makes) the database, before the first probe
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}", markup=False), TimeElapsedColumn(),
                        console=err, transient=True, disable=no_bar())
    with progress:
        task = progress.add_task(f"max-batch {workload}: checking the device", total=None)

        def probing(batch: int, so_far: MaxBatchOutcome) -> None:
            if not so_far.probes and so_far.device == "cpu":
                err.print(f"limit: {format_bytes(so_far.limit_bytes)} ({so_far.limit_source})",
                          highlight=False, markup=False)
            progress.update(task, description=f"max-batch {workload}: probing batch {batch}")

        def advanced(spec: TrialSpec, text: str) -> None:  # the phase the probe is in
            progressed(progress, task, f"max-batch {workload}: probing batch {spec.batch_size}: {text}",
                       f"  batch {spec.batch_size}: {text}")

        def probed(r: Result) -> None:
            err.print(_probe_line(r), highlight=False, markup=False, soft_wrap=True)

        o = find_max_batch(workload, device, framework=framework, precision=precision,
                           memory_limit_bytes=limit, start=start, max_batch=max_,
                           tolerance=tolerance, margin=margin, db=db, on_probe=probed,
                           on_probe_start=probing, timeout_s=timeout, on_probe_progress=advanced)
    if as_json:
        print(strict_json(o.to_dict(), indent=2))
    else:
        _print_max_batch(o, db)
    if o.interrupted:
        n = len(o.probes)
        kept = (f"{n} finished probe{'s are' if n != 1 else ' is'} stored (run {o.run_id})" if n
                else "no probe had finished: nothing was stored")
        err.print(f"interrupted ({interrupts.signal_name()}): {kept}; a probe stopped half-way never is. A complete "
                  f"search: {interrupts.again()} (a new one, from --start)", highlight=False, markup=False, soft_wrap=True)
        raise interrupts.interrupted_exit()
    if o.recommended is None:
        raise no_answer(f"max-batch has no batch to recommend: {o.reason}")
