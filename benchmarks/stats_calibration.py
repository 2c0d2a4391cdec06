"""Are rigbench's statistical claims true? Simulated step times with a known truth, put through
the real functions (analysis/stats.py, analysis/compare.py, analysis/significance.py, analysis/score.py):

- coverage: how often a trial's 95% interval of the median step time holds the true median;
- compare, one trial a side (Mann-Whitney U and CIs apart): how often two trials drawn from the
  same distribution are called different (the false-positive rate), and how often a real 5%,
  10% and 20% speed-up is found (the power);
- compare with repeats (3 trials a side, the Welch interval over trials): the same;
- ratio: how often compare's interval of the speed ratio holds 1.0 on A/A pairs;
- noisy: how often a trial is flagged noisy (step-time CV over 10%) at a known true CV;
- score: how often the 95% CI of a machine scored against itself holds 1.0;
- family: a compare of 8 workloads at once, how often it calls any unchanged one different, and
  how many changed ones it finds, with each pair judged alone and with their p values adjusted.

The step-time models (each with a true median step of 1): lognormal at a CV of 5% and of 20%;
5% of the steps stalled 1.5 to 3 times longer; a slow drift of +-5% across the trial; AR(1)
noise (each step's log time 0.5 times the previous one's plus fresh noise, CV 10%), because
consecutive steps are correlated in practice: `--references` prints the lag-1 autocorrelation
of the shipped reference machines' step times. "trial offset" adds what each new trial draws
afresh (its level off by a lognormal 3%, about what benchmarks/identical_trials.py shows on
the dev VM): the truth is then the median of the distribution, not of this trial.

Sample sizes are those rigbench times: 3 (`--quick`'s minimum, a slow workload), 5 (a
`--quick` host-timer trial's windows), 10 (the default protocol's minimum), 20 (a default
host-timer trial's windows) and 60 (a fast default-protocol trial). Every figure comes from a
fixed seed, so the same command prints the same table; the Monte Carlo error of a rate near
95% over N simulations is about sqrt(0.05 * 0.95 / N) (0.7% at N = 1,000).

Usage: python benchmarks/stats_calibration.py [--sims 1000] [--only coverage,compare,ratio,repeats,noisy,score,family]
                                              [--references]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable
from importlib import resources

import numpy as np

Generator = Callable[[np.random.Generator, int], np.ndarray]

SIZES = (3, 5, 10, 20, 60)
SPEEDUPS = (0.05, 0.10, 0.20)
OFFSET_SD = 0.03  # a trial's own level, lognormal sd (identical trials on the dev VM: 3-8% apart)
AR_PHI = 0.5      # lag-1 autocorrelation of log step times (the shipped references: --references)


def lognormal(cv: float) -> Generator:
    sigma = math.sqrt(math.log(1 + cv * cv))
    return lambda rng, n: rng.lognormal(0.0, sigma, n)


def stalls(rng: np.random.Generator, n: int) -> np.ndarray:
    """CV 5% steps, 5% of them stalled 1.5-3 times longer (a collection, another process)."""
    times = lognormal(0.05)(rng, n)
    hit = rng.random(n) < 0.05
    times[hit] *= rng.uniform(1.5, 3.0, int(hit.sum()))
    return times


def drift(rng: np.random.Generator, n: int) -> np.ndarray:
    """CV 5% steps on a level that drifts from -5% to +5% across the trial (symmetric in logs, so
    the median over the trial stays 1)."""
    return lognormal(0.05)(rng, n) * np.exp(np.linspace(-0.05, 0.05, n))


def ar1(rng: np.random.Generator, n: int, phi: float = AR_PHI, cv: float = 0.10) -> np.ndarray:
    """Stationary AR(1) log step times: marginal lognormal at `cv`, lag-1 correlation `phi`."""
    sigma = math.sqrt(math.log(1 + cv * cv))
    logs = np.empty(n)
    logs[0] = rng.normal(0.0, sigma)
    fresh = rng.normal(0.0, sigma * math.sqrt(1 - phi * phi), n)
    for i in range(1, n):
        logs[i] = phi * logs[i - 1] + fresh[i]
    return np.exp(logs)


def with_offset(gen: Generator, sd: float = OFFSET_SD) -> Generator:
    """`gen` on a trial level of its own (a new trial draws it again)."""
    return lambda rng, n: gen(rng, n) * math.exp(rng.normal(0.0, sd))


def _stalls_median() -> float:
    """The true median of `stalls`: its CDF (a lognormal, and the stalled mixture over a uniform
    factor, integrated on a fine grid) solved for 1/2 by bisection."""
    sigma = math.sqrt(math.log(1 + 0.05 ** 2))
    factors = np.linspace(1.5, 3.0, 2001)

    def cdf(m: float) -> float:
        phi = 0.5 * (1 + np.vectorize(math.erf)((math.log(m) - np.log(factors)) / (sigma * math.sqrt(2))))
        return 0.95 * 0.5 * (1 + math.erf(math.log(m) / (sigma * math.sqrt(2)))) + 0.05 * float(phi.mean())

    low, high = 0.9, 1.2
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if cdf(mid) < 0.5 else (low, mid)
    return (low + high) / 2


#: name -> (generator, true median)
MODELS: dict[str, tuple[Generator, float]] = {
    "lognormal CV 5%": (lognormal(0.05), 1.0),
    "lognormal CV 20%": (lognormal(0.20), 1.0),
    "5% stalls x1.5-3": (stalls, _stalls_median()),
    "drift +-5%": (drift, 1.0),
    f"AR(1) phi {AR_PHI}": (ar1, 1.0),
    "AR(1) + trial offset": (with_offset(ar1), 1.0),
}


def trial_intervals() -> dict[str, Callable[[np.ndarray], tuple[float, float]]]:
    """The trial interval methods side by side: the percentile bootstrap of the median (rigbench's
    until 2026-11-28) and the order statistics widened for correlated steps (stats.median_ci)."""
    from rigbench.analysis import stats

    return {"bootstrap": stats.bootstrap_ci, "median_ci": stats.median_ci}


def old_significance(a: list[float], b: list[float]) -> str:
    """compare's one-trial verdict until 2026-11-28: Mann-Whitney U p < 0.05 and the two medians'
    percentile-bootstrap intervals apart."""
    from rigbench.analysis import stats

    (a_low, a_high), (b_low, b_high) = stats.bootstrap_ci(a), stats.bootstrap_ci(b)
    if stats.mann_whitney_u(a, b)[1] < 0.05 and (a_high < b_low or b_high < a_low):
        return "faster" if stats.median(a) > stats.median(b) else "slower"
    return "no change"


def new_significance(a: list[float], b: list[float]) -> str:
    """compare's one-trial verdict now (significance.significance)."""
    from rigbench.analysis.significance import significance

    return str(significance(a, b)["verdict"])


