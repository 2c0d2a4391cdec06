"""How the read commands scale with a fleet's database: build one of N results from a few real
trials, then time each command on it (wall time, best and median of --repeat, and peak RSS).

A seed database of real tiny trials (`--seed`; made here when not given: `run mlp cnn --quick`,
a `max-batch`, a `calibrate --quick`, `run --quick`, about 3 min on 2 cores) is multiplied into
`--runs` runs on `--machines` machines (hostnames rewritten; every fourth machine's trials on
an H100, ten times faster), `--results` results in all: each seed run is copied with a new run
id, later created_at, each result repeated at doubled batches as a sweep would, its speed
scaled per machine with a little noise, its raw step times resampled to 20-200 entries and its
tracker samples kept (tens). The copies go in through `import_bundle`, as a fleet's bundles do.

    python benchmarks/store_scale.py --results 20000 --db sqlite:////tmp/scale/big.db
    python benchmarks/store_scale.py --results 20000 --db postgresql://u@host/empty_db --seed /tmp/scale/seed.db
    python benchmarks/store_scale.py --db A --db B --no-build     # time existing ones side by side

Give each --db an empty database (or --no-build for one built before): timing writes into it
(`run mlp --quick`), so a re-timed database holds a few more results than it was built with.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

GPU_NAME = "NVIDIA H100 80GB HBM3"


def _rigbench(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "rigbench", *args], check=True, stdout=subprocess.DEVNULL)


def make_seed(folder: str) -> str:
    """A database of real tiny trials of each kind the commands read."""
    db = os.path.join(folder, "seed.db")
    _rigbench("run", "mlp", "cnn", "--quick", "-d", "cpu", "--db", db)
    _rigbench("max-batch", "mlp", "--memory-limit", "700MiB", "--start", "1024", "--tolerance", "0.25",
              "-d", "cpu", "--db", db)
    _rigbench("calibrate", "--quick", "--db", db)
    _rigbench("run", "--quick", "--db", db)
    return db


def _scaled(result: Any, run_id: str, when: datetime, factor: float, batch_scale: int, gpu: bool,
            rng: random.Random) -> Any:
    """A copy of `result` in run `run_id`, as if measured `factor` times faster, at `batch_scale`
    times the batch (each step that much longer: the same samples/s, so the copy still holds
    samples/s = batch / median step, which an import of its bundle checks)."""
    from rigbench.analysis.stats import throughput_summary
    from rigbench.spec import Result

    data = result.model_dump(mode="json")
    data.update(id=None, run_id=run_id, created_at=when.isoformat(timespec="seconds"))
    spec = data["spec"]
    spec["batch_size"] = spec["batch_size"] * batch_scale
    if gpu and spec["device"] == "cpu":
        spec["device"] = "cuda:0"
        data["device_name"] = GPU_NAME
    metrics = data["metrics"]
    stretch = batch_scale / factor  # each step's time
    steps = data["step_times_s"]
    if steps and not data["step_windows"]:  # resample: a realistic 20-200 steps per trial
        data["step_times_s"] = [rng.choice(steps) * stretch for _ in range(rng.randint(20, 200))]
    else:
        data["step_times_s"] = [t * stretch for t in steps]
    if data["step_times_s"] and metrics.get("samples_per_s"):  # the figures from the new steps, as a trial's
        summary = throughput_summary(data["step_times_s"], spec["batch_size"], data["step_windows"])
        per_sample = (metrics.get("tokens_per_s") or 0) / metrics["samples_per_s"]  # a language model's tokens
        low, high = summary.pop("samples_per_s_ci_low"), summary.pop("samples_per_s_ci_high")
        metrics.update(summary, samples_per_s_ci=[low, high])
        if per_sample:
            metrics["tokens_per_s"] = metrics["samples_per_s"] * per_sample
    return Result.model_validate(data)


def build(seed_db: str, url: str, total: int, n_runs: int, n_machines: int, rng_seed: int = 1) -> int:
    """Fill `url` with about `total` results over `n_runs` runs; returns how many were stored."""
    from rigbench.store import Store
    from rigbench.store.bundle import Bundle, RunRecord, dump_bundle, export_bundle, import_bundle, parse_bundle
    from rigbench.store.calibrations import CalibrationRecord

    rng = random.Random(rng_seed)
    seed = parse_bundle(dump_bundle(export_bundle(Store(seed_db, create=False))), "seed")
    templates = [(run, [r for r in seed.results if r.run_id == run.id],
                  [c for c in seed.calibrations if c.run_id == run.id]) for run in seed.runs]
    per_cycle = sum(len(results) for _, results, _ in templates) / len(templates)
    repeats = max(1, round(total / n_runs / max(per_cycle, 1)))
    machines = [(f"node{m:02d}", 0.5 + 2.5 * rng.random(), m % 4 == 3) for m in range(n_machines)]
    store = Store(url)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    stored, pending = 0, Bundle([], [], "synthetic")
    for i in range(n_runs):
        if stored + len(pending.results) >= total:
            break
        template, results, cals = templates[i % len(templates)]
        host, speed, gpu = machines[i % n_machines]
        run_id = uuid.uuid4().hex[:12]
        when = start + timedelta(hours=6 * i)
        machine = {**template.machine, "hostname": host,
                   "gpus": [{"vendor": "nvidia", "name": GPU_NAME, "memory_bytes": 85 * 2**30}] if gpu else []}
        pending.runs.append(RunRecord(id=run_id, created_at=when.isoformat(timespec="seconds"),
                                      command=template.command, machine=machine))
        k = 0
        for rep in range(repeats):
            for result in results:
                k += 1
                factor = speed * (10.0 if gpu else 1.0) * rng.uniform(0.95, 1.05)
                pending.results.append(_scaled(result, run_id, when + timedelta(seconds=k), factor,
                                               2 ** (rep % 4), gpu, rng))
        pending.calibrations += [CalibrationRecord(**{**c.model_dump(), "run_id": run_id,
                                                      "created_at": when.isoformat(timespec="seconds")})
                                 for c in cals]
        if len(pending.results) >= 2000 or i == n_runs - 1:
            stored += import_bundle(store, pending).added_results
            pending = Bundle([], [], "synthetic")
    if pending.runs:
        stored += import_bundle(store, pending).added_results
    return stored


def _timed(args: Sequence[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds (user and system), peak RSS in MiB) of one `rigbench` command
    (in environment `env`, default this one's). The CPU time moves less than the wall time on a
    machine other work shares."""
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "rigbench", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - began
    if os.waitstatus_to_exitcode(status) not in (0, 1):  # 1: ran, but no answer (e.g. nothing to compare)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        print(f"  ! rigbench {' '.join(args)}: exit {os.waitstatus_to_exitcode(status)}: {err[-300:]}", file=sys.stderr)
    if proc.stderr:
        proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def commands(url: str, out: str) -> list[tuple[str, list[str]]]:
    """Each read command with arguments taken from the database at `url`."""
    from rigbench.store import Store

    store = Store(url, create=False)
    runs = store.runs()
    suite = [r for r in runs if r["trials"] and "run --quick --db" in r["command"]]
    a, b = suite[-1]["id"], suite[-2]["id"]
    trial = store.list(run_id=a, limit=1)[0].id
    return [
        ("results list", ["results", "list"]),
        ("results list --limit 20", ["results", "list", "--limit", "20"]),
        ("results list --where", ["results", "list", "--where", "framework=torch"]),
        ("results runs", ["results", "runs"]),
        ("results show ID", ["results", "show", str(trial)]),
        ("export json", ["results", "export", "-o", f"{out}/all.json"]),
        ("export csv", ["results", "export", "--format", "csv", "-o", f"{out}/all.csv"]),
        ("export bundle --run", ["results", "export", "--format", "bundle", "--run", a, "-o", f"{out}/one.json"]),
        ("report", ["report", "-o", f"{out}/all.html"]),
        ("report --run", ["report", "--run", a, "-o", f"{out}/one.html"]),
        ("compare A B", ["compare", a, b]),
        ("compare --frameworks", ["compare", "--frameworks"]),
        ("compare --published", ["compare", "--published"]),
        ("score RUN", ["score", a]),
        ("roofline", ["roofline"]),
        ("recommend mlp --no-run", ["recommend", "mlp", "--no-run"]),
        ("run mlp --quick (store)", ["run", "mlp", "--quick", "-d", "cpu"]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", action="append", required=True, help="database URL or file (repeat: side by side)")
    parser.add_argument("--results", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--machines", type=int, default=20)
    parser.add_argument("--seed", help="database of real trials to multiply (default: made now)")
    parser.add_argument("--no-build", action="store_true", help="time the databases as they are")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", help="time only the commands whose name contains this")
    args = parser.parse_args()
    from rigbench.store.engine import display_url  # the password masked in what is printed

    work = tempfile.mkdtemp(prefix="store-scale-")
    if not args.no_build:
        seed = args.seed or make_seed(work)
        for url in args.db:
            began = time.perf_counter()
            n = build(seed, url, args.results, args.runs, args.machines)
            print(f"built {display_url(url)}: {n} results in {time.perf_counter() - began:.0f} s", flush=True)
    table: dict[str, list[str]] = {}
    for url in args.db:
        for name, argv in commands(url, work):
            if args.only and args.only not in name:
                continue
            times = [_timed([*argv, "--db", url]) for _ in range(args.repeat)]
            walls = [t for t, _, _ in times]
            cell = (f"{min(walls):6.2f} / {statistics.median(walls):6.2f} s {min(c for _, c, _ in times):6.2f} s "
                    f"{max(r for _, _, r in times):5.0f} MiB")
            table.setdefault(name, []).append(cell)
            print(f"  {name:26} {cell}", flush=True)
    print(f"\n{'command':26} " + " | ".join(f"{display_url(u)[-38:]:>38}" for u in args.db))
    print(f"{'':26} " + " | ".join(f"{'best / median, least CPU, peak RSS':>38}" for _ in args.db))
    for name, cells in table.items():
        print(f"{name:26} " + " | ".join(f"{c:>38}" for c in cells))


if __name__ == "__main__":
    main()
