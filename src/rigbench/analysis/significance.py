"""Whether two sides differ: two samples of step times (one trial a side), or two sides' per-trial
speeds (`--repeat`), with B/A's interval; analysis/compare.py pairs the results and judges each
pair with these (the rules in its docstring and docs/COMPARING.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from rigbench.analysis.stats import (
    MEDIAN_CI_MIN,
    mann_whitney_u,
    median,
    median_ci,
    resampled_medians,
    welch_interval,
    welch_p,
)

ALPHA = 0.05
RESAMPLES = 2000
SEED = 0


def trial_significance(a_speeds: Sequence[float], b_speeds: Sequence[float]) -> dict[str, Any]:
    """Two sides' per-trial samples/s (at least two each): B/A as the ratio of the geometric
    means, its 95% Welch interval, `faster`/`slower` where the interval leaves out 1, and Welch's
    p (stats.welch_p), which adjust_for_pairs adjusts."""
    logs_a, logs_b = [math.log(v) for v in a_speeds], [math.log(v) for v in b_speeds]
    diff, low, high = welch_interval(logs_a, logs_b)
    verdict = "faster" if low > 0 else "slower" if high < 0 else "no change"
    return {"ratio": math.exp(diff), "ratio_ci": (math.exp(low), math.exp(high)), "verdict": verdict,
            "p_value": welch_p(logs_a, logs_b)}


def ratio_ci(a_times: Sequence[float], b_times: Sequence[float], confidence: float = 0.95,
             resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float]:
    """Bootstrap CI of median(a) / median(b) (= B's samples/s over A's at equal batch): each
    sample resampled on its own, in blocks where its steps are correlated
    (stats.resampled_medians), percentile interval, fixed seed."""
    rng = np.random.default_rng(seed)
    med_a = resampled_medians(a_times, rng, resamples)
    med_b = resampled_medians(b_times, rng, resamples)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(med_a / med_b, [tail, 100 - tail])
    return float(low), float(high)


def significance(a_times: Sequence[float], b_times: Sequence[float], alpha: float = ALPHA) -> dict[str, Any]:
    """The comparison of two step-time samples (A before, B after): ratio = B's speed over
    A's (median A / median B), its bootstrap CI, U and p, and the verdict: `faster`/`slower`
    when p < alpha and the two medians' 95% intervals (stats.median_ci) do not overlap, each
    side with at least MEDIAN_CI_MIN values (fewer have no 95% interval), else `no change`."""
    u, p = mann_whitney_u(a_times, b_times)
    ratio = median(a_times) / median(b_times)
    a_low, a_high = median_ci(a_times)
    b_low, b_high = median_ci(b_times)
    apart = a_high < b_low or b_high < a_low
    if p < alpha and apart and min(len(a_times), len(b_times)) >= MEDIAN_CI_MIN:
        verdict = "faster" if ratio > 1 else "slower"
    else:
        verdict = "no change"
    return {"u": u, "p_value": p, "ratio": ratio, "ratio_ci": ratio_ci(a_times, b_times),
            "cis_overlap": not apart, "verdict": verdict}
