"""Faults of where results are kept, for benchmarks/faults.py: a database that is locked,
restarted or down while a trial runs, and a home folder nothing can be written to.

The promise is the suite's: every fault ends as a stored result or one clear line, with no
result lost and no traceback. A result the database could not take while the trial ended is
spooled (rigbench/store/spool.py) and must be in the database after the next command.

The PostgreSQL faults start a private cluster with the server binaries .ci/postgres.sh uses
(skipped when there are none), so they can stop and restart it; it listens on 127.0.0.1 with a
password, which no output may show.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from faults_lib import QUICK, Cmd, Outcome, Seed, finish, rig, serves, start, statuses, wait_for_child

Fault = Callable[[Seed, Path], Outcome]
STORE_FAULTS: dict[str, Fault] = {}
#: How long the faulted commands wait for the database before spooling (RIGBENCH_DB_WAIT_S).
WAIT_S = "3"
#: A trial that runs long enough for the fault to land before it ends.
SLOW_TRIAL = [*QUICK, "-b", "8", "--seconds", "3"]


def fault(name: str) -> Callable[[Fault], Fault]:
    def register(fn: Fault) -> Fault:
        STORE_FAULTS[name] = fn
        return fn
    return register


def store_env(work: Path, **extra: str) -> dict[str, str]:
    """The environment of the faulted commands: a short wait, a spool of the fault's own."""
    return {**os.environ, "RIGBENCH_DB_WAIT_S": WAIT_S, "RIGBENCH_SPOOL_DIR": str(work / "spool"), **extra}


def spooled_then_stored(out: Outcome, during: Cmd, after: Cmd) -> None:
    """Note what the user was told: the spool line in the faulted run, the import after."""
    if "kept it in" not in during.err:
        out.notes.append("the result was not spooled (stored before the fault landed?)")
    elif "spooled while it could not take them" not in after.err:
        out.notes.append(f"the next command did not say it stored the spooled result: {after.last_line()}")


def hold_write_lock(db: Path) -> subprocess.Popen[str]:
    """Another process holding the SQLite write lock of `db` (BEGIN IMMEDIATE) until killed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
         "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); sys.stdin.read()", str(db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


@fault("sqlite-locked")
def sqlite_locked(seed: Seed, work: Path) -> Outcome:
    db, env = work / "faults.db", store_env(work)
    proc = start("run", "mlp", *SLOW_TRIAL, "--db", str(db), env=env)
    kids = wait_for_child(proc, db, settle_s=0.5)  # the run is recorded: its trial runs
    holder = hold_write_lock(db)
    try:
        during = finish(proc)  # the trial ends, its result waits WAIT_S for the lock, then spools
        held = len(statuses(db))
    finally:
        holder.kill()
        holder.wait()
    after = rig("results", "list", "--db", str(db), env=env)
    out = Outcome(f"another process holds the write lock (BEGIN IMMEDIATE) over the end of the trial, "
                  f"{WAIT_S} s wait; then `results list`", [during, after], statuses(db),
                  must_keep=1 if kids else 0, rc=during.rc)
    if " is busy: " not in during.err:
        out.notes.append("no line said the database was busy")
    if held:
        out.notes.append("stored while the lock was held?")
    spooled_then_stored(out, during, after)
    serves(db, work, out)
    return out


@fault("home-read-only")
def home_read_only(seed: Seed, work: Path) -> Outcome:
    """HOME where no folder can be made (under a regular file: even root cannot), RIGBENCH_DB,
    the cache and XDG variables unset: each command names the path and the variable."""
    blocker = work / "home-is-a-file"
    blocker.write_text("")
    env = {k: v for k, v in os.environ.items()
           if k not in ("RIGBENCH_DB", "RIGBENCH_CACHE_DIR", "RIGBENCH_SPOOL_DIR", "XDG_DATA_HOME", "XDG_CACHE_HOME")}
    env["HOME"] = str(blocker / "home")
    wanted = {("run", "mlp", *QUICK, "-b", "8"): "RIGBENCH_DB", ("results", "list"): "RIGBENCH_DB",
              ("train", "mlp", "--dataset", "mnist", "--epochs", "1", "--db", str(work / "faults.db")):
              "RIGBENCH_CACHE_DIR"}
    cmds = [finish(p) for p in [start(*args, env=env, cwd=str(work)) for args in wanted]]  # at once
    out = Outcome("HOME under a regular file, RIGBENCH_DB/RIGBENCH_CACHE_DIR/XDG_* unset: run, results list, "
                  "train --dataset mnist", cmds, statuses(work / "faults.db"), rc=max(c.rc or 0 for c in cmds))
    for cmd, variable in zip(cmds, wanted.values()):
        lines = cmd.err.strip().splitlines()
        if cmd.rc != 2 or len(lines) != 1 or variable not in lines[0] or str(blocker) not in lines[0]:
            out.notes.append(f"{' '.join(cmd.args[:2])}: exit {cmd.rc}, {len(lines)} line(s), not naming the path "
                             f"and {variable}: {cmd.last_line()}")
    out.notes.append(cmds[0].last_line())
    return out


# --- PostgreSQL ---

def _postgres_bin() -> Path | None:
    """The folder of initdb and pg_ctl (as .ci/postgres.sh finds it), newest version first."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: [int(x) for x in p.parent.name.split(".")
                                                                                 if x.isdigit()])
    return next((p for p in reversed(versions) if (p / "initdb").exists()), None)


