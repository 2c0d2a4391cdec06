"""An A/A check between trials: N identical trials of one configuration in one rigbench run,
as `rigbench scaling` runs its baseline and variants one after another. It prints each trial's
samples/s with its 95% CI, how far the trials are apart, and how many pairs of them have CIs
that do not overlap: pairs a comparison of single trials' CIs would call different although
nothing differs. Why it exists: a trial's CI is a bootstrap over its own steps and covers the
noise between them, not the drift between trials (docs/METHODOLOGY.md, "What a trial's
interval does not cover"), which is why `rigbench scaling` runs its baseline first and last.

It also prints the first trial over the median of the rest: over several runs, whether the
first trial of a run (the first forked from a fresh warm-start server; RIGBENCH_COLD_START=1
for cold starts) differs from the others (docs/METHODOLOGY.md).

Usage: python benchmarks/identical_trials.py [--case cnn:64] [--trials 6] [--framework torch]
                                             [--quick] [--db PATH]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import tempfile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", default="cnn:64", help="WORKLOAD:BATCH (default cnn:64)")
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--framework", default="torch")
    parser.add_argument("--quick", action="store_true", help="the --quick protocol (about 20 timed steps)")
    parser.add_argument("--db", help="database to store the trials in (default: a temporary one)")
    args = parser.parse_args()

    from rigbench import api

    workload, batch = args.case.rsplit(":", 1)
    spec = api.plan_run([workload], ["cpu"], [int(batch)], quick=args.quick, frameworks=args.framework)[0]
    db = args.db or os.path.join(tempfile.mkdtemp(prefix="identical-trials-"), "trials.db")
    outcome = api.run([spec.model_copy() for _ in range(args.trials)], db=db)
    ok = [r for r in outcome.results if r.status == "ok" and r.metrics.samples_per_s and r.metrics.samples_per_s_ci]
    print(f"{spec.label()}, {len(ok)} of {args.trials} identical trials in one run (os.cpu_count() = {os.cpu_count()}, "
          f"load average {os.getloadavg()[0]:.2f}):")
    for r in ok:
        low, high = r.metrics.samples_per_s_ci or (0.0, 0.0)
        speed = r.metrics.samples_per_s or 0.0
        print(f"  trial {r.id}: {speed:,.1f} samples/s [{low:,.1f}-{high:,.1f}] "
              f"({100 * (low / speed - 1):+.1f}% / {100 * (high / speed - 1):+.1f}%), {r.metrics.steps_measured} steps")
    for r in outcome.results:
        if r not in ok:
            print(f"  trial {r.id}: {r.status} {r.error or ''}".rstrip())
    if len(ok) < 2:
        return
    speeds = [r.metrics.samples_per_s or 0.0 for r in ok]
    pairs = list(itertools.combinations(ok, 2))
    apart = sum(1 for a, b in pairs if _apart(a.metrics.samples_per_s_ci, b.metrics.samples_per_s_ci))
    print(f"fastest / slowest: {max(speeds) / min(speeds):.3f}; pairs whose CIs do not overlap: "
          f"{apart} of {len(pairs)}")
    # the run's first trial is the first forked from a fresh warm-start server (or the first
    # cold one): docs/METHODOLOGY.md compares it with the rest over several runs
    rank = sorted(speeds, reverse=True).index(speeds[0]) + 1
    print(f"first trial / median of the rest: {speeds[0] / statistics.median(speeds[1:]):.3f} "
          f"(rank {rank} of {len(speeds)}, 1 = fastest)")


def _apart(a: tuple[float, float] | None, b: tuple[float, float] | None) -> bool:
    return bool(a and b and (a[1] < b[0] or b[1] < a[0]))


if __name__ == "__main__":
    main()
