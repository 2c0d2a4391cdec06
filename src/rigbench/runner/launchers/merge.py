"""One trial's report from its ranks' reports (pure; the same rules for every framework, listed
below and in docs/METHODOLOGY.md, "Data parallel").

Every rank of a data-parallel trial writes a ChildReport of its own, so a hung or dead rank
cannot take the others' records with it. The trial's report follows these rules:

- A synchronous step lasts as long as its slowest rank: step i of the trial is the maximum
  over ranks of their step i. The ranks must have timed the same number of steps (they agree
  on it in the protocol); if not, the trial is a `crash` that says which ranks disagree.
  Where the ranks timed steps in windows (step_windows.py), the trial's windows are cut at every
  rank's window boundary.
- The trial is `ok` only if every rank is; otherwise it takes the first failing rank's status
  (in rank order) and its error, prefixed "rank N: ", passing over ranks marked `collateral`
  (stopped because another rank failed or hung) unless no other rank failed.
- Losses, the loss curve, the lr curve, epochs and the description (params, device, software,
  threads) are rank 0's: every rank trains the same model on its share of the same data.
- Allocator peak: the largest rank's. Measured window: the earliest start to the latest end,
  so the trackers summarise the time every rank was timing. First-step and warm-up times: the
  slowest rank's, as for every synchronous step. CPU seconds over the timed steps: the sum of
  every rank's (each rank's process works through every step).

It lives here rather than in runner/assemble because `Outcome.report` (launchers/base.py)
needs it, and assemble imports the launchers: the other way round would be an import cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from rigbench.child_report import ChildReport
from rigbench.step_windows import common_windows

#: an int field (allocator bytes) stays an int, a float one a float
Number = TypeVar("Number", int, float)


def merge_reports(reports: Sequence[ChildReport]) -> ChildReport:
    """The trial's report from its ranks' reports, given in rank order (rules in the module
    docstring). One report is returned as it is. ValueError for an empty list."""
    if not reports:
        raise ValueError("no reports to merge: a trial has at least one rank")
    if len(reports) == 1:
        return reports[0]
    update: dict[str, Any] = {
        "rank": 0,
        "world_size": len(reports),
        # zip stops at the shortest rank: only a failed trial can get here with unequal counts
        # (checked below for one that did not fail), where the common steps are still worth keeping.
        "step_times_s": (steps := [max(times) for times in zip(*(r.step_times_s for r in reports))]),
        "step_windows": common_windows([r.step_windows for r in reports], len(steps)),
        "measure_start": _least(r.measure_start for r in reports),
        "measure_end": _most(r.measure_end for r in reports),
        "allocator_peak_bytes": _most(r.allocator_peak_bytes for r in reports),
        "capped_peak_bytes": _most(r.capped_peak_bytes for r in reports),
        "first_step_s": _most(r.first_step_s for r in reports),
        "warmup_s": _most(r.warmup_s for r in reports),
        # every rank's process works through the trial's steps: their CPU time adds up
        "measure_cpu_s": (None if any(r.measure_cpu_s is None for r in reports)
                          else sum(r.measure_cpu_s for r in reports if r.measure_cpu_s is not None)),
    }
    failing = next(((rank, r) for rank, r in enumerate(reports) if r.status != "ok" and not r.collateral),
                   next(((rank, r) for rank, r in enumerate(reports) if r.status != "ok"), None))
    if failing is not None:
        rank, report = failing
        update.update(status=report.status, error=_naming_rank(rank, report.error or report.status),
                      diverged_at_step=report.diverged_at_step, diverged_at_epoch=report.diverged_at_epoch)
    elif disagreement := step_count_disagreement(reports):
        # A step time of ranks that did not step together is no step time: none is kept.
        update.update(status="crash", error=disagreement, step_times_s=[], step_windows=[])
    # deep: the trial's report shares no list or dict with rank 0's
    return reports[0].model_copy(update=update, deep=True)


def step_count_disagreement(reports: Sequence[ChildReport]) -> str | None:
    """Why the ranks' timed steps cannot be matched step by step (their counts differ), or
    None when every rank timed the same number of steps."""
    ranks_by_count: dict[int, list[int]] = {}
    for rank, report in enumerate(reports):
        ranks_by_count.setdefault(len(report.step_times_s), []).append(rank)
    if len(ranks_by_count) <= 1:
        return None
    groups = "; ".join(
        f"{count} on rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"
        for count, ranks in sorted(ranks_by_count.items(), reverse=True))
    return f"the ranks timed different numbers of steps, so no step can be matched across them: {groups}"


def _least(values: Iterable[Number | None]) -> Number | None:
    """The smallest of the values a rank reported (None when no rank did)."""
    known = [v for v in values if v is not None]
    return min(known) if known else None


def _most(values: Iterable[Number | None]) -> Number | None:
    """The largest of the values a rank reported (None when no rank did)."""
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _naming_rank(rank: int, error: str) -> str:
    """`error` with the failing rank named on its headline: its last line, the one the short
    displays show (a traceback's exception; a crash's signal, after the stderr it printed)."""
    *before, headline = error.strip().splitlines() or [""]
    return "\n".join([*before, f"rank {rank}: {headline}"])
