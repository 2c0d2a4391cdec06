"""Max-batch under a memory cap, then runs at the recommended batch under the same cap.

Issue 23 item 21: the memory model used to budget the resident peak while the cap is on address
space (RLIMIT_AS), and cnn under a 1 GiB cap was recommended batch 1536, which then ran out of
memory once in six runs. Now the model budgets `capped_peak_mib`, what the cap counts. This
script runs `rigbench max-batch WORKLOAD --memory-limit LIMIT -d cpu`, prints the recommendation
beside the one the resident peak would have given (the same probes, the same 10% margin), then
runs `rigbench run WORKLOAD -b RECOMMENDED --memory-limit LIMIT -d cpu --quick` N times and
counts the runs that did not end `ok`. The target: 0 failures in 20.

Usage: python benchmarks/max_batch_cap.py [--workload cnn] [--limit 1GiB] [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from rigbench.experiments.max_batch import MIB, fit_memory_model, recommend
from rigbench.store import Store
from rigbench.units import parse_size


def rigbench(*args: str, no_answer_ok: bool = False) -> str:
    """stdout of a rigbench command; `no_answer_ok`: exit 1 (it ran, but had no answer: README's
    exit codes) is no failure here, its JSON says so."""
    done = subprocess.run([sys.executable, "-m", "rigbench", *args], capture_output=True, text=True)
    if done.returncode not in ((0, 1) if no_answer_ok else (0,)):
        raise SystemExit(f"rigbench {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="cnn")
    parser.add_argument("--limit", default="1GiB")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    limit = parse_size(args.limit, "--limit")
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "cap.db")
        found = json.loads(rigbench("max-batch", args.workload, "-d", "cpu", "--memory-limit", args.limit,
                                    "--db", db, "--json", no_answer_ok=True))
        batch = found["recommended"]
        probes = [r for r in Store(db).list() if r.status == "ok"]
        by_rss = recommend(limit, fit_memory_model([(r.spec.batch_size, r.metrics.rss_peak_mib * MIB)
                                                    for r in probes if r.metrics.rss_peak_mib]),
                           found["margin"], found["largest_ok"])[0]
        print(f"{args.workload} under {args.limit}: largest ok {found['largest_ok']}, smallest oom "
              f"{found['smallest_oom']}; recommended {batch} by {found['memory_metric']} "
              f"(the resident peak alone would give {by_rss})")
        for r in probes:
            rss, capped = (float("nan") if v is None else v for v in (r.metrics.rss_peak_mib, r.metrics.capped_peak_mib))
            print(f"  probe b{r.spec.batch_size}: rss peak {rss:.0f} MiB, capped peak {capped:.0f} MiB")
        if batch is None:
            print("no recommendation: nothing to run")
            return 1
        statuses: Counter[str] = Counter()
        for i in range(args.runs):
            rows = json.loads(rigbench("run", args.workload, "-b", str(batch), "-d", "cpu", "--quick",
                                       "--memory-limit", args.limit, "--db", db, "--json"))
            statuses[rows[0]["status"]] += 1
            print(f"  run {i + 1}/{args.runs} at b{batch}: {rows[0]['status']}", flush=True)
    failures = args.runs - statuses["ok"]
    print(f"{failures} of {args.runs} runs at the recommended batch {batch} failed under {args.limit} "
          f"({dict(statuses)})")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
