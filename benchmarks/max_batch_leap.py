"""Max-batch's growth: leaping where the memory line leaves room against doubling, side by side.

The search grows the batch from --start until a probe runs out of memory; since 2026-11-28 it
multiplies by 4 or 8 (max_batch_logic.LEAP) where the line fitted to the probes so far puts the
limit at least twice as far as the probe would land, and doubles otherwise. This script runs
the same search both ways in one process, alternating which goes first over `--rounds`, each
into its own database, and prints per search the probes, the seconds, what it found and what it
recommends. Probe counts are the figure to compare (seconds move with the machine's load).

Usage: python benchmarks/max_batch_leap.py [--workloads mlp,cnn] [--limit 1GiB] [--rounds 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rigbench.experiments import max_batch
from rigbench.units import parse_size, split_list


def search(workload: str, limit: int, leap: int, db: str) -> tuple[int, float, str]:
    """(probes, seconds, what it found) of one search whose growth is at most `leap`."""
    saved = max_batch.LEAP
    max_batch.LEAP = leap  # what find_max_batch stores as the search's leap, and grows by
    try:
        began = time.perf_counter()
        outcome = max_batch.find_max_batch(workload, "cpu", memory_limit_bytes=limit, db=db)
        seconds = time.perf_counter() - began
    finally:
        max_batch.LEAP = saved
    batches = " ".join(f"{r.spec.batch_size}{'' if r.status == 'ok' else '!'}" for r in outcome.probes)
    found = (f"largest ok {outcome.largest_ok}, smallest oom {outcome.smallest_oom}, recommended "
             f"{outcome.recommended} [{batches}]")
    return len(outcome.probes), seconds, found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="mlp,cnn")
    parser.add_argument("--limit", default="1GiB", help="the CPU memory limit of every search")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    limit = parse_size(args.limit)
    print(f"max-batch on the CPU under {args.limit}, default --start/--tolerance; '!' marks an oom probe")
    with tempfile.TemporaryDirectory(prefix="rigbench-leap-") as tmp:
        for workload in split_list([args.workloads]):
            for round_ in range(args.rounds):
                order = [max_batch.LEAP, 2] if round_ % 2 == 0 else [2, max_batch.LEAP]
                counts = {}
                for leap in order:
                    db = str(Path(tmp) / f"{workload}-{round_}-{leap}.db")
                    probes, seconds, found = search(workload, limit, leap, db)
                    counts[leap] = probes
                    print(f"{workload} round {round_ + 1} leap x{leap}: {probes} probes, {seconds:.1f} s: {found}")
                print(f"{workload} round {round_ + 1}: probes leap/doubling = {counts[max_batch.LEAP] / counts[2]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
