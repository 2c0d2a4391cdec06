"""What is stored, listed: `results list` (trials) and `results runs` (the runs, whose ids
`--run` takes)."""

from __future__ import annotations

import typer

from rigbench.cli.common import (
    DB_HELP,
    WHERE_HELP,
    all_of,
    handles_usage_errors,
    listed_results,
    results_app,
    say_none_match,
)
from rigbench.cli.console import out
from rigbench.errors import UsageError
from rigbench.json_text import strict_json
from rigbench.spec import STATUSES


@results_app.command("list", short_help="List stored results, newest last.")
@handles_usage_errors
def results_list(
    run_id: str | None = typer.Option(None, "--run", help="Only this run (run ids: rigbench results runs)."),
    workload: str | None = typer.Option(None, "--workload", help="Only this workload, e.g. cnn, or with options: resnet:depth=56."),
    status: str | None = typer.Option(None, "--status", help="Only this status (ok, oom, crash, ...)."),
    where: list[str] | None = typer.Option(None, "--where", metavar="KEY=VALUE", help=WHERE_HELP),
    limit: int = typer.Option(50, "--limit", help="Show the newest N."),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """List stored results, newest last; where they come from several runs, each row's run id."""
    from rigbench.reports import terminal
    from rigbench.store import Store

    if limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit} (every result: `rigbench results export`)")
    if status is not None and status not in STATUSES:
        raise UsageError(f"--status {status!r} is not a status: use one of {', '.join(STATUSES)}")
    store = Store(db, create=False)
    rows, total = listed_results(store, run_id, workload, status, limit, where or [])
    if not rows:
        say_none_match(store, {"--run": run_id, "--workload": workload, "--status": status,
                               "--where": " --where ".join(where) if where else None})
        return
    several = len({r.run_id for r in rows}) > 1  # one run's id on every row would say nothing
    out.print(terminal.results_table(rows, more="`rigbench results export`", runs=several))
    for line in terminal.busy_lines(rows):
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    if total > len(rows):
        out.print(all_of(len(rows), total, "results"), highlight=False, markup=False, soft_wrap=True)


@results_app.command("runs", short_help="List stored runs: their ids, machines and commands.")
@handles_usage_errors
def results_runs(
    limit: int = typer.Option(50, "--limit", help="Show the newest N."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON array: per run, its id, when, command, host, CPU, GPUs, trials and calibrations."),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """List the stored runs, newest last: each run's id (what --run takes), when it started, its
    machine (host, CPU, GPUs by model), how many trials and calibration measurements it stored,
    and the command that made it (masked, as stored)."""
    from rigbench.reports import terminal
    from rigbench.store import Store

    if limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}")
    store = Store(db, create=False)
    runs = store.runs(limit)
    total = store.run_count() if len(runs) == limit else len(runs)
    if as_json:
        print(strict_json([{"id": r["id"], "created_at": r["created_at"], "command": r["command"],
                            "hostname": r["machine"].get("hostname"), "cpu_model": r["machine"].get("cpu_model"),
                            "gpus": [g.get("name") for g in r["machine"].get("gpus") or []],
                            "trials": r["trials"], "calibrations": r["calibrations"]} for r in runs], indent=2))
        return
    if not runs:
        say_none_match(store, {}, what="runs")
        return
    out.print(terminal.runs_table(runs, more="--json"))
    if total > len(runs):
        out.print(all_of(len(runs), total, "runs"), highlight=False, markup=False, soft_wrap=True)
