"""`rigbench sweep`: every combination of lists of settings (max-batch: max_batch.py)."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from rigbench.cli import interrupts
from rigbench.cli.common import (
    DB_HELP,
    SWITCHES,
    _check_precision,
    app,
    energy_option,
    framework_option,
    handles_usage_errors,
    open_store_for,
    parse_compile,
    stored_text,
)
from rigbench.cli.console import err, no_bar, out, progressed
from rigbench.errors import UsageError
from rigbench.json_text import strict_json
from rigbench.reports.table_fit import Column, FitTable
from rigbench.spec import EnergyMode, Result, TrialSpec
from rigbench.units import (
    clock,
    parse_memory_limit,
    parse_positive_floats,
    parse_positive_ints,
    split_list,
    split_workload_refs,
)

if TYPE_CHECKING:
    from rigbench.experiments.sweep import SweepOutcome
    from rigbench.store import Store


def _switches(values: list[str] | None, flag: str) -> list[bool]:
    out_ = []
    for part in split_list(values, flag):
        if part.lower() not in SWITCHES:
            raise UsageError(f"{flag} takes off, on or both (off,on), got {part!r}")
        out_.append(SWITCHES[part.lower()])
    return out_


#: A sweep expected to take longer than this asks before it starts (on a terminal; --yes skips).
CONFIRM_ABOVE_S = 30 * 60


def _interactive() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def _announce(grid: list[TrialSpec], db: str | None, resume: bool, yes: bool) -> None:
    """Say how many trials will run and how long that takes at least (and at most, every trial
    to its timeout); above CONFIRM_ABOVE_S ask first on a terminal, unless --yes."""
    from rigbench.experiments.sweep import earlier_trials, estimate, spec_key

    pending = grid
    if resume:
        _, stored = _stored_if_any(grid, db)
        pending = [s for s in grid if spec_key(s) not in stored]
    store = _store_if_any(db)
    guess = estimate(pending, earlier_trials(store, pending) if store else None)
    known = (f", or what this machine's earlier trial of the same configuration took, for {guess.from_history} "
             f"of them" if guess.from_history else "")
    err.print(f"sweep: {guess.trials} trials to run, at least about {clock(guess.least_s)} (each trial's warm-up "
              f"and timing windows plus a few seconds to start{known}; slow steps take longer), at most "
              f"{clock(guess.most_s)} (every trial to its timeout)", highlight=False, markup=False, soft_wrap=True)
    if guess.least_s > CONFIRM_ABOVE_S and not yes and _interactive():
        if not typer.confirm("Start it?", default=False, err=True):
            err.print("not started; nothing was run or stored (--yes skips this question, --dry-run "
                      "lists the grid)", highlight=False, markup=False, soft_wrap=True)
            raise typer.Exit(1)


def _resume_command() -> str:
    """This command again with --resume, a database URL without its password (an interrupted
    sweep on PostgreSQL printed it)."""
    return interrupts.again("--resume")


def _sweep_table(results: list[Result], new_run: str | None) -> FitTable:
    """One row per grid point; `ran` says whether it ran now or in which earlier run. A
    samples/J column only when some point has a measured energy (none on a machine that
    cannot read one)."""
    from rigbench.reports import terminal
    from rigbench.reports.cells import cells

    energy = terminal.any_energy(results)
    table = FitTable([
        Column("id", "right"), *terminal.trial_columns(), Column("samples/s [95% CI]", "right", short="samples/s"),
        *([Column("samples/J", "right", priority=70)] if energy else []),
        Column("step ms", "right", priority=40), Column("RSS MiB", "right", priority=30), Column("status"),
        Column("ran", priority=45),
    ], more="--json")
    for r in results:
        m = r.metrics
        per_joule = [terminal.samples_per_joule_cell(m.energy_per_sample_j)] if energy else []
        table.add_row(*cells(str(r.id or "-"), *terminal.trial_cells(r), terminal.speed(r), *per_joule,
                             terminal.num(m.step_time_ms_median, "{:,.2f}"), terminal.num(m.rss_peak_mib, "{:,.0f}"),
                             terminal.status(r.status), "now" if r.run_id == new_run else f"in {r.run_id}"))
    return table


def _sweep_with_progress(grid: list[TrialSpec], db: str | None, resume: bool) -> SweepOutcome:
    """Run the sweep with a progress bar, an ETA (mean time per finished trial so far times
    the trials left) and one line per finished trial, all on stderr; the bar says the phase each
    trial is in, which where stderr is not a terminal (no bar) is a line each."""
    from rigbench.experiments.sweep import sweep as run_sweep
    from rigbench.reports import terminal

    progress = _bar()
    timing: dict[str, float] = {}
    labels: dict[int, str] = {}
    with progress:
        task = progress.add_task("checking the database", total=None, eta="-")

        def planned(pending: list[TrialSpec], skipped: list[Result]) -> None:
            if resume:
                err.print(f"resume: {len(skipped)} of {len(grid)} grid points already have a stored "
                          f"result and are skipped; {len(pending)} to run",
                          highlight=False, markup=False, soft_wrap=True)
            progress.update(task, total=len(pending), description="starting")
            timing["start"], timing["total"] = time.monotonic(), len(pending)

        def started(i: int, spec: TrialSpec) -> None:
            progress.update(task, description=f"trial {i + 1}/{int(timing['total'])}: {spec.label()}")
            labels[i] = spec.label()

        def advanced(i: int, text: str) -> None:  # the phase the trial is in (runner/epoch_lines.py)
            place = f"{i + 1}/{int(timing['total'])}"
            progressed(progress, task, f"trial {place}: {labels[i]}: {text}", f"  [{place}] {labels[i]}: {text}")

        def ended(i: int, result: Result) -> None:
            done, total = i + 1, int(timing["total"])
            eta = clock((time.monotonic() - timing["start"]) / done * (total - done))
            progress.update(task, advance=1, eta=eta)
            err.print(f"  [{done}/{total}] {result.spec.label()}: {terminal.one_line_outcome(result)}"
                      f"  (ETA {eta})", highlight=False, markup=False, soft_wrap=True)

        return run_sweep(grid, db=db, resume=resume, on_plan=planned, on_trial_start=started,
                         on_trial_end=ended, on_trial_progress=advanced)


def _bar() -> Progress:
    """The sweep's bar: trial M/N, elapsed time and ETA (M/? while the database is read: it
    showed "0/None")."""
    return Progress(SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(),
                    MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA {task.fields[eta]}"),
                    console=err, transient=True, disable=no_bar())


def _store_if_any(db: str | None) -> Store | None:
    """The database, or None where it is an SQLite file not made yet (looking never creates one)."""
    from rigbench.store import Store
    from rigbench.store.db import default_db_url, resolve_db_url
    from rigbench.store.engine import sqlite_file

    url = resolve_db_url(db) if db else default_db_url()
    path = sqlite_file(url)  # None: not an SQLite file (PostgreSQL, in memory)
    if path is not None and not path.exists():
        return None
    return Store(db)


def _stored_if_any(grid: list[TrialSpec], db: str | None) -> tuple[str, dict[str, Result]]:
    """The database's URL and the grid points it holds; a dry run never creates a database."""
    from rigbench.experiments.sweep import stored_results
    from rigbench.store.db import default_db_url, resolve_db_url

    store = _store_if_any(db)
    return (store.url, stored_results(store, grid)) if store else (resolve_db_url(db) if db else default_db_url(), {})