RULES = {"bootstrap": old_significance, "median_ci": new_significance}


def coverage(gen: Generator, truth: float, n: int, sims: int, interval: Callable, seed: int = 1) -> float:
    """The share of `sims` simulated trials of `n` samples whose interval holds `truth`."""
    rng = np.random.default_rng(seed)
    held = 0
    for _ in range(sims):
        low, high = interval(gen(rng, n))
        held += low <= truth <= high
    return held / sims


def called(gen: Generator, n: int, sims: int, speedup: float = 0.0, rule: Callable = new_significance,
           seed: int = 2) -> float:
    """The share of simulated one-trial-a-side pairs that `rule` calls `faster` or `slower`, B's
    steps `speedup` faster than A's (0: an A/A pair)."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(sims):
        a, b = gen(rng, n), gen(rng, n) / (1 + speedup)
        hits += rule([float(t) for t in a], [float(t) for t in b]) != "no change"
    return hits / sims


def called_on_trials(gen: Generator, n: int, trials: int, sims: int, speedup: float = 0.0, seed: int = 3) -> float:
    """As `called`, for `trials` trials a side judged on trials (significance.trial_significance)."""
    from rigbench.analysis.significance import trial_significance
    from rigbench.analysis.stats import median

    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(sims):
        a = [1 / median(list(gen(rng, n))) for _ in range(trials)]
        b = [(1 + speedup) / median(list(gen(rng, n))) for _ in range(trials)]
        hits += trial_significance(a, b)["verdict"] != "no change"
    return hits / sims


def score_coverages(gen: Generator, n: int, trials: int, sims: int, seed: int = 4) -> tuple[float, float, float]:
    """The shares of simulated scores of a machine against itself (every suite workload, `trials`
    trials a side of `n` steps from `gen` on both) whose 95% CI holds 1.0, three ways on the same
    draws: the two-stage bootstrap with steps drawn one by one (until 2026-11-28), in blocks (until
    the Welch interval over repeats, also 2026-11-28), and compute_score's now."""
    from rigbench.analysis import score as scoring
    from rigbench.spec import Result, TrialSpec

    rng = np.random.default_rng(seed)

    def side(run: str) -> dict[str, tuple[Result, ...]]:
        return {w: tuple(Result(run_id=run, created_at="2026-01-01T00:00:00+00:00", status="ok",
                                spec=TrialSpec(workload=w, device="cpu", batch_size=batch),
                                step_times_s=[float(t) for t in gen(rng, n)]) for _ in range(trials))
                for w, batch in scoring.default_suite()}

    held = np.zeros(3)
    current = scoring._resampled_speed
    for _ in range(sims):
        score = scoring.compute_score(side("ours"), side("ref"), "cpu", resamples=500)
        assert score is not None
        blocks = scoring.bootstrap_interval(score.items, 500) if trials > 1 else score.ci
        scoring._resampled_speed = iid_resampled_speed
        try:
            one_by_one = scoring.bootstrap_interval(score.items, 500)
        finally:
            scoring._resampled_speed = current
        held += [low <= 1.0 <= high for low, high in (one_by_one, blocks, score.ci)]
    return tuple(held / sims)  # type: ignore[return-value]


