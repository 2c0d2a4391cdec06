"""Waiting for a database that is busy or unreachable: out loud, and only up to a bound.

Two waits share one bound, `RIGBENCH_DB_WAIT_S` (default 60 s):

- SQLite's lock held by another process (a sweep storing a result, a bundle import, a
  script in `BEGIN IMMEDIATE`, or `BEGIN EXCLUSIVE`, which blocks reads too). SQLite's own busy
  timeout would wait in silence and then say only "database is locked", so each attempt (a
  `BEGIN IMMEDIATE`, or the first read of a command: store/migrate.peek) waits a quarter of a
  second and this loop speaks between attempts: within a second one line names the database,
  who holds the lock (Linux: /proc/locks) and who waits; then a countdown line every 10 s.
  Reads and commits outside the loop wait in silence, but only up to the same bound
  (sqlite_busy_timeout_s).
- A PostgreSQL server that went away (restarted, failed over, the network blinked): the
  write is tried again with backoff, saying so on the first failure and counting down.

Past the bound `Unavailable` is raised, and the caller decides: a finished result is kept in
the spool (store/spool.py), anything else is a one-line error. Lines go to the
"rigbench.store" logger, which prints them on stderr unless the application set up logging.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, OperationalError

from rigbench.errors import UsageError

log = logging.getLogger("rigbench.store")

T = TypeVar("T")

WAIT_ENV = "RIGBENCH_DB_WAIT_S"
DEFAULT_WAIT_S = 60.0
#: The least SQLite busy timeout outside the loop below (a read during another's commit, a
#: commit waiting for readers: milliseconds), so that RIGBENCH_DB_WAIT_S=0 does not fail them.
_MIN_BUSY_TIMEOUT_S = 0.5
#: One `BEGIN IMMEDIATE` attempt: short, so that the loop can speak within a second.
_ATTEMPT_S = 0.25
#: A lock released this soon (another writer committing a result) is not worth a line.
_QUIET_S = 0.5
_COUNTDOWN_EVERY_S = 10.0
_MAX_BACKOFF_S = 5.0


#: Set while an interrupt (Ctrl-C) waits for a result to be stored (runner/session.interrupts_held):
#: every wait ends at its next attempt, as past its bound, so the result goes to the spool and
#: the command stops at once, instead of the user's Ctrl-C waiting out the bound (60 s).
stop_waiting = threading.Event()


class Unavailable(Exception):
    """The database stayed busy or unreachable for the whole wait; the message says which and
    for how long ("busy for 60 s: ..."); `hint` names the variable that sets the wait."""

    hint = f"{WAIT_ENV} sets how long to wait"


def wait_bound() -> float:
    """Seconds to wait for a busy or unreachable database: $RIGBENCH_DB_WAIT_S, else 60."""
    text = os.environ.get(WAIT_ENV, "").strip()
    if not text:
        return DEFAULT_WAIT_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{WAIT_ENV}={text!r}: give the seconds to wait for a busy or unreachable "
                         f"database, e.g. {DEFAULT_WAIT_S:.0f}")
    return value


def sqlite_busy_timeout_s() -> float:
    """Seconds a SQLite connection waits in silence for another process's lock outside the
    loop below (SQLite's busy timeout): the wait bound, so no wait outlasts it, at least
    _MIN_BUSY_TIMEOUT_S."""
    return max(wait_bound(), _MIN_BUSY_TIMEOUT_S)


class Countdown:
    """One wait: says once what it waits for, then how long is left every 10 s."""

    def __init__(self, bound_s: float, clock: Callable[[], float] = time.monotonic):
        self.bound_s, self._clock = bound_s, clock
        self._start = clock()
        self._next_line: float | None = None  # elapsed time of the next countdown line

    def elapsed(self) -> float:
        return self._clock() - self._start

    def left(self) -> float:
        return 0.0 if stop_waiting.is_set() else max(0.0, self.bound_s - self.elapsed())

    def tell(self, first: Callable[[], str], later: Callable[[float], str]) -> None:
        """Log `first()` the first time, then `later(seconds left)` once per interval."""
        now = self.elapsed()
        if self._next_line is None:
            log.warning("%s", first())
            self._next_line = now + _COUNTDOWN_EVERY_S
        elif now >= self._next_line and self.left() > 0:
            log.warning("%s", later(self.left()))
            self._next_line = now + _COUNTDOWN_EVERY_S


def is_busy(exc: DBAPIError) -> bool:
    """SQLite's "database is locked" / "database table is locked" (SQLITE_BUSY, _LOCKED)."""
    return isinstance(exc, OperationalError) and "locked" in str(exc.orig)


def lock_holders(path: Path) -> list[str]:
    """"pid 4321, python3" for each other process holding a write lock on SQLite file `path`,
    from Linux's /proc/locks; [] elsewhere or when it cannot be read."""
    try:
        stat = path.stat()
        table = Path("/proc/locks").read_text()
    except OSError:
        return []
    inode = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    pids = []
    for line in table.splitlines():
        fields = line.split()
        # "1: POSIX  ADVISORY  WRITE 4321 fe:00:2146457 1073741825 1073741825"
        if len(fields) >= 6 and fields[3] == "WRITE" and fields[5] == inode and fields[4].isdigit():
            if int(fields[4]) != os.getpid() and fields[4] not in pids:
                pids.append(fields[4])
    named = []
    for pid in pids:
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            name = ""
        named.append(f"pid {pid}, {name}" if name else f"pid {pid}")
    return named


def begin_immediate(conn: Connection, url: str, path: Path | None, bound_s: float) -> None:
    """SQLite's `BEGIN IMMEDIATE` (the write lock), waiting up to `bound_s` for another
    process to release it, saying so within a second; Unavailable past the bound."""
    while_busy(conn, url, path, bound_s, lambda: conn.exec_driver_sql("BEGIN IMMEDIATE"))


def while_busy(conn: Connection, url: str, path: Path | None, bound_s: float, attempt: Callable[[], T]) -> T:
    """`attempt()` on SQLite connection `conn`, tried again while another process's lock
    makes it busy, up to `bound_s`, saying so within a second; Unavailable past the bound.
    Its other errors pass through as they are."""
    countdown = Countdown(bound_s)
    conn.exec_driver_sql(f"PRAGMA busy_timeout = {int(_ATTEMPT_S * 1000)}")
    try:
        while True:
            try:
                return attempt()
            except OperationalError as exc:
                if not is_busy(exc):
                    raise
                conn.rollback()
                if countdown.left() <= 0:
                    raise Unavailable(f"busy for {countdown.elapsed():.0f} s: another process holds its "
                                      "write lock") from None
            if countdown.elapsed() >= _QUIET_S:
                countdown.tell(lambda: _busy_line(url, path, bound_s),
                               lambda left: f"the database {url} is still busy: waiting {left:.0f} s more")
    finally:
        # the pooled connection goes back with its usual timeout (reads, commits)
        conn.exec_driver_sql(f"PRAGMA busy_timeout = {int(sqlite_busy_timeout_s() * 1000)}")


def _busy_line(url: str, path: Path | None, bound_s: float) -> str:
    holders = lock_holders(path) if path is not None else []
    who = f"another process ({'; '.join(holders)})" if holders else "another process"
    return (f"the database {url} is busy: {who} holds its write lock; rigbench (pid {os.getpid()}) "
            f"waits up to {bound_s:.0f} s")


def retry_unreachable(url: str, bound_s: float, attempt: Callable[[], T],
                      transient: Callable[[DBAPIError], bool], reason: Callable[[DBAPIError], str],
                      sleep: Callable[[float], None] = time.sleep) -> T:
    """`attempt()`, tried again with backoff while it fails with a `transient` error (a lost
    connection), up to `bound_s`; Unavailable past the bound, other errors as they are."""
    countdown = Countdown(bound_s)
    delay = 0.5
    while True:
        try:
            return attempt()
        except DBAPIError as exc:
            if not transient(exc):
                raise
            why = reason(exc)
            if countdown.left() <= 0:
                raise Unavailable(f"unreachable for {countdown.elapsed():.0f} s: {why}") from None
            countdown.tell(partial(str, f"the database {url} is unreachable ({why}); retrying for up to {bound_s:.0f} s"),
                           lambda left: f"the database {url} is still unreachable: retrying for {left:.0f} s more")
            sleep(min(delay, countdown.left()))
            delay = min(delay * 2, _MAX_BACKOFF_S)
