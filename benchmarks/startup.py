"""How fast `rigbench` answers before any training: the commands that train nothing, timed from
start to exit, and `run`'s first progress line, timed from start to that line.

Each command runs --repeat times in a fresh process; the table gives the median wall time and
the median CPU time (user + system of the process: on a busy machine the wall time waits
for a core, the CPU time does not). With --baseline PATH (another checkout, e.g. a
`git worktree add /tmp/base <commit>`) each command is timed under both checkouts, in turn,
and the ratio is baseline / this one.

    python benchmarks/startup.py
    python benchmarks/startup.py --baseline /tmp/base --repeat 9

The database read is a copy of tests/fixtures/v01.db (5 runs: speed, train, lr-find, timeout,
calibrate), migrated by a first read before the timing; `run` writes into a throwaway one.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def _env(checkout: Path) -> dict[str, str]:
    """The environment that runs `checkout`'s rigbench: its src/ first on the path."""
    return {**os.environ, "PYTHONPATH": str(checkout / "src"), "COLUMNS": "200"}


def _once(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system) and exit code of one run of `rigbench argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)  # the children waited for so far: this one is next
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rigbench", *argv], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, done.returncode


def _first_line(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Seconds from start to the first line `rigbench argv` writes on stderr; then it is stopped
    (SIGTERM: the command's own Ctrl-C handling) and waited for."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "rigbench", *argv], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    wall = time.perf_counter() - start
    proc.send_signal(signal.SIGTERM)
    proc.stderr.read()
    proc.wait()
    return wall, line.strip()


def _commands(db: str, runs: list[str]) -> dict[str, list[str]]:
    return {
        "--version": ["--version"],
        "--help": ["--help"],
        "workloads": ["workloads"],
        "results list": ["results", "list", "--db", db],
        "results show 1": ["results", "show", "1", "--db", db],
        "results runs": ["results", "runs", "--db", db],
        f"compare {runs[0][:6]} {runs[1][:6]}": ["compare", runs[0], runs[1], "--db", db],
    }


def _runs(db: str, env: dict[str, str]) -> list[str]:
    """The stored runs' ids (and the database migrated, by this first read)."""
    done = subprocess.run([sys.executable, "-m", "rigbench", "results", "runs", "--json", "--db", db],
                          env=env, capture_output=True, text=True, check=True)
    return [r["id"] for r in json.loads(done.stdout)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, help="Another checkout to time beside this one.")
    parser.add_argument("--repeat", type=int, default=7, help="Runs of each command per checkout (default 7).")
    parser.add_argument("--no-run", action="store_true", help="Leave out `run`'s first line (it starts a trial).")
    args = parser.parse_args()
    checkouts = {"this": HERE, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "read.db")
        shutil.copy(HERE / "tests" / "fixtures" / "v01.db", db)
        runs = _runs(db, _env(HERE))  # migrates the copy: the timing reads a current database
        timed: dict[str, dict[str, list[tuple[float, float, int]]]] = {}
        for name, argv in _commands(db, runs).items():
            timed[name] = {label: [] for label in checkouts}
            for _ in range(args.repeat):  # the checkouts in turn, so that a change in load hits both
                for label, checkout in checkouts.items():
                    timed[name][label].append(_once(argv, _env(checkout)))
        first: dict[str, list[float]] = {label: [] for label in checkouts}
        if not args.no_run:
            for k in range(args.repeat):
                for label, checkout in checkouts.items():
                    run_db = os.path.join(tmp, f"run-{label}-{k}.db")
                    wall, said = _first_line(["run", "mlp", "--quick", "-d", "cpu", "--db", run_db], _env(checkout))
                    first[label].append(wall)
            print(f"run's first line: {said!r}")
    print(f"{args.repeat} runs each, median seconds; {os.cpu_count()} CPUs, load average "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end")
    header = f"{'command':28s} {'wall':>6s} {'CPU':>6s}"
    if args.baseline:
        header += f" {'base wall':>9s} {'base CPU':>8s} {'wall x':>6s} {'CPU x':>6s}"
    print(header)
    for name, by in timed.items():
        codes = sorted({c for runs_ in by.values() for _, _, c in runs_})
        name += "" if codes == [0] else f" (exit {','.join(map(str, codes))})"
        wall = {label: statistics.median(w for w, _, _ in v) for label, v in by.items()}
        cpu = {label: statistics.median(c for _, c, _ in v) for label, v in by.items()}
        line = f"{name:28s} {wall['this']:6.2f} {cpu['this']:6.2f}"
        if args.baseline:
            line += (f" {wall['baseline']:9.2f} {cpu['baseline']:8.2f} {wall['baseline'] / wall['this']:5.1f}x"
                     f" {cpu['baseline'] / cpu['this']:5.1f}x")
        print(line)
    if not args.no_run:  # wall time only: the command is stopped after its first line
        wall = {label: statistics.median(v) for label, v in first.items()}
        line = f"{'run: its first line':28s} {wall['this']:6.2f} {'-':>6s}"
        if args.baseline:
            line += f" {wall['baseline']:9.2f} {'-':>8s} {wall['baseline'] / wall['this']:5.1f}x {'-':>6s}"
        print(line)


if __name__ == "__main__":
    main()