def _earlier_note(grid: list[TrialSpec], finished: list[Result], db: str | None, resume: bool) -> str:
    """For a sweep run without --resume (measuring every point again) and interrupted: how many
    of the points it did not finish have a result of an earlier run, which --resume counts as
    done. Its resume hint alone sent a re-measurement to run none of them."""
    from rigbench.experiments.sweep import spec_key

    done = {spec_key(r.spec) for r in finished}
    earlier = len(_stored_if_any([s for s in grid if spec_key(s) not in done], db)[1]) if not resume else 0
    if not earlier:
        return ""
    return (f" ({earlier} of the points left {'has' if earlier == 1 else 'have'} a result of an earlier run, which "
            f"--resume counts as done and skips: to measure {'it' if earlier == 1 else 'them'} again, run without "
            "--resume)")


def _dry_run(grid: list[TrialSpec], db: str | None, resume: bool, as_json: bool) -> None:
    from rigbench.experiments.sweep import spec_key
    from rigbench.reports.cells import cells

    url, stored = _stored_if_any(grid, db)
    keys = [spec_key(s) for s in grid]
    n_stored = sum(k in stored for k in keys)
    if as_json:
        print(strict_json({
            "grid_points": len(grid), "stored": n_stored, "resume": resume,
            "would_run": len(grid) - n_stored if resume else len(grid),
            "grid": [{"label": s.label(), "spec": s.model_dump(mode="json"),
                      "stored_id": stored[k].id if k in stored else None,
                      "stored_status": stored[k].status if k in stored else None}
                     for s, k in zip(grid, keys)],
        }, indent=2))
        return
    table = FitTable([Column("#", "right"), Column("trial", cut=True), Column("stored result", priority=50, short="stored"),
                      Column("with --resume", priority=60, short="--resume")],
                     title=f"sweep grid: {len(grid)} points (dry run)", more="--json")
    for i, (s, k) in enumerate(zip(grid, keys), 1):
        found = stored.get(k)
        table.add_row(*cells(str(i), s.label(), f"id {found.id}: {found.status}" if found else "-",
                             "skip" if found else "run"))
    out.print(table)
    action = (f"--resume would skip them and run {len(grid) - n_stored}" if resume else
              f"without --resume all {len(grid)} run again")
    out.print(f"{n_stored} of {len(grid)} points already have a stored result in {url}; "
              f"{action}.", highlight=False, soft_wrap=True)