class PrivateServer:
    """A throwaway PostgreSQL cluster this fault may stop and restart. Root runs it as the
    `postgres` user (the server refuses root), as .ci/postgres.sh does."""

    def __init__(self, bindir: Path):
        self.bin, self.password = bindir, secrets.token_hex(12)
        self.root = Path(tempfile.mkdtemp(prefix="rigbench-faults-pg-"))
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"postgresql://rigbench:{self.password}@127.0.0.1:{self.port}/faults"
        self._pg("initdb", "-D", str(self.root / "data"), "-U", "postgres", "--auth-local=trust",
                 "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8")
        self.start()
        self._pg("psql", "-q", "-X", "-v", "ON_ERROR_STOP=1", "-h", str(self.root), "-p", str(self.port), "-U",
                 "postgres", "-d", "postgres", "-c", f"CREATE ROLE rigbench LOGIN PASSWORD '{self.password}'",
                 "-c", "CREATE DATABASE faults OWNER rigbench")

    def _pg(self, tool: str, *args: str) -> None:
        command = [str(self.bin / tool), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        env = {**os.environ, "PATH": os.environ.get("PATH", "") + ":/usr/sbin:/sbin"}
        # no pipes: the server pg_ctl starts would hold them open, and waiting for their end hangs
        with open(self.root / f"{tool}.out", "a") as log:
            subprocess.run(command, check=True, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd="/",
                           env=env, timeout=120)

    def _ctl(self, action: str, *args: str) -> None:
        self._pg("pg_ctl", "-D", str(self.root / "data"), "-l", str(self.root / "server.log"), "-w", *args, action)

    def start(self) -> None:
        self._ctl("start", "-o", f"-k {self.root} -p {self.port} -c listen_addresses=127.0.0.1")

    def stop(self) -> None:
        self._ctl("stop", "-m", "fast")

    def restart(self) -> None:
        self._ctl("restart", "-m", "fast")

    def statuses(self) -> list[str]:
        """Every stored trial's status, read with psycopg itself, never with rigbench's store."""
        import psycopg
        try:
            with psycopg.connect(self.url.replace("postgresql://", "postgres://"), connect_timeout=10) as conn:
                return [s for (s,) in conn.execute("select status from trials order by id")]
        except psycopg.errors.UndefinedTable:
            return []
        except psycopg.Error as exc:
            return [f"<unreadable: {' '.join(str(exc).split())[:80]}>"]

    def remove(self) -> None:
        try:
            self.stop()
        except subprocess.CalledProcessError:
            pass  # already stopped
        shutil.rmtree(self.root, ignore_errors=True)


def pg_fault(did: str, inject: Callable[[PrivateServer], None], after: Callable[[PrivateServer], None]) -> Fault:
    """`rigbench run mlp --db` the private server; `inject` while its trial runs, `after` once
    it ended; then `results list` (which stores anything spooled) and the suite's serve check."""
    def run(seed: Seed, work: Path) -> Outcome:
        bindir = _postgres_bin()
        if bindir is None:
            return Outcome(did, skipped="no PostgreSQL server binaries (initdb, pg_ctl): see .ci/postgres.sh")
        server = PrivateServer(bindir)
        env = store_env(work)
        try:
            proc = start("run", "mlp", *SLOW_TRIAL, "--db", server.url, env=env)
            kids = wait_for_child(proc, work / "no-sqlite.db", settle_s=0.5)
            t0 = time.time()
            inject(server)
            during = finish(proc)
            after(server)
            listed = rig("results", "list", "--db", server.url, env=env)
            out = Outcome(f"{did} ({time.time() - t0:.0f} s to the trial's end)", [during, listed], server.statuses(),
                          must_keep=1 if kids else 0, rc=during.rc)
            if "kept it in" in during.err:
                spooled_then_stored(out, during, listed)
            shown = [c for c in out.cmds if server.password in c.out + c.err]
            serves(server.url, work, out)
            shown += [c for c in out.cmds[2:] if server.password in c.out + c.err]
            if shown:
                out.notes.append(f"the password was printed by: {', '.join(' '.join(c.args[:2]) for c in shown)}")
            return out
        finally:
            server.remove()
    return run


STORE_FAULTS["pg-restart"] = pg_fault("pg_ctl restart -m fast while the trial runs", PrivateServer.restart,
                                      lambda server: None)
STORE_FAULTS["pg-down"] = pg_fault(f"PostgreSQL stopped while the trial runs, past the {WAIT_S} s wait, then started",
                                   PrivateServer.stop, PrivateServer.start)