def iid_resampled_speed(r, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """score's step resampling until 2026-11-28: each step drawn on its own (no blocks)."""
    times = np.asarray(r.timing_samples(), dtype=float)
    return r.spec.batch_size / np.median(times[rng.integers(0, times.size, size=(resamples, times.size))], axis=1)


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment (the other standard choice, shown beside compare's)."""
    adjusted, running = [1.0] * len(p_values), 0.0
    for rank, i in enumerate(sorted(range(len(p_values)), key=lambda j: p_values[j])):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def family(gen: Generator, n: int, trials: int, speedups: list[float], sims: int, seed: int = 7) -> np.ndarray:
    """One compare of len(speedups) workloads at a time (B's steps 1 + s faster in each; 0: the
    same), judged as compare judges (on steps with one trial a side, else on trials): the share of
    compares calling any unchanged workload different, and of changed workloads found, each with
    every pair at 5% alone, Holm-adjusted, and as compare adjusts them (Benjamini-Hochberg)."""
    from rigbench.analysis.compare import Pair, adjust_for_pairs
    from rigbench.analysis.significance import significance, trial_significance
    from rigbench.analysis.stats import median

    rng = np.random.default_rng(seed)
    same, changed = [s == 0 for s in speedups], [s != 0 for s in speedups]
    tally = np.zeros((2, 3))  # (any false call, changes found) x (alone, Holm, Benjamini-Hochberg)
    for _ in range(sims):
        pairs = []
        for s in speedups:
            if trials == 1:
                judged = significance(list(gen(rng, n)), list(gen(rng, n) / (1 + s)))
            else:
                judged = trial_significance([1 / median(list(gen(rng, n))) for _ in range(trials)],
                                            [(1 + s) / median(list(gen(rng, n))) for _ in range(trials)])
            pairs.append(Pair("w", None, None, judged["verdict"], p_value=judged["p_value"]))
        alone = [p.verdict != "no change" for p in pairs]
        held = [call and q < 0.05 for call, q in zip(alone, holm([p.p_value or 1.0 for p in pairs]))]
        adjust_for_pairs(pairs)
        for k, calls in enumerate((alone, held, [p.verdict != "no change" for p in pairs])):
            tally[0, k] += any(c and z for c, z in zip(calls, same))
            tally[1, k] += sum(c and z for c, z in zip(calls, changed)) / max(sum(changed), 1)
    return tally / sims


def ratio_coverage(gen: Generator, n: int, sims: int, blocks: bool, seed: int = 6) -> float:
    """The share of simulated A/A pairs (one trial a side) whose 95% interval of the speed ratio,
    significance.ratio_ci, holds 1.0; `blocks` False: its steps drawn one by one, as until 2026-11-28."""
    from rigbench.analysis import significance, stats

    rng = np.random.default_rng(seed)
    current = stats.resampled_medians

    def one_by_one(values, rng: np.random.Generator, resamples: int) -> np.ndarray:
        arr = np.asarray(values, dtype=float)
        return np.median(arr[rng.integers(0, arr.size, size=(resamples, arr.size))], axis=1)

    significance.resampled_medians = current if blocks else one_by_one
    try:
        held = 0
        for _ in range(sims):
            low, high = significance.ratio_ci(list(gen(rng, n)), list(gen(rng, n)), resamples=500)
            held += low <= 1.0 <= high
    finally:
        significance.resampled_medians = current
    return held / sims


def flagged_noisy(gen: Generator, n: int, sims: int, seed: int = 5) -> float:
    """The share of simulated trials that throughput_summary flags `noisy` (CV above NOISY_CV)."""
    from rigbench.analysis.stats import throughput_summary

    rng = np.random.default_rng(seed)
    return sum(bool(throughput_summary([float(t) for t in gen(rng, n)], 1)["noisy"]) for _ in range(sims)) / sims


def references() -> None:
    """The lag-1 autocorrelation of log step times in the shipped reference machines' trials, and
    the trials flagged noisy (their step-time CV, and the narrowest and widest 95% interval of
    their samples/s as a share of it)."""
    from rigbench.analysis.stats import NOISY_CV, coefficient_of_variation, median, median_ci
    from rigbench.step_windows import timing_samples

    folder = resources.files("rigbench.analysis").joinpath("data/reference_machines")
    for path in sorted(folder.iterdir(), key=lambda p: p.name):
        if not path.name.endswith(".json"):
            continue
        found, noisy = [], []
        for r in json.loads(path.read_text(encoding="utf-8"))["results"]:
            samples = timing_samples(r.get("step_times_s") or [], r.get("step_windows") or [])
            logs = np.log(samples)
            if logs.size >= 8:
                centred = logs - logs.mean()
                found.append((r["spec"]["workload"], logs.size,
                              float((centred[1:] * centred[:-1]).sum() / (centred ** 2).sum())))
            if (cv := coefficient_of_variation(samples)) > NOISY_CV:
                low, high = median_ci(samples)
                noisy.append(f"{r['spec']['workload']} CV {cv:.0%}, CI -{1 - median(samples) / high:.1%} to "
                             f"+{median(samples) / low - 1:.1%} (n {len(samples)})")
        shown = ", ".join(f"{w} {ac:+.2f} (n {n})" for w, n, ac in found)
        name = path.name.removesuffix(".json")
        print(f"{name}: median {np.median([ac for *_, ac in found]):+.2f}: {shown}")
        print(f"{name}: noisy {len(noisy)} of {len(found)}: {'; '.join(noisy)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sims", type=int, default=1000, help="simulations a cell (default 1,000)")
    parser.add_argument("--only", default="coverage,compare,ratio,repeats,noisy,score,family",
                        help="the parts to run, comma-separated (default: all)")
    parser.add_argument("--references", action="store_true",
                        help="also the lag-1 autocorrelation of the shipped references' step times")
    args = parser.parse_args()
    parts, sims, started = set(args.only.split(",")), args.sims, time.perf_counter()
    if args.references:
        print("lag-1 autocorrelation of log step times (one figure per window), shipped references:")
        references()
    if "coverage" in parts:
        methods = trial_intervals()
        print(f"\ncoverage of the true median by a trial's 95% interval ({sims:,} trials a cell):")
        print(f"{'model':22s} {'method':10s} " + " ".join(f"{'n=' + str(n):>6s}" for n in SIZES))
        for name, (gen, truth) in MODELS.items():
            for method, interval in methods.items():
                cells = [coverage(gen, truth, n, sims, interval) for n in SIZES]
                print(f"{name:22s} {method:10s} " + " ".join(f"{c:6.1%}" for c in cells))
    if "compare" in parts:
        print(f"\ncompare, one trial a side: the share called faster/slower ({sims:,} pairs a cell; "
              "A/A: same distribution, should be at most 5%)")
        print(f"{'model':22s} {'n':>3s} {'method':10s} {'A/A':>6s} "
              + " ".join(f"{'+' + format(s, '.0%'):>6s}" for s in SPEEDUPS))
        for name, (gen, _) in MODELS.items():
            for n in SIZES[1:]:
                for method, rule in RULES.items():
                    cells = [called(gen, n, sims, s, rule) for s in (0.0, *SPEEDUPS)]
                    print(f"{name:22s} {n:3d} {method:10s} " + " ".join(f"{c:6.1%}" for c in cells))
    if "repeats" in parts:
        print(f"\ncompare, 3 trials a side judged on trials ({sims:,} pairs a cell)")
        print(f"{'model':22s} {'n':>3s} {'A/A':>6s} " + " ".join(f"{'+' + format(s, '.0%'):>6s}" for s in SPEEDUPS))
        for name in ("lognormal CV 5%", "AR(1) + trial offset"):
            gen = MODELS[name][0]
            for n in (10, 60):
                cells = [called_on_trials(gen, n, 3, sims, s) for s in (0.0, *SPEEDUPS)]
                print(f"{name:22s} {n:3d} " + " ".join(f"{c:6.1%}" for c in cells))
    if "ratio" in parts:
        print(f"\ncompare's ratio interval on A/A pairs, one trial a side: the share holding 1.0 ({sims:,} pairs a cell)")
        print(f"{'model':22s} {'steps':14s} " + " ".join(f"{'n=' + str(n):>6s}" for n in SIZES[1:]))
        for name in ("lognormal CV 5%", f"AR(1) phi {AR_PHI}"):
            for label, blocks in (("one by one", False), ("in blocks", True)):
                cells = [ratio_coverage(MODELS[name][0], n, sims, blocks) for n in SIZES[1:]]
                print(f"{name:22s} {label:14s} " + " ".join(f"{c:6.1%}" for c in cells))
    if "noisy" in parts:
        print(f"\nthe share of trials flagged noisy (CV over 10%; {sims:,} trials a cell)")
        print(f"{'true step-time CV':22s} " + " ".join(f"{'n=' + str(n):>6s}" for n in SIZES))
        for label, gen in (("lognormal 5%", lognormal(0.05)), ("lognormal 8%", lognormal(0.08)),
                           ("lognormal 12%", lognormal(0.12)), ("lognormal 20%", lognormal(0.20)),
                           ("AR(1) 12%", lambda rng, n: ar1(rng, n, cv=0.12)), ("lognormal 5%, 5% stalls", stalls)):
            print(f"{label:22s} " + " ".join(f"{flagged_noisy(gen, n, sims):6.1%}" for n in SIZES))
    if "score" in parts:
        runs = max(sims // 5, 50)
        print(f"\nscore of a machine against itself: the share of 95% CIs holding 1.0 ({runs:,} scores a cell, "
              "8 workloads, 500 resamples each); bootstrap with steps one by one / in blocks / current")
        for name in ("lognormal CV 5%", f"AR(1) phi {AR_PHI}", "AR(1) + trial offset"):
            for n, trials in ((10, 1), (60, 1), (10, 2), (60, 2), (10, 3), (60, 3)):
                cells = score_coverages(MODELS[name][0], n, trials, runs)
                print(f"{name:22s} n={n:<3d} {trials} trial{'s' * (trials > 1)} a side: "
                      + " / ".join(f"{c:6.1%}" for c in cells))
    if "family" in parts:
        runs = max(sims // 2, 50)
        print(f"\ncompare of 8 workloads at once ({runs:,} compares a cell): the share calling any unchanged "
              "workload different / the share of changed ones found; each pair alone / Holm / Benjamini-Hochberg")
        cases = {"A/A": [0.0] * 8, "one +20%": [0.2] + [0.0] * 7, "all +10%": [0.1] * 8, "half +10%": [0.1] * 4 + [0.0] * 4}
        for name, n, trials in (("lognormal CV 5%", 10, 3), ("lognormal CV 5%", 60, 3), ("AR(1) + trial offset", 10, 3),
                                ("AR(1) + trial offset", 60, 3), (f"AR(1) phi {AR_PHI}", 60, 1),
                                ("AR(1) + trial offset", 60, 1)):
            for case, speedups in cases.items():
                (f1, f2, f3), (h1, h2, h3) = family(MODELS[name][0], n, trials, speedups, runs)
                print(f"{name:22s} n={n:<3d} {trials} trial{'s' * (trials > 1)} {case:9s}: "
                      + (f"any false {f1:6.1%} / {f2:6.1%} / {f3:6.1%}" if 0.0 in speedups else " " * 34)
                      + (f"  found {h1:6.1%} / {h2:6.1%} / {h3:6.1%}" if any(speedups) else ""))
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
