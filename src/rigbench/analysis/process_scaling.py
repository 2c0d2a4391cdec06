"""How a workload scales over data-parallel processes (`rigbench scaling --processes 1,2,4`):
throughput, speed-up and efficiency against one process, with confidence intervals, and beside
each measured point the one predicted from the one-process step time and the all-reduce time
measured for the model's gradients. Pure functions over stored Results, no I/O.

- Weak scaling keeps the per-rank batch (the global batch grows with N); strong scaling keeps
  the global batch (each rank takes global / N).
- speed-up(N) = samples/s(N) / samples/s(1); efficiency(N) = speed-up(N) / N (the one rule
  for every framework, docs/METHODOLOGY.md's "Data parallel"). Its 95% CI is the bootstrap CI
  of median step(1) / median step(N) (analysis/significance.ratio_ci, each sample resampled on its
  own) times global batch(N) / (N x global batch(1)).
- Prediction: step(N) = step(1) x per-rank batch(N) / batch(1) + all-reduce(N), where
  all-reduce(N) is the trial's own pre-run check at the gradient bytes (allreduce_grad_ms).
  It assumes compute scales with the per-rank batch, each rank computes as fast as the one
  process did, and no overlap of communication with computation (DDP overlaps its buckets with
  the backward pass, so a measured point above the prediction is that overlap; one below it is
  compute or contention the prediction leaves out: on a CPU the ranks share the cores).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rigbench.analysis.significance import ratio_ci
from rigbench.analysis.trials import workload_label
from rigbench.spec import Result

Mode = Literal["weak", "strong"]
#: Efficiency at or above this is "scales well" in the recommendation.
GOOD_EFFICIENCY = 0.8


@dataclass
class ProcessRow:
    """One point of the study: one trial at `processes` ranks."""

    processes: int
    batch_per_rank: int
    global_batch: int
    status: str
    error: str | None
    trial_id: int | None
    samples_per_s: float | None
    samples_per_s_ci: tuple[float, float] | None
    speedup: float | None
    efficiency: float | None
    efficiency_ci: tuple[float, float] | None
    predicted_samples_per_s: float | None
    predicted_efficiency: float | None
    comm_share: float | None
    straggler_ratio: float | None
    allreduce_grad_ms: float | None

    def row(self) -> dict[str, Any]:
        """The JSON form (`rigbench scaling --processes ... --json`)."""
        out = dict(self.__dict__)
        for key in ("samples_per_s_ci", "efficiency_ci"):
            out[key] = list(out[key]) if out[key] else None
        return out


def _usable(r: Result | None) -> bool:
    """A finished trial with its throughput and median step (stored metrics: listings load no
    raw step times; the efficiency's CI needs them and is left out without)."""
    return (r is not None and r.status == "ok" and bool(r.metrics.samples_per_s)
            and r.metrics.step_time_ms_median is not None)


def process_scaling_rows(results: Sequence[Result]) -> list[ProcessRow]:
    """The study's rows in process order, from its trials (one per process count; the newest
    wins). Speed-up, efficiency and prediction need the one-process trial."""
    by_n: dict[int, Result] = {}
    for r in sorted(results, key=lambda r: r.id or 0):
        by_n[r.spec.world_size] = r
    base = by_n.get(1)
    rows = []
    for n, r in sorted(by_n.items()):
        m = r.metrics
        row = ProcessRow(
            processes=n, batch_per_rank=r.spec.batch_size, global_batch=r.spec.batch_size * n,
            status=r.status, error=r.error, trial_id=r.id, samples_per_s=m.samples_per_s,
            samples_per_s_ci=m.samples_per_s_ci, speedup=None, efficiency=None, efficiency_ci=None,
            predicted_samples_per_s=None, predicted_efficiency=None, comm_share=m.comm_share,
            straggler_ratio=m.straggler_ratio, allreduce_grad_ms=m.allreduce_grad_ms)
        if base is not None and _usable(base) and _usable(r):
            _against(row, r, base)
        rows.append(row)
    return rows


def _against(row: ProcessRow, r: Result, base: Result) -> None:
    """Fill the row's figures relative to the one-process trial `base`."""
    n, base_speed = row.processes, base.metrics.samples_per_s or 0.0
    scale = row.global_batch / (n * base.spec.batch_size)
    if row.samples_per_s is not None:
        row.speedup = row.samples_per_s / base_speed
        row.efficiency = row.speedup / n
        if base.step_times_s and r.step_times_s:
            low, high = ratio_ci(base.timing_samples(), r.timing_samples())
            row.efficiency_ci = (low * scale, high * scale)
    base_step = (base.metrics.step_time_ms_median or 0.0) / 1e3
    compute = base_step * row.batch_per_rank / base.spec.batch_size
    communicate = (r.metrics.allreduce_grad_ms or 0.0) / 1e3 if n > 1 else 0.0
    if n == 1 or r.metrics.allreduce_grad_ms is not None:
        row.predicted_samples_per_s = row.global_batch / (compute + communicate)
        row.predicted_efficiency = row.predicted_samples_per_s / (n * base_speed)


def studies(results: Sequence[Result]) -> dict[tuple, list[Result]]:
    """Each multi-process trial with the one-process trial it scales from: weak scaling when a
    one-process trial has its per-rank batch, else strong scaling when one has its global batch.
    Key: (workload, framework, device, precision, mode, the one-process batch)."""
    trials = [r for r in results if r.status == "ok" and r.spec.kind == "speed" and r.metrics.samples_per_s]
    singles = {(workload_label(r), r.spec.framework, r.spec.device, r.spec.precision, r.spec.batch_size): r
               for r in sorted(trials, key=lambda r: r.id or 0) if not r.spec.is_data_parallel}
    studies: dict[tuple, list[Result]] = {}
    for r in trials:
        if r.spec.world_size == 1:
            continue
        head = (workload_label(r), r.spec.framework, r.spec.device, r.spec.precision)
        for mode, batch in (("weak", r.spec.batch_size), ("strong", r.spec.batch_size * r.spec.world_size)):
            base = singles.get((*head, batch))
            if base is not None:
                studies.setdefault((*head, mode, batch), [base]).append(r)
                break
    return studies


def decide_processes(results: Sequence[Result], device: str) -> tuple[int, str, dict[Any, Any]] | None:
    """The recommendation's process line for `device` (value, text, figures): the process count
    of the widest study's best efficiency verdict (scaling_verdict); None without a study."""
    found = [trials for key, trials in studies(results).items() if key[2] == device]
    if not found:
        return None
    rows = process_scaling_rows(max(found, key=lambda trials: max(r.spec.world_size for r in trials)))
    verdict = scaling_verdict(rows)
    if verdict is None:
        return None
    good = [r for r in rows if r.processes > 1 and (r.efficiency or 0) >= GOOD_EFFICIENCY]
    numbers: dict[Any, Any] = {r.processes: {"efficiency": r.efficiency, "comm_share": r.comm_share, "trial": r.trial_id}
               for r in rows}
    return (good[-1].processes if good else 1), f"processes: {verdict}", numbers


def _above_one(row: ProcessRow) -> str:
    """Why an efficiency above 1, its whole 95% interval too, is not a finding: each rank then
    outran the one process, which on a CPU (the ranks sharing its cores) means the baseline ran
    slow: other processes' load, which a framework at its own thread count suffers most from
    (seen: 1.87 at 4 processes on 2 busy cores), or its threads."""
    low = row.efficiency_ci[0] if row.efficiency_ci else row.efficiency
    if low is None or low <= 1:
        return ""
    return (" (above 1: each rank outran the one process, whose speed is the baseline; a busy machine or its "
            "threads slowed it, so time the study again on a quiet machine)")


def scaling_verdict(rows: Sequence[ProcessRow]) -> str | None:
    """One line for the recommendation: up to which process count the workload scales with
    at least GOOD_EFFICIENCY, and whether communication bounds it beyond; None without a
    measured multi-process point."""
    measured = [r for r in rows if r.processes > 1 and r.efficiency is not None]
    if not measured:
        return None
    good = [r for r in measured if (r.efficiency or 0) >= GOOD_EFFICIENCY]
    if good and good[-1] is measured[-1]:
        best = good[-1]
        return f"scales to {best.processes} processes with efficiency {best.efficiency:.2f}" + _above_one(best)
    first_bad = next(r for r in measured if (r.efficiency or 0) < GOOD_EFFICIENCY)
    head = (f"scales to {good[-1].processes} processes with efficiency {good[-1].efficiency:.2f}; "
            if good else "")
    if first_bad.comm_share is not None and first_bad.comm_share >= 0.5:
        beyond = good[-1].processes if good else 1
        return (f"{head}communication-bound beyond {beyond}: "
                f"at {first_bad.processes} processes {first_bad.comm_share:.0%} of a step is gradient "
                f"synchronisation (efficiency {first_bad.efficiency:.2f})")
    return (f"{head}at {first_bad.processes} processes efficiency is {first_bad.efficiency:.2f}"
            + (f" with {first_bad.comm_share:.0%} of a step in gradient synchronisation"
               if first_bad.comm_share is not None else ""))
