"""Paired comparison of two measurements of the same work (rigbench against a bare loop,
benchmarks/self_check.py): a ratio per round, an interval on it, and a verdict that says what
the noise allows, never a pass that the figures do not support.

Each round times both sides back to back (in alternating order), so drift in the machine's
speed hits both alike; the ratio of a round is ours / theirs of a time per step (above 1:
ours is slower). Over the rounds: the geometric mean of the ratios and a 95% percentile
bootstrap interval of it (the mean of the log ratios, resampled; analysis/stats.bootstrap_ci).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rigbench.analysis.stats import bootstrap_ci, t_interval

#: The cost the harness may add: within 1% of the bare loop.
TOLERANCE = 0.01
#: Fewer rounds give no verdict: a bootstrap over two or three ratios understates their spread
#: (on the dev VM, 2 rounds "resolved" torch at -3.1% [-3.3%, -2.9%]; 4 rounds then read
#: +1.3% [-1.1%, +4.7%]).
MIN_ROUNDS = 4


@dataclass(frozen=True)
class PairedRatio:
    """ours / theirs of a time per step over paired rounds."""

    ratio: float
    low: float
    high: float
    rounds: int

    def verdict(self, tolerance: float = TOLERANCE) -> str:
        """"within 1%" only when the whole interval is; "slower by x% [ci]" when all of it is
        above the tolerance; "faster than the bare loop" (not a pass: something the bare loop
        does is missing from ours) when all of it is below 1; else unresolved, with the interval's
        width (never a ± half-width: the interval need not be symmetric)."""
        pct = f"{100 * (self.ratio - 1):+.1f}% [{100 * (self.low - 1):+.1f}%, {100 * (self.high - 1):+.1f}%]"
        if self.rounds < MIN_ROUNDS:
            return f"unresolved ({self.rounds} rounds: a verdict takes at least {MIN_ROUNDS}; {pct})"
        if self.high < 1.0:
            return f"faster than the bare loop by {pct}: not a pass (find what is left out)"
        if self.low > 1.0 + tolerance:
            return f"slower by {pct}"
        if self.low >= 1.0 - tolerance and self.high <= 1.0 + tolerance:
            return f"within {100 * tolerance:g}% ({pct})"
        return f"unresolved (interval {100 * (self.high - self.low):.1f}% wide; {pct})"


def paired_ratio(ours: Sequence[float], theirs: Sequence[float]) -> PairedRatio:
    """The ratio of paired rounds' times (module docstring); ValueError without a round or
    with a time that is not positive."""
    if len(ours) != len(theirs) or not ours:
        raise ValueError(f"paired rounds need equal, non-zero counts: {len(ours)} and {len(theirs)}")
    if any(t <= 0 for t in (*ours, *theirs)):
        raise ValueError("paired times must be positive")
    logs = [math.log(a / b) for a, b in zip(ours, theirs)]
    return _from_logs(logs, *bootstrap_ci(logs, stat=np.mean))


def ratio_over_processes(ratios: Sequence[float]) -> PairedRatio:
    """One ratio from several processes' (each the geometric mean of its step pairs): their
    geometric mean and the Student-t interval of the mean log ratio. Why over processes: two
    networks' places in memory are fixed for a process's life and differ between processes, so
    each process carries an offset of its own that its pairs cannot average away (torch mlp:64
    on the dev VM: 0.996, 1.000, 1.010, 1.018 and 1.026 in five processes, each with an
    interval about 1% wide). `rounds` is the number of processes."""
    if len(ratios) < 2 or any(r <= 0 for r in ratios):
        raise ValueError(f"need at least two positive ratios, got {list(ratios)}")
    logs = [math.log(r) for r in ratios]
    return _from_logs(logs, *t_interval(logs))


def _from_logs(logs: Sequence[float], low: float, high: float) -> PairedRatio:
    """The geometric mean of log ratios and their interval, back on the ratio scale."""
    return PairedRatio(math.exp(sum(logs) / len(logs)), math.exp(low), math.exp(high), len(logs))