@app.command(short_help="Run every combination of lists of settings.")
@handles_usage_errors
def sweep(
    workloads: list[str] | None = typer.Argument(None, metavar="WORKLOAD", help="Workloads (default: the file's, else all but the transformers gpt and vit). Options as NAME:key=value."),
    device: list[str] | None = typer.Option(None, "--device", "-d", metavar="DEVICE", help="Device(s), comma-separated or repeated (default: every available one)."),
    batch_size: list[str] | None = typer.Option(None, "--batch-size", "-b", metavar="N", help="Batch sizes, e.g. 16,64,256 (default: each workload's reference batch)."),
    precision: list[str] | None = typer.Option(None, "--precision", metavar="P", help="Precisions, e.g. fp32,bf16 (fp32, tf32, bf16, fp16; default fp32)."),
    threads: list[str] | None = typer.Option(None, "--threads", metavar="N", help="CPU thread counts, e.g. 1,2,4 (default: the framework's own choice)."),
    lr: list[str] | None = typer.Option(None, "--lr", metavar="LR", help="Learning rates, e.g. 0.01,0.1 (default: the workload's)."),
    compile_: list[str] | None = typer.Option(None, "--compile", metavar="off,on,MODE", help="The graph compiler (torch.compile; XLA in TensorFlow and Keras): off, on, torch.compile modes (reduce-overhead: CUDA graphs; max-autotune, max-autotune-no-cudagraphs), or several, e.g. off,on,reduce-overhead (default off)."),
    channels_last: list[str] | None = typer.Option(None, "--channels-last", metavar="off,on", help="NHWC layout for convnets: off, on, or off,on (default off)."),
    processes: list[str] | None = typer.Option(None, "--processes", metavar="N", help="Data-parallel ranks per trial, e.g. 1,2 (default 1; -b is each rank's batch)."),
    framework: list[str] | None = framework_option(None, many=True),
    steps: int | None = typer.Option(None, "--steps", help="Time at least this many steps per trial (default 10; 3 with --quick)."),
    seconds: float | None = typer.Option(None, "--seconds", help="...and at least this many seconds (default 2; 0.5 with --quick)."),
    quick: bool | None = typer.Option(None, "--quick/--no-quick", help="Smoke run: small batches, 1 warm-up step, short timing windows."),
    timeout: float | None = typer.Option(None, "--timeout", help="Kill a trial after this many seconds (status `timeout`; default 600)."),
    memory_limit: str | None = typer.Option(None, "--memory-limit", metavar="SIZE", help="Cap each process's memory (each rank of a data-parallel trial: N ranks may take N x SIZE), e.g. 2GiB; past it the trial ends as `oom`. Linux only."),
    energy: EnergyMode | None = energy_option(default=None),
    config: str | None = typer.Option(None, "--config", "-c", metavar="FILE", help="A sweep TOML file (see examples/sweep.toml); flags given as well replace the file's keys."),
    resume: bool = typer.Option(False, "--resume", help="Skip every grid point that already has a stored result with the identical spec (any status) from this machine in --db; run the rest."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the grid and which points are already stored, and run nothing."),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
    yes: bool = typer.Option(False, "--yes", "-y", help=f"Start without asking, however long the estimate (a terminal is asked above {CONFIRM_ABOVE_S // 60} minutes)."),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON on stdout: {run_id, grid_points, skipped, ran, interrupted, results: one row per finished grid point}."),
) -> None:
    """Run the product of lists of settings (from flags or a TOML file); resumable with --resume.
    Says first how many trials will run and how long that takes; asks on a terminal when that
    is over 30 minutes."""
    from rigbench.experiments.plan import emulated_bf16
    from rigbench.experiments.sweep import load_sweep_file, plan_sweep, sweep_spec
    from rigbench.reports import terminal

    if steps is not None and steps < 2:
        raise UsageError("--steps must be at least 2")
    if timeout is not None and timeout <= 0:
        raise UsageError("--timeout must be more than 0 seconds")
    if seconds is not None and seconds < 0:
        raise UsageError("--seconds cannot be negative")
    for p in split_list(precision, "--precision"):
        _check_precision(p)
    flags: dict[str, Any] = {
        "workloads": split_workload_refs(workloads), "devices": split_list(device, "--device"),
        "batch_sizes": parse_positive_ints(batch_size, "--batch-size"),
        "precisions": split_list(precision, "--precision"), "threads": parse_positive_ints(threads, "--threads"),
        "lrs": parse_positive_floats(lr, "--lr"), "compile": parse_compile(compile_, "--compile"),
        "channels_last": _switches(channels_last, "--channels-last"), "framework": split_list(framework, "--framework"),
        "processes": parse_positive_ints(processes, "--processes"),
        "steps": steps, "seconds": seconds, "quick": quick, "timeout": timeout,
        "memory_limit": parse_memory_limit(memory_limit) if memory_limit is not None else None,
        "energy": energy,
    }
    given = {k: v for k, v in flags.items() if v not in (None, [])}
    spec = load_sweep_file(config, given) if config else sweep_spec(given)
    grid = plan_sweep(spec)
    if dry_run:
        _dry_run(grid, db, resume, as_json)
        return
    open_store_for(grid, db)
    _announce(grid, db, resume, yes)
    if slow := emulated_bf16(grid):
        err.print(f"rigbench: warning: {slow}", highlight=False, markup=False, soft_wrap=True)
    try:
        outcome = _sweep_with_progress(grid, db, resume)
    except KeyboardInterrupt:  # between trials: finished ones are already stored
        err.print(f"interrupted ({interrupts.signal_name()}) before a trial "
                  f"started. Resume with: {_resume_command()}", highlight=False, markup=False, soft_wrap=True)
        raise interrupts.interrupted_exit() from None
    finished = outcome.grid_results()
    if as_json:
        print(strict_json({"run_id": outcome.run_id, "db": outcome.db_url, "grid_points": len(grid),
                          "skipped": len(outcome.skipped), "ran": len(outcome.results),
                          "interrupted": outcome.interrupted,
                          "results": [r.row() for r in finished]}, indent=2))
    elif finished or not outcome.interrupted:  # stopped before any point had a result: stderr says so alone
        out.print(_sweep_table(finished, outcome.run_id))
        for line in terminal.busy_lines(finished):
            out.print(line, highlight=False, markup=False, soft_wrap=True)
        where = (stored_text(outcome.results, outcome.db_url, outcome.run_id, db) if outcome.run_id
                 else f"Stored in {outcome.db_url} (nothing left to run).")
        out.print(f"{len(finished)} of {len(grid)} grid points have a result ({len(outcome.skipped)} "
                  f"from earlier runs). {where}", highlight=False, markup=False, soft_wrap=True)
    if outcome.interrupted:
        ran = len(grid) - len(outcome.skipped)
        kept = interrupts.kept_text(outcome.results, ran, "trial", outcome.stopped,
                                    f"{outcome.db_url} (run {outcome.run_id})")
        left = len(grid) - len(finished)
        err.print(f"{kept}; {left} grid point{'s' * (left != 1)} left. Resume with: {_resume_command()}"
                  + _earlier_note(grid, finished, db, resume), highlight=False, markup=False, soft_wrap=True)
        raise interrupts.interrupted_exit()
