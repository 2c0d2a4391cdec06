"""`rigbench recommend`: device, batch, lr, precision, threads and the rest, from stored results
and what it measures where they lack it (docs/STRATEGY.md, "The recommendation")."""

from __future__ import annotations

import typer
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from rigbench import api
from rigbench.cli import interrupts
from rigbench.cli.common import DB_HELP, app, framework_option, handles_usage_errors, no_answer
from rigbench.cli.console import err, no_bar, out, progressed
from rigbench.json_text import strict_json
from rigbench.spec import Result, TrialSpec
from rigbench.units import parse_memory_limit, parse_positive_ints, split_list


def _print(text: str) -> None:
    out.print(text, highlight=False, markup=False, soft_wrap=True)


@app.command(short_help="Recommend device, batch, lr, precision and threads.")
@handles_usage_errors
def recommend(
    workload: str = typer.Argument(..., metavar="WORKLOAD", help="Workload to advise on, e.g. mlp or resnet:depth=56."),
    device: list[str] | None = typer.Option(None, "--device", "-d", metavar="DEVICE", help="Devices to choose from, repeated or comma-separated (default: every available one; with --no-run, those the stored results measured, else the CPU)."),
    dataset_size: int | None = typer.Option(None, "--dataset-size", metavar="N", help="Samples per epoch for the epoch-time estimate (default: the workload's reference data set size)."),
    no_run: bool = typer.Option(False, "--no-run", help="Use only stored results and list what is missing; run nothing."),
    run_id: list[str] | None = typer.Option(None, "--run", metavar="ID", help="With --no-run: recommend from the stored results of the machine this run was measured on (an imported bundle, a fleet's database) instead of this machine's; repeat for several runs of one machine. Nothing of this machine is measured or probed."),
    quick: bool = typer.Option(False, "--quick", help="Measure what is missing with short timing windows, a small batch grid and a short lr-find."),
    batch_size: list[str] | None = typer.Option(None, "--batch-size", "-b", metavar="N", help="Batch sizes to measure, e.g. 16,64 (default: b/4, b, 4b of the workload's batch with --quick; b/4 to 4b without)."),
    memory_limit: str | None = typer.Option(None, "--memory-limit", metavar="SIZE", help="CPU only: the memory limit of the max-batch search, e.g. 2GiB (default: 50% of the RAM available when it runs). Only a stored search made under the same limit is used. Linux only."),
    framework: str = framework_option(),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON on stdout: the same lines with the numbers behind each, what ran and what is missing."),
) -> None:
    """Recommend device, batch size, learning rate, precision (and the least energy per sample, where measured), threads and loader workers, measuring only what is missing."""
    from rigbench.reports import terminal

    # A bar (a spinner: how many trials run depends on what is stored) saying what runs and the
    # phase it is in; where stderr is not a terminal (no bar), each phase is a line.
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}", markup=False), TimeElapsedColumn(),
                        console=err, transient=True, disable=no_bar())

    def say(text: str) -> None:
        err.print(text, highlight=False, markup=False, soft_wrap=True)

    def noted(text: str) -> None:
        progress.update(task, description=f"recommend {workload}: {text}")
        say(text)

    def advanced(spec: TrialSpec, text: str) -> None:
        progressed(progress, task, f"recommend {workload}: {spec.label()}: {text}", f"  {spec.label()}: {text}")

    def ended(result: Result) -> None:
        text = terminal.one_line_outcome(result)
        if result.spec.kind == "lr_find" and result.metrics.suggested_lr:
            text += f": lr-find suggests {result.metrics.suggested_lr:.3g}"
        say(f"  {result.spec.label()}: {text}")

    with progress:
        task = progress.add_task(f"recommend {workload}: reading the stored results", total=None)
        outcome = api.recommend(
            workload, devices=split_list(device, "--device"), dataset_size=dataset_size, run_missing=not no_run,
            quick=quick, batch_sizes=parse_positive_ints(batch_size, "--batch-size"), db=db, framework=framework,
            on_note=noted, on_trial_end=ended, on_trial_progress=advanced, run_ids=run_id or [],
            memory_limit_bytes=parse_memory_limit(memory_limit) if memory_limit is not None else None)
    if as_json:
        print(strict_json(outcome.to_dict(), indent=2))
    else:
        _print_outcome(outcome)
    if outcome.interrupted:
        err.print(f"interrupted ({interrupts.signal_name()}): the recommendation uses what finished (stored); "
                  f"the rest: {interrupts.again()} (it measures only what is missing)",
                  highlight=False, markup=False, soft_wrap=True)
        raise interrupts.interrupted_exit()
    undecided = next((line for line in outcome.lines if line.decision in ("device", "batch_size") and line.value is None),
                     None)
    if undecided is not None:  # the device and the batch are what every other line rests on
        raise no_answer(f"no recommendation: {undecided.text}")


def _print_outcome(outcome: api.RecommendOutcome) -> None:
    w = outcome.workload
    if outcome.machine is None:
        _print(f"Recommendation for {w} on this machine ({outcome.results_used} results of "
               f"{outcome.db_url}" + (f", run {outcome.run_id} measured now" if outcome.run_id else "") + "):")
    else:
        _print(f"Recommendation for {w} on the machine of run {', '.join(outcome.runs)} ({outcome.machine}; "
               f"{outcome.results_used} results of {outcome.db_url}; nothing measured):")
    for line in outcome.lines:
        _print(f"  - {line.text}")
    if outcome.other_machines:
        _print(f"Left out: {outcome.other_machines} stored results of {w} from other machines.")
    for other in outcome.elsewhere:
        _print(f"  {other['machine']}, {other['results']} results: `{other['command']}` recommends from them.")
    if outcome.busy:
        _print(outcome.busy)
    for text in outcome.missing:
        _print(f"Missing: {text}")
    if outcome.missing and outcome.measure_hint:
        _print(f"  {outcome.measure_hint}")
    for text in outcome.not_tried:
        _print(f"Not tried: {text}")
