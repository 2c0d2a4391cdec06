"""Fault suite: inject each fault into REAL runs of the `rigbench` command against a real
SQLite database (PostgreSQL for the pg-* faults), and check that every fault ends as a stored
result or a one-line error. The faults of where results are kept (a database locked,
restarted or down mid-run, a read-only home) are in faults_store.py.

    python benchmarks/faults.py                 # every fault (a few minutes)
    python benchmarks/faults.py --only nan,oom  # some of them
    python benchmarks/faults.py --list

One line per fault: what was done, the trial statuses stored afterwards, the exit code, whether
any output held a Python traceback, and how many finished trials are missing from the database.
After each fault `rigbench results list` and `rigbench report` run on the same database: they
must still serve it. Exit 0 only when no result was lost and no command printed a traceback.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from faults_lib import (  # noqa: E402
    QUICK,
    Outcome,
    Seed,
    bad_bundle,
    finish,
    forge_stamps,
    import_fault,
    left_over,
    limit_file_size,
    mnist_files,
    rig,
    serves,
    signal_child,
    start,
    statuses,
    trial_children,
    wait_for_child,
)
from faults_signals import SIGNAL_FAULTS  # noqa: E402
from faults_store import STORE_FAULTS  # noqa: E402

Fault = Callable[[Seed, Path], Outcome]
FAULTS: dict[str, Fault] = {}


def fault(name: str) -> Callable[[Fault], Fault]:
    def register(fn: Fault) -> Fault:
        FAULTS[name] = fn
        return fn
    return register


def trial_fault(work: Path, did: str, args: list[str], on_start: Callable | None = None) -> Outcome:
    """`rigbench run mlp ARGS` on a fresh database; the one trial must be stored, whatever
    its status. `on_start(proc, db)` injects the fault while it runs and says what it did."""
    db = work / "faults.db"
    proc = start("run", "mlp", *QUICK, *args, "--db", str(db))
    if on_start is not None:
        did = on_start(proc, db)
    cmd = finish(proc)
    out = Outcome(did, [cmd], statuses(db), must_keep=1, rc=cmd.rc)
    serves(db, work, out)
    return out


@fault("oom")
def oom(seed: Seed, work: Path) -> Outcome:
    return trial_fault(work, "run mlp -b 65536 --memory-limit 700MiB (CPU OOM under a cap)",
                       ["-b", "65536", "--memory-limit", "700MiB"])


@fault("sigkill-child")
def sigkill_child(seed: Seed, work: Path) -> Outcome:
    return trial_fault(work, "", ["-b", "8", "--seconds", "120", "--timeout", "240"],
                       lambda proc, db: signal_child(proc, db, signal.SIGKILL))


@fault("sigsegv-child")
def sigsegv_child(seed: Seed, work: Path) -> Outcome:
    return trial_fault(work, "", ["-b", "8", "--seconds", "120", "--timeout", "240"],
                       lambda proc, db: signal_child(proc, db, signal.SIGSEGV))


@fault("hang")
def hang(seed: Seed, work: Path) -> Outcome:
    return trial_fault(work, "run mlp --seconds 300 --timeout 8 (a trial past its timeout)",
                       ["-b", "8", "--seconds", "300", "--timeout", "8"])


@fault("nan")
def nan(seed: Seed, work: Path) -> Outcome:
    return trial_fault(work, "run mlp --lr 1e12 (the loss diverges to NaN/inf)", ["-b", "8", "--lr", "1e12"])


SWEEP = ["mlp", *QUICK, "--batch-size", "8,16"]


@fault("kill9-resume")
def kill9_resume(seed: Seed, work: Path) -> Outcome:
    db = work / "faults.db"
    proc = start("sweep", *SWEEP, "--db", str(db))
    kids = wait_for_child(proc, db, results=1, settle_s=1)
    proc.kill()
    killed = finish(proc, 60)
    out = Outcome("SIGKILL to the sweep driver during its 2nd trial, then `sweep --resume`", [killed],
                  must_keep=2)
    left_over(kids, out)
    resumed = rig("sweep", *SWEEP, "--db", str(db), "--resume")
    out.cmds.append(resumed)
    out.rc, out.stored = resumed.rc, statuses(db)
    if len(out.stored) > 2:
        out.notes.append(f"{len(out.stored)} rows for 2 grid points")
    serves(db, work, out)
    return out


@fault("writers-2")
def writers_2(seed: Seed, work: Path) -> Outcome:
    db = work / "faults.db"
    procs = [start("run", "mlp", *QUICK, "-b", str(b), "--db", str(db)) for b in (8, 16)]
    cmds = [finish(p) for p in procs]
    out = Outcome("two `rigbench run` at once on one new database", cmds, statuses(db), must_keep=2,
                  rc=max(c.rc or 0 for c in cmds))
    out.notes += [f"writer exit {c.rc}: {c.last_line()}" for c in cmds if c.rc != 0]
    serves(db, work, out)
    return out


@fault("writers-8")
def writers_8(seed: Seed, work: Path) -> Outcome:
    db, before = seed.copy_to(work)
    paths = []
    for i in range(8):
        path = work / f"w{i}.json"
        path.write_text(json.dumps(bad_bundle(seed, f"writer-{i}", lambda r: None)))
        paths.append(path)
    procs = [start("results", "import", str(p), "--db", str(db)) for p in paths]
    cmds = [finish(p) for p in procs]
    ok = sum(c.rc == 0 for c in cmds)
    out = Outcome("eight `rigbench results import` at once on one database", cmds, statuses(db),
                  must_keep=before + ok, baseline=before, rc=max(c.rc or 0 for c in cmds))
    out.notes += [f"writer exit {c.rc}: {c.last_line()}" for c in cmds if c.rc != 0]
    serves(db, work, out)
    return out


# --- data files (the data layer's cache: --data-dir DIR --offline) ---

def data_fault(work: Path, did: str, damage: Callable[[list[Path]], None]) -> Outcome:
    data = work / "mnist"
    paths = mnist_files(data)
    damage(paths)
    db = work / "faults.db"
    cmd = rig("train", "mlp", "--dataset", "mnist", "--data-dir", str(data), "--offline", "--epochs", "1",
              "-b", "8", "--threads", "1", "--db", str(db))
    out = Outcome(did, [cmd], statuses(db), rc=cmd.rc)
    if cmd.rc != 0:
        out.notes.append(cmd.last_line())
    serves(db, work, out)
    return out


@fault("data-corrupt")
def data_corrupt(seed: Seed, work: Path) -> Outcome:
    def damage(paths: list[Path]) -> None:
        for p in paths:
            p.write_bytes(os.urandom(p.stat().st_size))
        forge_stamps(paths)
    return data_fault(work, "mnist files replaced by random bytes, stamps say verified", damage)


@fault("data-truncated")
def data_truncated(seed: Seed, work: Path) -> Outcome:
    def damage(paths: list[Path]) -> None:
        for p in paths:
            p.write_bytes(gzip.compress(gzip.decompress(p.read_bytes())[:-50], mtime=0))
        forge_stamps(paths)
    return data_fault(work, "mnist IDX files cut short, stamps say verified", damage)


@fault("data-checksum")
def data_checksum(seed: Seed, work: Path) -> Outcome:
    return data_fault(work, "well-formed mnist files whose md5 is not the published one", lambda paths: None)


# --- sweep TOML ---

def toml_fault(work: Path, did: str, body: bytes) -> Outcome:
    path, db = work / "sweep.toml", work / "faults.db"
    path.write_bytes(body)
    cmd = rig("sweep", "-c", str(path), "--db", str(db))
    out = Outcome(did, [cmd], statuses(db), rc=cmd.rc)
    out.notes.append(cmd.last_line())
    return out


@fault("toml-malformed")
def toml_malformed(seed: Seed, work: Path) -> Outcome:
    return toml_fault(work, "sweep -c with a TOML syntax error", b'[grid\nworkload = "mlp\n')


@fault("toml-non-utf8")
def toml_non_utf8(seed: Seed, work: Path) -> Outcome:
    return toml_fault(work, "sweep -c with a Latin-1 TOML file", 'workloads = ["mlp"] # caf\xe9\n'.encode("latin-1"))


# --- bundles for `results import` ---

def bundle_fault(did: str, change: Callable[[dict], None]) -> Fault:
    def run(seed: Seed, work: Path) -> Outcome:
        out = import_fault(seed, work, did, bad_bundle(seed, "fault-run", change))
        serves(work / "faults.db", work, out)
        return out
    return run


def _set(changes: dict[str, object]) -> Callable[[dict], None]:
    """Set each dotted key of a result (e.g. "metrics.samples_per_s") to its value."""
    def change(result: dict) -> None:
        for path, value in changes.items():
            *parents, last = path.split(".")
            node = result
            for key in parents:
                node = node[key]
            node[last] = value
    return change


FAULTS["bundle-unknown-workload"] = bundle_fault("import a result of workload 'no_such_workload'",
                                                 _set({"spec.workload": "no_such_workload"}))
FAULTS["bundle-huge-error"] = bundle_fault("import a crash result with a 20 MB error string",
                                           _set({"status": "crash", "error": "E" * 20_000_000}))
FAULTS["bundle-markup"] = bundle_fault("import a crash whose error and device name are Rich markup [/] [bold]",
                                       _set({"status": "crash", "error": "boom [/] [bold]x[/bold] [",
                                             "device_name": "[/][bold]"}))
FAULTS["bundle-nan"] = bundle_fault("import a result whose samples/s and step times are NaN",
                                    _set({"metrics.samples_per_s": float("nan"), "step_times_s": [float("nan")] * 3}))
FAULTS["bundle-newer-schema"] = bundle_fault("import a result of schema_version 99", _set({"schema_version": 99}))


@fault("bundle-script")
def bundle_script(seed: Seed, work: Path) -> Outcome:
    payload = "<script>alert('rigbench')</script>"
    out = bundle_fault(f"import a crash whose error is {payload}",
                       _set({"status": "crash", "error": payload}))(seed, work)
    html = work / "serve-report.html"
    if html.exists() and payload in html.read_text(errors="replace"):
        out.notes.append("report HTML holds the raw <script> payload")
    return out


# --- the database and the output files ---

def run_watched(work: Path, db: Path, did: str, baseline: int, db_arg: str | None = None,
                **popen: object) -> Outcome:
    """`rigbench run mlp` on `db` (given as `db_arg` when set, e.g. a read-only URL): a trial
    that started must be stored (or the run said why)."""
    proc = start("run", "mlp", *QUICK, "-b", "8", "--db", db_arg or str(db), **popen)
    kids = wait_for_child(proc, db, timeout=120)
    cmd = finish(proc)
    out = Outcome(did, [cmd], statuses(db), must_keep=baseline + (1 if kids else 0), baseline=baseline, rc=cmd.rc)
    if cmd.rc != 0:
        out.notes.append(("after running the trial: " if kids else "before any trial: ") + cmd.last_line())
    return out


@fault("db-not-database")
def db_not_database(seed: Seed, work: Path) -> Outcome:
    db = work / "notes.db"
    db.write_text("these are my notes, not a database\n" * 200)
    out = run_watched(work, db, "run mlp --db a text file", 0)
    serves(db, work, out)
    return out


@fault("db-read-only")
def db_read_only(seed: Seed, work: Path) -> Outcome:
    db, before = seed.copy_to(work)
    db.chmod(0o444)
    work.chmod(0o555)
    try:
        if os.access(db, os.W_OK) or os.access(work, os.W_OK):
            # root writes through chmod: open the file read-only through SQLite's URI instead,
            # which fails the same way ("attempt to write a readonly database")
            out = run_watched(work, db, "run mlp --db a read-only database (SQLite mode=ro: root ignores chmod)",
                              before, db_arg=f"sqlite:///file:{db}?mode=ro&uri=true")
        else:
            out = run_watched(work, db, "run mlp --db a read-only database in a read-only folder", before)
        serves(db, Path(tempfile.mkdtemp(dir=work.parent)), out)
        return out
    finally:
        work.chmod(0o755)
        db.chmod(0o644)


@fault("disk-full")
def disk_full(seed: Seed, work: Path) -> Outcome:
    db, before = seed.copy_to(work)
    out = run_watched(work, db, "run mlp with RLIMIT_FSIZE 4 KiB (writes fail with EFBIG)", before,
                      preexec_fn=limit_file_size)
    serves(db, work, out)
    return out


@fault("export-missing-dir")
def export_missing_dir(seed: Seed, work: Path) -> Outcome:
    db, before = seed.copy_to(work)
    cmd = rig("results", "export", "--format", "csv", "-o", "/nonexistent_dir/x.csv", "--db", str(db))
    out = Outcome("results export -o /nonexistent_dir/x.csv", [cmd], statuses(db), must_keep=before,
                  baseline=before, rc=cmd.rc, notes=[cmd.last_line()])
    serves(db, work, out)
    return out


@fault("report-missing-dir")
def report_missing_dir(seed: Seed, work: Path) -> Outcome:
    db, before = seed.copy_to(work)
    cmd = rig("report", "-o", "/nonexistent_dir/r.html", "--db", str(db))
    return Outcome("report -o /nonexistent_dir/r.html", [cmd], statuses(db), must_keep=before,
                   baseline=before, rc=cmd.rc, notes=[cmd.last_line()])


FAULTS.update(SIGNAL_FAULTS)  # ctrl-c, sigterm, ctrl-c-train
FAULTS.update(STORE_FAULTS)  # sqlite-locked, home-read-only, pg-restart, pg-down


# --- the driver ---

def line(name: str, out: Outcome) -> str:
    if out.skipped:
        return f"{name:24} SKIPPED: {out.skipped}"
    stored = ", ".join(s[:60] for s in out.stored) or "nothing"
    kind = "recorded" if out.recorded else "error"
    text = (f"{name:24} {out.did}\n{'':24} -> stored [{stored}] | exit {out.rc} | {kind} | "
            f"traceback {'YES (' + str(out.tracebacks) + ')' if out.tracebacks else 'no'} | lost {out.lost}")
    return text + "".join(f"\n{'':24}    {n}" for n in out.notes + out.serve_failures if n)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", metavar="NAME[,NAME]", help="run only these faults (see --list)")
    parser.add_argument("--list", action="store_true", help="list the faults and exit")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders (their path is printed)")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(FAULTS))
        return 0
    names = args.only.split(",") if args.only else list(FAULTS)
    unknown = [n for n in names if n not in FAULTS]
    if unknown:
        parser.error(f"unknown fault(s) {', '.join(unknown)}; --list shows them")
    root = Path(tempfile.mkdtemp(prefix="rigbench-faults-"))
    os.environ["RIGBENCH_SPOOL_DIR"] = str(root / "spool")  # never the user's own spool
    seed = Seed(root)
    totals = {"injected": 0, "skipped": 0, "recorded": 0, "lost": 0, "tracebacks": 0}
    started = time.time()
    try:
        for name in names:
            work = root / name
            work.mkdir()
            t0 = time.time()
            out = FAULTS[name](seed, work)
            print(line(name, out) + ("" if out.skipped else f"  ({time.time() - t0:.0f} s)"), flush=True)
            totals["skipped" if out.skipped else "injected"] += 1
            totals["recorded"] += out.recorded and not out.skipped
            totals["lost"] += out.lost
            totals["tracebacks"] += out.tracebacks
            for p in trial_children(os.getpid()):  # nothing may outlive a fault
                p.kill()
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    print(f"\nfaults injected {totals['injected']} (skipped {totals['skipped']}), recorded as results "
          f"{totals['recorded']}, results lost {totals['lost']}, tracebacks {totals['tracebacks']}"
          f"  ({time.time() - started:.0f} s)")
    return 0 if totals["lost"] == 0 and totals["tracebacks"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
