"""`rigbench calibrate` and `rigbench roofline` tables: a device's measured ceilings, and
trials placed under them (analysis/roofline.TrialRoofline). FitTables (reports/table_fit.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.reports.cells import (
    cells,
    device_column,
    device_labels,
    framework_column,
    num,
    rate,
    share,
    si,
    workload_label,
)
from rigbench.reports.table_fit import Column, FitTable
from rigbench.spec import Result
from rigbench.textlimits import ERROR_CHARS, NAME_CHARS, clip, clip_result
from rigbench.units import format_bytes


def tflops(value: float | None) -> str:
    return "-" if value is None else f"{rate(value / 1e12)} TFLOP/s"


def gbs(value: float | None) -> str:
    return "-" if value is None else f"{rate(value / 1e9)} GB/s"


_CALIBRATION_NAMES = {"matmul": "matmul", "memory_bandwidth": "memory bandwidth",
                      "h2d_pageable": "host->device, pageable", "h2d_pinned": "host->device, pinned",
                      "d2h_pageable": "device->host, pageable", "d2h_pinned": "device->host, pinned"}


def _calibration_how(m: dict[str, Any]) -> str:
    d = m.get("detail", {})
    if m["kind"] == "matmul":
        n = d.get("peak_n", d.get("best_n"))  # best_n: calibrations stored before the largest-size rule
        best = next(s for s in d["sizes"] if s["n"] == n)
        return (f"n={n} (of {', '.join(str(s['n']) for s in d['sizes'])}); median of "
                f"{d['repeats']} repeats x {best['iterations']} matmul{'s' * (best['iterations'] != 1)}")
    counted = "read + written" if m["kind"] == "memory_bandwidth" else "one way"
    return f"{format_bytes(d['buffer_bytes'])} copy, bytes {counted}; median of {d['repeats']}"


def calibration_table(calibration: dict[str, Any]) -> FitTable:
    """One device's calibration (`rigbench calibrate`): each ceiling with its unit and how it was measured."""
    threads = calibration.get("threads")
    table = FitTable([
        Column("measurement"), Column("precision", priority=60, short="prec"), Column("value", "right"),
        Column("how", priority=30, cut=True),
    ], title=f"{calibration['device']}: {clip(str(calibration['device_name']), NAME_CHARS)}"
             + (f" ({threads} threads)" if threads and calibration["device"] == "cpu" else ""), more="--json")
    for m in calibration["measurements"]:
        if m["status"] == "ok":
            value = tflops(m["value"]) if m["unit"] == "FLOP/s" else gbs(m["value"])
            how = _calibration_how(m)
        elif m["status"] == "n/a":
            value, how = "n/a (host memory)", ""
        else:
            value, how = m["status"], m.get("detail", {}).get("reason", "")
        # literal: error messages may hold [brackets] that rich would read as markup
        table.add_row(*cells(_CALIBRATION_NAMES.get(m["kind"], m["kind"]), m.get("precision") or "",
                             value, clip(how, ERROR_CHARS)))
    return table


def roof_text(roof: Any, table: bool = False) -> str:
    """"memory-bound, ceiling 1.2 TFLOP/s (34% of it)": the bound, its ceiling and the share of
    it achieved; or what the bound lacks and the peak if known: "no FLOP/byte; peak 0.185
    TFLOP/s" for a trial without a traffic estimate; or, for a trial that ran above its
    estimated memory roof, that roof and no bound (a note under the table says why). `table`:
    the short form, "memory-bound 1.2 (34%)", for a column whose header names the unit."""
    if roof is None:
        return "-"
    unit = "" if table else " TFLOP/s"

    def flops(value: float | None) -> str:
        return f"{rate(value / 1e12)}{unit}" if value else "-"

    if getattr(roof, "above_memory_roof", False):
        share = roof.of_memory_roof
        text = f"above est. memory roof {flops(roof.memory_roof)}" + (f" ({share:.0%})" if share else "")
        return text if table else text + "; bound unknown (see the notes)"
    if roof.bound is None:
        return f"no {', no '.join(roof.missing)}" + (f"; peak {flops(roof.peak_flops)}" if roof.peak_flops else "")
    if table:
        return f"{roof.bound} {flops(roof.ceiling_flops)}" + (f" ({roof.of_ceiling:.0%})" if roof.of_ceiling is not None else "")
    text = f"{roof.bound}, ceiling {flops(roof.ceiling_flops)}"
    return text + (f" ({roof.of_ceiling:.0%} of it)" if roof.of_ceiling is not None else "")


def _mfu(roof: Any) -> str:
    return "-" if roof is None else share(roof.mfu)


def roofline_lines(roof: Any) -> list[tuple[str, str]]:
    """(field, value) lines of one trial's roofline (analysis/roofline.TrialRoofline)."""
    spec_name = f" ({roof.spec.name})" if roof.spec else ""
    return [
        ("achieved FLOP/s", tflops(roof.achieved_flops)),
        ("MFU (spec sheet)", _mfu(roof.spec) + spec_name),
        ("MFU (calibrated)", _mfu(roof.calibrated) + (f" ({roof.calibrated.name})" if roof.calibrated else "")),
        ("arithmetic intensity", "-" if roof.intensity is None else
         f"{roof.intensity:.3g} FLOP/byte ({si(roof.step_flops, 'FLOP')} / {si(roof.step_bytes, 'B')} per step, "
         "bytes estimated)"),
        ("roofline (spec sheet)", roof_text(roof.spec)),
        ("roofline (calibrated)", roof_text(roof.calibrated)),
        ("roofline notes", "; ".join(roof.notes) or "-"),
        *(("WARNING", w) for w in getattr(roof, "warnings", [])),
    ]


def roofline_table(rows: Sequence[tuple[Result, Any]]) -> FitTable:
    """`rigbench roofline`: per trial, achieved FLOP/s, MFU, intensity and the bound that limits
    it, with its ceiling and the share of it achieved (in TFLOP/s, the unit in the headers).
    Narrowed, batch and precision (what tells rows apart) stay longest; the spec-sheet and the
    calibrated figure of each pair share a priority, so the one these rows lack goes first (an
    uncalibrated H100's MFU is against its spec sheet: table_fit's equal-priority rule)."""
    table = FitTable([
        Column("id", "right"), Column("workload"), framework_column(),
        device_column(), Column("batch", "right", priority=84), Column("prec", priority=82),
        Column("TFLOP/s", "right", priority=76), Column("MFU spec", "right", priority=74),
        Column("MFU calib.", "right", priority=74, short="MFU cal"), Column("FLOP/byte", "right", priority=62, short="F/B"),
        Column("spec-sheet roof (TFLOP/s)", priority=50, short="spec roof"),
        Column("calibrated roof (TFLOP/s)", priority=50, short="calib. roof"),
    ], title="Roofline (FLOPs counted, bytes estimated; see docs/COMPARING.md)", more="--json")
    device = device_labels([r for r, _ in rows])
    for r, roof in rows:
        r = clip_result(r)
        table.add_row(*cells(str(r.id), workload_label(r), r.spec.framework, device(r), str(r.spec.batch_size),
                             r.spec.precision, num(roof.achieved_flops and roof.achieved_flops / 1e12, "{:.3g}"),
                             _mfu(roof.spec), _mfu(roof.calibrated), num(roof.intensity, "{:.3g}"),
                             roof_text(roof.spec, table=True), roof_text(roof.calibrated, table=True)))
    return table
