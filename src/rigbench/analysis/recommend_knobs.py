"""The recommendation's precision and threads lines: from the rows of the scaling table
(analysis/scaling.py), so that they count a configuration's repeats as one figure (the mean of
its newest run's trials) and change the default only for a difference the measurements
resolve.

The rule: at the recommended batch, the variant with the highest samples/s whose speed-up over
the default (fp32; the framework's own thread count) is above 1 with the two intervals apart
(`ScalingRow.within_noise` is False); the default where no variant is. A variant inside the
default's interval is named "within noise" and not chosen: on a shared 2-core VM identical
trials differ by 10 to 30% (docs/METHODOLOGY.md), and a faster single trial is often only that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.analysis.recommend_model import Line, sps_text
from rigbench.analysis.scaling import ScalingRow, scaling_table
from rigbench.spec import Result
from rigbench.textlimits import error_line


def rows_at(results: Sequence[Result], device: str, batch: int) -> tuple[ScalingRow | None, list[ScalingRow]]:
    """The baseline row of `device` at `batch` and its variants (scaling_table puts each group's
    baseline first); of several groups there (another lr), the one with the newest baseline."""
    groups: list[tuple[ScalingRow, list[ScalingRow]]] = []
    for row in scaling_table(results):
        if row.knob == "baseline":
            groups.append((row, []))
        elif groups:
            groups[-1][1].append(row)
    here = [(base, rows) for base, rows in groups if base.device == device and base.batch_size == batch]
    if not here:
        return None, []
    return max(here, key=lambda group: group[0].trial_id or 0)


def _resolved_faster(rows: Sequence[ScalingRow]) -> ScalingRow | None:
    """The fastest row with a speed-up above 1 and its interval apart from the baseline's."""
    faster = [r for r in rows if r.status == "ok" and r.speedup is not None and r.speedup > 1
              and r.within_noise is False]
    return max(faster, key=lambda r: r.speedup or 0.0, default=None)


def _speedup_text(row: ScalingRow) -> str:
    noise = {True: " (within noise)", None: " (no intervals)"}.get(row.within_noise, "")
    return f"{row.speedup:.2f}x{noise}"


def decide_precision(results: Sequence[Result], device: str, batch: int, workload: str = "WORKLOAD") -> Line:
    """The fastest precision at the recommended batch (default threads, eager) whose gain over
    fp32 is resolved; fp32 where none is (module docstring). Failures (unsupported...) are
    shown with their reason; `workload` as the accuracy check's command names it."""
    base, variants = rows_at(results, device, batch)
    rows = [row for row in variants if row.knob == "precision"]
    numbers: dict[str, Any] = {
        ("fp32" if row.knob == "baseline" else str(row.value)): {
            "status": row.status, "samples_per_s": row.samples_per_s, "trial": row.trial_id,
            "trials": row.trial_ids, "speedup": row.speedup, "within_noise": row.within_noise,
            "error": error_line(row.error) or None}
        for row in ([base] if base else []) + rows}
    if base is None or base.status != "ok" or not base.samples_per_s:
        return Line("precision", None, f"precision: not measured at b{batch} on {device}", numbers)
    best = _resolved_faster(rows)
    parts = [f"fp32 {sps_text(base.samples_per_s)}"]
    for row in rows:
        parts.append(f"{row.value} {_speedup_text(row)}" if row.status == "ok" and row.speedup is not None
                     else f"{row.value} {row.status}" + (f" ({error_line(row.error)})" if row.error else ""))
    if best is not None:
        chosen = str(best.value)
        text = f"precision: {chosen}, the fastest measured at b{batch} with the intervals apart: "
    else:
        chosen = "fp32"
        text = (f"precision: fp32, {'no other precision resolved faster' if rows else 'the only one measured'} "
                f"at b{batch}: ")
    text += "; ".join(parts)
    if chosen in ("bf16", "fp16"):
        text += (f"; caveat: {chosen} mixed precision can lower accuracy, check with "
                 f"`rigbench train {workload} --precision {chosen}`")
    return Line("precision", chosen, text, numbers)


def decide_threads(results: Sequence[Result], device: str, batch: int) -> Line | None:
    """The thread count at the recommended batch (fp32, eager): the fastest whose gain over the
    framework's own count is resolved, else that default count (CPU only; None elsewhere)."""
    if device != "cpu":
        return None
    base, variants = rows_at(results, device, batch)
    # a count equal to the default's is the baseline again: its trials are in the baseline row
    rows = [row for row in variants if row.knob == "threads" and not row.repeats_baseline
            and row.status == "ok" and row.samples_per_s]
    if base is None or base.status != "ok" or not base.samples_per_s:
        return Line("threads", None, f"threads: not measured at b{batch}", {})
    measured = sorted([base, *rows], key=lambda row: row.threads or 0)
    numbers: dict[Any, Any] = {row.threads: {"samples_per_s": row.samples_per_s, "trial": row.trial_id,
                                             "trials": row.trial_ids, "within_noise": row.within_noise}
                               for row in measured}
    listed = ", ".join(f"{_count(row.threads)} -> {row.samples_per_s:,.0f}"
                       + (" (the default)" if row is base else " (within noise)" if row.within_noise else "")
                       for row in measured)
    best = _resolved_faster(rows)
    if best is not None:
        text = (f"threads: {best.value}, {best.speedup:.2f}x the default {_count(base.threads)}'s samples/s "
                f"with the intervals apart, at b{batch}: {listed}")
        return Line("threads", best.value, text, numbers)
    why = "no other count resolved faster" if rows else "only one thread count measured"
    return Line("threads", base.threads, f"threads: {_count(base.threads)}, the framework's default; {why} "
                f"at b{batch}: {listed}", numbers)


def _count(threads: int | None) -> str:
    return "default" if threads is None else str(threads)


def recommended_row(results: Sequence[Result], device: str, batch: int, precision: str | None,
                    threads: int | None) -> tuple[ScalingRow | None, str]:
    """The row of the configuration the precision and threads lines recommend at the batch (their
    values; None: the default), and what it is in words: the baseline, or the one knob changed.
    Both changed is a combination never measured (one knob at a time): the faster of the two rows,
    said so. None where that row has no speed."""
    base, variants = rows_at(results, device, batch)
    if base is None:
        return None, ""
    changed = [row for row in variants if (row.knob == "precision" and row.value == precision != "fp32")
               or (row.knob == "threads" and row.value == threads != base.threads)]
    row = max(changed, key=lambda r: r.samples_per_s or 0.0, default=base)
    if row.status != "ok" or not row.samples_per_s:
        return None, ""
    if len(changed) < 2:
        return row, "the recommended configuration"
    return row, (f"the faster of the recommended {' and '.join(r.label for r in changed)}, measured one at a "
                 "time: together not measured")
