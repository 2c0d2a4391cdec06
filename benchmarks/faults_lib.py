"""Helpers for benchmarks/faults.py: run the real `rigbench` command, read what the database
holds afterwards, and judge the outcome of one injected fault.

Everything goes through subprocesses (`sys.executable -m rigbench ...`) so a fault meets the
product exactly as a user would; the database is read with plain sqlite3, never with rigbench's
store, so a store bug cannot hide a lost result.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import resource
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

TRACEBACK = "Traceback (most recent call last)"
#: The smallest real trial: mlp, one thread, 3 timed steps, no minimum time.
QUICK = ["--quick", "--steps", "3", "--seconds", "0", "--threads", "1", "-d", "cpu"]


@dataclass
class Cmd:
    """One finished `rigbench` command."""
    args: list[str]
    rc: int | None
    out: str
    err: str

    @property
    def traceback(self) -> bool:
        return TRACEBACK in self.out or TRACEBACK in self.err

    def last_line(self) -> str:
        """The last non-empty line of stderr (else stdout), cut short: the error a user sees."""
        lines = [x.strip() for x in (self.err or self.out).splitlines() if x.strip()]
        return (lines[-1][:160] + ("..." if len(lines[-1]) > 160 else "")) if lines else ""


def _ctrl_c_default() -> None:
    """SIGINT back to its default action in the started command: a shell starts background jobs
    with SIGINT ignored, the ignore is inherited, and Python then installs no KeyboardInterrupt
    handler, so the Ctrl-C faults would test nothing when the suite runs with `&` or nohup."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(*args: str, **popen: Any) -> subprocess.Popen[str]:
    """Start `rigbench ARGS` in the background, its output captured."""
    popen.setdefault("preexec_fn", _ctrl_c_default if os.name == "posix" else None)
    return subprocess.Popen([sys.executable, "-m", "rigbench", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace", **popen)


def finish(proc: subprocess.Popen[str], timeout: float = 300) -> Cmd:
    """Wait for a started command (killing it past `timeout`)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        err += f"\n[faults: killed after {timeout:.0f} s]"
    return Cmd([str(a) for a in proc.args][3:], proc.returncode, out, err)  # type: ignore[union-attr]


def rig(*args: str, timeout: float = 300, **popen: Any) -> Cmd:
    """Run `rigbench ARGS` to the end."""
    return finish(start(*args, **popen), timeout)


def statuses(db: Path) -> list[str]:
    """The status of every stored trial, oldest first; [] when there is no trials table, and
    ['<unreadable: why>'] when the file is not a database sqlite3 can read."""
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            return [s for (s,) in con.execute("select status from trials order by id")]
    except sqlite3.OperationalError as exc:
        return [] if "no such table" in str(exc) else [f"<unreadable: {exc}>"]
    except sqlite3.DatabaseError as exc:
        return [f"<unreadable: {exc}>"]


def newest_id(db: Path) -> int | None:
    """The id of the newest stored trial, if sqlite3 can read one."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            row = con.execute("select max(id) from trials").fetchone()
    except sqlite3.Error:
        return None
    return row[0] if row else None


def trial_children(pid: int) -> list[psutil.Process]:
    """The trial processes under `pid` that are running now: a `rigbench.runner.child`
    interpreter, or a process forked from a warm-start server (runner/forkserver.py), which
    keeps the server's command line."""
    found = []
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []
    for p in kids:
        try:
            if "rigbench.runner.child" in " ".join(p.cmdline()) or _forked_trial(p):
                found.append(p)
        except psutil.Error:  # it ended meanwhile
            pass
    return found


def _forked_trial(p: psutil.Process) -> bool:
    server = "rigbench.runner.forkserver"
    parent = p.parent()
    return parent is not None and server in " ".join(p.cmdline()) and server in " ".join(parent.cmdline())


def wait_for_child(proc: subprocess.Popen[str], db: Path, results: int = 0,
                   settle_s: float = 0.0, timeout: float = 240) -> list[psutil.Process]:
    """Once `results` trials are stored and a trial process is under way, wait `settle_s`
    more (so it is past start-up) and return the trial processes; [] if that never happens."""
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        kids = trial_children(proc.pid) if len(statuses(db)) >= results else []
        if kids:
            time.sleep(settle_s)
            return trial_children(proc.pid) or kids
        time.sleep(0.2)
    return []


def signal_child(proc: subprocess.Popen[str], db: Path, sig: int, settle_s: float = 3.0) -> str:
    """Send `sig` to the trial process of the command `proc`; what was done, in words."""
    kids = wait_for_child(proc, db, settle_s=settle_s)
    if not kids:
        return "no trial process appeared"
    for k in kids:
        try:
            k.send_signal(sig)
        except psutil.Error:
            pass
    return f"{signal.Signals(sig).name} to the trial process (pid {kids[0].pid})"


def left_over(kids: list[psutil.Process], out: Outcome) -> None:
    """Note any trial process that outlived its driver (and kill it)."""
    _, alive = psutil.wait_procs(kids, timeout=15)
    if alive:
        out.notes.append(f"trial process {alive[0].pid} outlived its driver (killed now)")
        for p in alive:
            p.kill()


@dataclass
class Outcome:
    """What one fault did and what it left behind."""
    did: str
    cmds: list[Cmd] = field(default_factory=list)
    stored: list[str] = field(default_factory=list)
    must_keep: int = 0  # trials that finished (or were there before) and must be stored
    baseline: int = 0  # rows the database held before the fault
    rc: int | None = None  # the fault command's exit code
    notes: list[str] = field(default_factory=list)
    serve_failures: list[str] = field(default_factory=list)  # list/report/show after the fault
    skipped: str | None = None

    @property
    def rows(self) -> int:
        """Stored trials that sqlite3 could read."""
        return len([s for s in self.stored if not s.startswith("<")])

    @property
    def lost(self) -> int:
        return max(0, self.must_keep - self.rows)

    @property
    def recorded(self) -> bool:
        """The fault became stored rows (a trial with a failure status, imported rows)."""
        return self.rows > self.baseline

    @property
    def tracebacks(self) -> int:
        return sum(c.traceback for c in self.cmds)


def serves(db: Path | str, work: Path, out: Outcome) -> None:
    """`results list`, `report` and `results show` of the newest trial on the same database
    (a SQLite file, or a URL: then without `show`), at once: each must still work (exit 0, no
    traceback) after the fault; what they did goes into `out`."""
    names = ["list", "report"]
    procs = [start("results", "list", "--db", str(db)),
             start("report", "--db", str(db), "-o", str(work / "serve-report.html"))]
    newest = newest_id(db) if isinstance(db, Path) else None
    if newest is not None:
        names.append(f"show {newest}")
        procs.append(start("results", "show", str(newest), "--db", str(db)))
    for name, proc in zip(names, procs):
        cmd = finish(proc, 180)
        out.cmds.append(cmd)
        if cmd.rc != 0 or cmd.traceback:
            out.serve_failures.append(f"{name}: exit {cmd.rc}{' TRACEBACK' if cmd.traceback else ''}: {cmd.last_line()}")


class Seed:
    """A database holding one real trial and its bundle, made once and copied per fault."""

    def __init__(self, root: Path, source_db: Path | None = None) -> None:
        self.root, self.source_db = root, source_db
        self._db: Path | None = None
        self._bundle: dict[str, Any] | None = None

    def db(self) -> Path:
        """The seed database: a copy of `source_db`, else one real quick mlp trial."""
        if self._db is None:
            db = self.root / "seed.db"
            if self.source_db is not None:
                shutil.copy(self.source_db, db)
            else:
                cmd = rig("run", "mlp", *QUICK, "-b", "8", "--db", str(db))
                if cmd.rc != 0:
                    raise RuntimeError(f"the seed trial failed: {cmd.err[-2000:]}")
            self._db = db
        return self._db

    def copy_to(self, work: Path) -> tuple[Path, int]:
        """A fresh copy of the seed database in `work`, and how many trials it holds."""
        db = work / "faults.db"
        shutil.copy(self.db(), db)
        return db, len(statuses(db))

    def bundle(self) -> dict[str, Any]:
        """The seed's bundle (export --format bundle), as a dict to mutate."""
        if self._bundle is None:
            path = self.root / "seed.json"
            cmd = rig("results", "export", "--format", "bundle", "--db", str(self.db()), "-o", str(path))
            if cmd.rc != 0:
                raise RuntimeError(f"exporting the seed failed: {cmd.err[-2000:]}")
            self._bundle = json.loads(path.read_text())
        return copy.deepcopy(self._bundle)


def bad_bundle(seed: Seed, run_id: str, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The seed's bundle, its first result alone under a new run id (so it is imported, not
    skipped as already stored), with `change` applied to that result."""
    bundle = seed.bundle()
    result = bundle["results"][0]
    run = next(r for r in bundle["runs"] if r["id"] == result["run_id"])
    run["id"] = result["run_id"] = run_id
    bundle["runs"], bundle["results"] = [run], [result]
    bundle.pop("calibrations", None)  # the seed's calibrate run is not among the runs kept
    change(result)
    return bundle


def import_fault(seed: Seed, work: Path, did: str, bundle: dict[str, Any] | str | bytes) -> Outcome:
    """Import a (bad) bundle into a copy of the seed: either imported or refused with a
    one-line error, and the seed's rows kept either way."""
    db, before = seed.copy_to(work)
    path = work / "bundle.json"
    if isinstance(bundle, dict):
        path.write_text(json.dumps(bundle))  # NaN stays NaN: json writes the NaN token
    elif isinstance(bundle, str):
        path.write_text(bundle)
    else:
        path.write_bytes(bundle)
    cmd = rig("results", "import", str(path), "--db", str(db))
    out = Outcome(did, [cmd], rc=cmd.rc, must_keep=before, baseline=before)
    out.stored = statuses(db)
    if cmd.rc != 0:
        out.notes.append(cmd.last_line())
    return out


def mnist_files(directory: Path) -> list[Path]:
    """Tiny but well-formed gzipped IDX files under MNIST's names (10 train, 4 test images)."""
    from rigbench.data.registry import DATASETS
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for remote, (shape, kind) in zip(DATASETS["mnist"].files,
                                     [((10, 28, 28), 3), ((10,), 1), ((4, 28, 28), 3), ((4,), 1)]):
        count = 1
        for n in shape:
            count *= n
        body = struct.pack(f">I{len(shape)}I", 0x800 | kind, *shape) + bytes(i % 10 for i in range(count))
        path = directory / remote.filename
        path.write_bytes(gzip.compress(body, mtime=0))
        paths.append(path)
    return paths


def forge_stamps(paths: list[Path]) -> None:
    """Write each file's `.verified` stamp as if the published md5 had matched (the format of
    rigbench.data.cache._stamp): the files reach the format parsers, as after bit rot."""
    from rigbench.data.registry import DATASETS
    for path, remote in zip(paths, DATASETS["mnist"].files):
        st = path.stat()
        stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, **{a: d.lower() for a, d in remote.digests.items()}}
        path.with_name(path.name + ".verified").write_text(json.dumps(stamp, sort_keys=True))


def limit_file_size() -> None:
    """In the child: every file write past 4 KiB fails with EFBIG (a full disk, in effect)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
