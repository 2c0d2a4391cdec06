"""`rigbench calibrate` (a device's measured ceilings) and `rigbench roofline` (MFU and
roofline of stored trials)."""

from __future__ import annotations

from typing import Any

import typer

from rigbench import api
from rigbench.analysis.contention import busy_calibration_note
from rigbench.cli import interrupts
from rigbench.cli.common import DB_HELP, WHERE_HELP, all_of, app, framework_option, handles_usage_errors
from rigbench.cli.console import err, out
from rigbench.errors import UsageError
from rigbench.json_text import strict_json
from rigbench.textlimits import NAME_CHARS, clip
from rigbench.units import split_list


def size_curves(calibration: dict[str, Any]) -> list[str]:
    """One line per measured matmul precision: the median rate at each size tried, the size
    the peak is taken from (the largest that fitted) and why the ladder stopped."""
    lines = []
    for m in calibration["measurements"]:
        d = m.get("detail", {})
        if m["kind"] != "matmul" or m["status"] != "ok" or "peak_n" not in d:
            continue
        curve = ", ".join(f"n={s['n']} {s['flops_per_s'] / 1e12:.3g}" for s in d["sizes"])
        lines.append(f"matmul {m['precision']} by size (TFLOP/s, median of {d['repeats']}): {curve}; "
                     f"peak from n={d['peak_n']}, the largest that fitted"
                     + (f" ({d['stopped']})" if d.get("stopped") else ""))
    return lines


@app.command(short_help="Measure each device's peak TFLOP/s and bandwidths.")
@handles_usage_errors
def calibrate(
    device: list[str] | None = typer.Option(None, "--device", "-d", metavar="DEVICE", help="Device(s) to calibrate, repeated or comma-separated: cpu, cuda:0, mps, ... (default: every available one)."),
    precision: list[str] | None = typer.Option(None, "--precision", metavar="P", help="Matmul precisions, e.g. --precision fp32,bf16 (default: fp32, tf32, bf16, fp16; one a device lacks is reported as unsupported)."),
    quick: bool = typer.Option(False, "--quick", help="Fewer matmul sizes and shorter repeats, smaller copies: seconds instead of a minute. Same peak rule (median at the largest size that fits), a little less exact."),
    threads: int | None = typer.Option(None, "--threads", help="CPU threads for the framework (default: the framework's own choice)."),
    framework: str = framework_option(measure=True),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON on stdout: the run id and every measurement (FLOP/s and B/s)."),
) -> None:
    """Measure each device's ceilings: peak matmul TFLOP/s per precision, memory bandwidth, host<->device copy bandwidth (pageable and pinned). Stored for `rigbench roofline`."""
    from rigbench.reports import terminal

    def started(dev: str) -> None:
        err.print(f"calibrating {dev} ...", highlight=False)

    def progress(text: str) -> None:
        err.print(f"  {text}", highlight=False, markup=False)

    done = api.calibrate(devices=split_list(device, "--device"), precisions=split_list(precision, "--precision"), quick=quick,
                         threads=threads, framework=framework, db=db, on_device=started, on_progress=progress)
    failed = [c for c in done.calibrations if c.get("error")]
    if as_json:
        print(strict_json({"run_id": done.run_id, "db": done.db_url, "devices": done.calibrations}, indent=2))
    else:
        for found in done.calibrations:
            if not found.get("error"):
                out.print(terminal.calibration_table(found))
                for line in size_curves(found):
                    out.print(f"  {line}", highlight=False, markup=False)
                busy = busy_calibration_note(found)
                if busy:
                    out.print(busy, highlight=False, markup=False, soft_wrap=True)
        if len(failed) < len(done.calibrations):  # something was measured and stored
            out.print(f"Stored in {done.db_url} (run {done.run_id}). Trials measured on these devices "
                      f"now show MFU against these peaks: rigbench roofline", highlight=False, markup=False)
    for found in failed:
        err.print(f"calibrating {found['device']} failed: {found['error']}", highlight=False, markup=False)
    if done.interrupted:
        err.print(interrupted_text(done), highlight=False, markup=False, soft_wrap=True)
        raise interrupts.interrupted_exit()
    if failed:
        raise typer.Exit(1)


def interrupted_text(done: api.CalibrateOutcome) -> str:
    """One line: which devices were calibrated and stored, which was stopped, how many never started."""
    measured = [c for c in done.calibrations if not c.get("error")]
    parts = [f"interrupted ({interrupts.signal_name()})",
             f"{len(measured)} of {done.devices} devices calibrated and stored in {done.db_url} (run {done.run_id})"
             if measured else "no device was calibrated: nothing was stored"]
    if done.stopped is not None:
        parts.append(f"{done.stopped} was stopped and not stored")
    left = done.devices - len(done.calibrations) - (done.stopped is not None)
    if left:
        parts.append(f"{left} not started")
    return "; ".join(parts)


@app.command(short_help="Achieved TFLOP/s, MFU and bound of each stored trial.")
@handles_usage_errors
def roofline(
    run_id: list[str] | None = typer.Option(None, "--run", metavar="ID", help="Only this run; repeat for several (default: every stored result)."),
    where: list[str] | None = typer.Option(None, "--where", metavar="KEY=VALUE", help=WHERE_HELP),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print only a JSON array on stdout: per trial, achieved FLOP/s, MFU, intensity, bounds."),
    limit: int = typer.Option(50, "--limit", help="Show the newest N trials in the table (the notes under it, and --json, cover every one)."),
) -> None:
    """Per successful trial: achieved TFLOP/s, MFU against the spec-sheet and the calibrated peak, arithmetic intensity, and the roofline bound that limits it; then each workload whose fp32 steps are mostly per-step overhead (measured at three batches or more), which neither roof describes."""
    from rigbench.reports import terminal

    if limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}")
    rows = api.roofline(db=db, run_ids=run_id or [], where=where or [])
    if as_json:
        print(strict_json([{"id": r.id, "run_id": r.run_id, "label": r.spec.label(),
                           "device_name": r.device_name, "samples_per_s": r.metrics.samples_per_s,
                           **roof.as_dict()} for r, roof in rows], indent=2))
        return
    if not rows:
        out.print("No successful trials match.", highlight=False)
        return
    out.print(terminal.roofline_table(rows[-limit:]))  # a fleet's 17,600 rows took 18 s to draw
    notes = dict.fromkeys(f"{clip(r.device_name or r.spec.device, NAME_CHARS)}: {note}" for r, roof in rows for note in roof.notes)
    for note in notes:
        out.print(f"  note: {note}", highlight=False, markup=False)
    for note in api.overhead_bound_notes([r for r, _ in rows], db=db):
        out.print(f"  overhead-bound: {note}", highlight=False, markup=False, soft_wrap=True)
    warnings = dict.fromkeys(f"{r.device_name or r.spec.device}: {w}" for r, roof in rows for w in roof.warnings)
    for warning in warnings:  # on stdout beside the table it qualifies, and on stderr
        out.print(f"  WARNING: {warning}", highlight=False, markup=False, soft_wrap=True)
        err.print(f"warning: {warning}", highlight=False, markup=False, soft_wrap=True)
    if len(rows) > limit:
        out.print(all_of(limit, len(rows), "trials"), highlight=False, markup=False, soft_wrap=True)
