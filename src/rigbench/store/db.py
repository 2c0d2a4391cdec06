"""Reading and writing results. Each result is committed as soon as it is added, so a
failure or Ctrl-C later in a run never loses finished trials; several writes that must land
together (a bundle import) share one `Store.transaction()`.

A database that blinks never costs a measured result: a write waits for a busy SQLite file and
reconnects to a PostgreSQL server that went away, saying so, up to RIGBENCH_DB_WAIT_S
(store/waiting.py); past that, add_result keeps the result in the spool (store/spool.py), and
the next Store to open that database stores it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DatabaseError, DataError, DBAPIError, InterfaceError, NoSuchModuleError, OperationalError

from rigbench.errors import UsageError
from rigbench.spec import Result
from rigbench.store import rows, spool
from rigbench.store.engine import (
    default_db_url,
    display_url,
    error_text,
    make_engine,
    resolve_db_url,
    write_lock,
)
from rigbench.store.migrate import ensure_current
from rigbench.store.waiting import Unavailable, is_busy, retry_unreachable, wait_bound

__all__ = ["SpoolOutcome", "Store", "Transaction", "default_db_url", "resolve_db_url"]

log = logging.getLogger("rigbench.store")
T = TypeVar("T")


class Transaction:
    """Writes and reads on one connection inside one transaction (`Store.transaction()`):
    all of them are committed together, or none."""

    def __init__(self, conn: Connection, url: str):
        self.conn = conn
        self.url = url

    def add_run(self, run_id: str, created_at: str, command: str, machine: dict[str, Any]) -> None:
        rows.insert_run(self.conn, run_id, created_at, command, machine)

    def add_result(self, result: Result) -> int:
        """Store a result with its raw samples; returns its id (also set on `result`)."""
        return rows.insert_result(self.conn, result)

    def add_results(self, results: Sequence[Result]) -> list[int]:
        """add_result for each of `results`, in one statement per table (rows.insert_results)."""
        return rows.insert_results(self.conn, results)

    def get(self, trial_id: int) -> Result | None:
        """As Store.get (raw samples included), seeing this transaction's own writes."""
        return rows.get_result(self.conn, trial_id)

    def list(self, **where: Any) -> list[Result]:
        """As Store.list, seeing this transaction's own writes."""
        return rows.list_results(self.conn, _filters(where), None, self.url)

    def machines(self, run_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """run id -> machine fingerprint, for those of `run_ids` that are stored."""
        return rows.run_machines(self.conn, run_ids, self.url)


def _filters(where: dict[str, Any], any_of: Mapping[str, Collection[Any]] | None = None) -> dict[str, Any]:
    """Store.list's filters as rows takes them: column -> value, or a frozenset where `any_of`
    accepts several (and a column given both ways keeps the values both accept)."""
    unknown = (set(where) | set(any_of or {})) - set(rows.FILTER_COLUMNS)
    if unknown:
        raise TypeError(f"unknown filter(s): {', '.join(sorted(unknown))}")
    out: dict[str, Any] = {k: v for k, v in where.items() if v is not None and v != ""}
    for name, values in (any_of or {}).items():
        out[name] = frozenset(values) & {out[name]} if name in out else frozenset(values)
    return out


def _why(exc: Exception) -> str:
    """Why a write failed, on one line: a wait's outcome with the variable that sets it, or the
    driver's message."""
    if isinstance(exc, Unavailable):
        return f"{exc}; {exc.hint}"
    return error_text(exc) if isinstance(exc, DBAPIError) else str(exc)


@dataclass
class SpoolOutcome:
    """What importing a database's spool did (Store.flush_spool)."""

    imported: int = 0            # results stored now
    present: int = 0             # already stored (a write whose commit was not acknowledged)
    left: list[Path] = field(default_factory=list)  # still spooled: the database could not take them
    reason: str | None = None    # why the first of `left` was not stored
    unreadable: list[str] = field(default_factory=list)  # files set aside, with why


def _stored_id(tx: Transaction, result: Result) -> int | None:
    """The id under which `result` (its rows.trial_key) is already stored, if it is."""
    identity = rows.trial_key(result)
    return next((r.id for r in tx.list(run_id=result.run_id) if rows.trial_key(r) == identity), None)


def _store_spooled(tx: Transaction, run: dict[str, Any], result: Result) -> bool:
    """Store one spooled result with its run (unless stored already); False if it was."""
    if not tx.machines([result.run_id]):
        machine = run.get("machine")
        tx.add_run(result.run_id, str(run.get("created_at") or result.created_at), str(run.get("command") or ""),
                   machine if isinstance(machine, dict) else {})
    if _stored_id(tx, result) is not None:
        return False
    tx.add_result(result.model_copy(update={"id": None}))
    return True


class _RolledBack(Exception):
    """Ends the transaction that writes a deferred run (Store.add_run): rolled back."""


class Store:
    """A results database. Creates or migrates its tables on first use (store/migrate.py).

    `url` is the database as shown in messages and outputs, its password masked
    (engine.display_url); only `engine` holds the real one, so no message, stored run or
    export made from a Store can carry a password.

    `create=False` (commands that only read): a missing SQLite file is a UsageError, and no
    file or folder is made. Opening stores the results spooled for this database (with one
    line saying how many) unless `import_spool` is False (`rigbench results flush`)."""

    def __init__(self, url: str | None = None, *, create: bool = True, import_spool: bool = True):
        wait_bound()  # a bad RIGBENCH_DB_WAIT_S is refused now, not when a finished result is stored
        if url is not None and not url.strip():  # `--db "$UNSET_VAR"`: not the default database silently
            raise UsageError("--db is empty: give a file or a URL, or leave --db out for the default database")
        real = resolve_db_url(url) if url else default_db_url()
        self.url = display_url(real)
        self._runs: dict[str, dict[str, Any]] = {}  # runs added here: a spooled result keeps its run
        self._deferred: set[str] = set()  # of those, the runs not written yet (add_run's `deferred`)
        self._spooling = False  # a result was spooled: later ones try once, not for the whole wait
        try:
            self.engine: Engine = make_engine(real, create=create)
            ensure_current(self.engine, self.url)
        except OperationalError as exc:  # unreachable server, wrong password, a file it cannot make
            hint = "; give --db or set RIGBENCH_DB to a database you can write" if real.startswith("sqlite") else ""
            raise UsageError(f"cannot open the database {self.url}: {error_text(exc)}{hint}") from None
        except DatabaseError as exc:  # e.g. SQLite's "file is not a database"
            hint = "; give --db a rigbench database or a new file" if real.startswith("sqlite") else ""
            raise UsageError(f"cannot open the database {self.url}: {error_text(exc)}{hint}") from None
        except NoSuchModuleError:
            raise UsageError(f"--db {self.url!r}: unknown database kind; use sqlite:/// or postgresql://") from None
        except Unavailable as exc:  # a migration waited for another process's write lock
            raise UsageError(f"cannot open the database {self.url}: {exc} ({exc.hint})") from None
        if import_spool:
            self._import_spool_quietly()

    @contextmanager
    def _transaction(self, wait_s: float) -> Iterator[Transaction]:
        """A write transaction under the write lock, waiting up to `wait_s` for a busy SQLite
        file; the driver's errors and waiting.Unavailable pass through as they are."""
        with self.engine.connect() as conn:
            write_lock(conn, self.url, wait_s)
            try:
                yield Transaction(conn, self.url)
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One write transaction: committed when the block ends, rolled back if it raises (or
        if the process dies inside it). It takes the database's write lock at once
        (engine.write_lock), so a transaction that reads before it writes cannot deadlock
        another or miss what another is writing."""
        try:
            with self._transaction(wait_bound()) as tx:
                yield tx
        except OperationalError as exc:
            # read-only file, full disk, server gone: results committed before stay
            raise UsageError(f"cannot write to the database {self.url}: {error_text(exc)}") from None
        except Unavailable as exc:
            raise UsageError(f"cannot write to the database {self.url}: {exc} ({exc.hint})") from None

    def _write(self, fn: Callable[[Transaction], T], wait_s: float | None = None) -> T:
        """`fn` in one write transaction, tried again on a lost connection (store/waiting.py)
        up to `wait_s` (default RIGBENCH_DB_WAIT_S); Unavailable past it."""
        bound = wait_bound() if wait_s is None else wait_s

        def attempt() -> T:
            with self._transaction(bound) as tx:
                return fn(tx)

        return retry_unreachable(self.url, bound, attempt, self._connection_lost, error_text)

    def _connection_lost(self, exc: DBAPIError) -> bool:
        """Worth another try: a server connection that failed or broke. SQLite's busy file
        is waited for inside the write lock; its other errors (read-only, full disk) stay."""
        if self.engine.dialect.name == "sqlite":
            return False
        return exc.connection_invalidated or isinstance(exc, (OperationalError, InterfaceError))

    def add_run(self, run_id: str, created_at: str, command: str, machine: dict[str, Any], *,
                deferred: bool = False) -> None:
        """Record a run. `deferred`: written with its first result (add_result, same transaction),
        so a run that stores none (interrupted in start-up, every trial refused) leaves no empty
        run row; in a fleet's shared database those piled up. Either way it is written now, and a
        deferred one rolled back: a read-only or unreachable database is a UsageError here."""
        self._runs[run_id] = {"id": run_id, "created_at": created_at, "command": command, "machine": machine}

        def write(tx: Transaction) -> None:
            tx.add_run(run_id, created_at, command, machine)
            if deferred:  # written and rolled back: a database that cannot take it is refused now, as
                raise _RolledBack  # before any trial, not after the first trial's minutes (then spooled)

        try:
            self._write(write)
        except _RolledBack:
            self._deferred.add(run_id)
        except (Unavailable, OperationalError, InterfaceError) as exc:
            raise UsageError(f"cannot write to the database {self.url}: {_why(exc)}") from None

    def add_result(self, result: Result) -> int | None:
        """Store a result with its raw samples; returns its id (also set on `result`).

        A database that stays busy or unreachable past the wait, cannot be written (read-only,
        full disk) or refuses a value does not lose the result: it is kept in the spool
        (store/spool.py) with one line saying where, and None is returned; once one result is
        spooled, later ones try once (no new wait) until a write succeeds. A successful write
        also stores what was spooled before. A broken invariant (IntegrityError: the result's
        run is not stored) is a bug, raised as it is."""
        tries = 0

        def insert_once(tx: Transaction) -> int:
            nonlocal tries
            tries += 1
            # a retry after a lost connection: the lost commit may have landed
            stored = _stored_id(tx, result) if tries > 1 else None
            if stored is not None:
                return stored
            if result.run_id in self._deferred and not tx.machines([result.run_id]):
                run = self._runs[result.run_id]
                tx.add_run(result.run_id, run["created_at"], run["command"], run["machine"])
            return tx.add_result(result)

        try:
            new_id = self._write(insert_once, 0.0 if self._spooling else None)
        except (Unavailable, OperationalError, InterfaceError, DataError) as exc:
            result.id = None  # set by an insert that was never committed
            run = self._runs.get(result.run_id, {"id": result.run_id, "created_at": result.created_at})
            try:
                path = spool.write(self.url, result, run, str(exc) if isinstance(exc, Unavailable) else error_text(exc))
            except UsageError as no_spool:  # nowhere left to keep it: say both, stop the run
                raise UsageError(f"could not store the result of {result.spec.label()} in {self.url} ({_why(exc)}), "
                                 f"and {no_spool}") from None
            self._spooling = True
            log.warning("could not store the result of %s in %s (%s): kept it in %s; it is stored when a command "
                        "next opens this database, or by `rigbench results flush` with its --db",
                        result.spec.label(), self.url, _why(exc), path)
            return None
        result.id = new_id
        self._deferred.discard(result.run_id)
        if self._spooling:
            self._spooling = False
            self._import_spool_quietly()
        return new_id

    def flush_spool(self, wait_s: float | None = None) -> SpoolOutcome:
        """Store the results spooled for this database, each with its run, each file deleted
        once its transaction committed; a result already stored is not stored twice.
        Stops at the first file the database cannot take while busy or unreachable."""
        out = SpoolOutcome()
        files = spool.pending(self.url)
        for i, path in enumerate(files):
            try:
                run, result = spool.read(path)
            except ValueError as exc:
                out.unreadable.append(f"{spool.set_aside(path) or path} ({exc})")
                continue
            try:
                added = self._write(partial(_store_spooled, run=run, result=result), wait_s)
            except Unavailable as exc:
                out.left += files[i:]
                out.reason = out.reason or str(exc)
                break
            except DBAPIError as exc:  # this row refused, or a file that cannot be written: keep trying
                out.left.append(path)
                out.reason = out.reason or error_text(exc)
                continue
            path.unlink(missing_ok=True)
            out.imported += added
            out.present += not added
        return out

    def _import_spool_quietly(self) -> None:
        """On opening, and when a write succeeds after a spool: store what is spooled for this
        database without waiting (one try), and say in one line what happened."""
        if not spool.pending(self.url):
            return
        done = self.flush_spool(wait_s=0.0)
        if done.imported or done.present:
            also = f" ({done.present} were already stored)" if done.present else ""
            log.warning("stored %d result(s) in %s that were spooled while it could not take them%s",
                        done.imported, self.url, also)
        if done.left:
            log.warning("%d spooled result(s) are not stored in %s yet (%s): they stay in %s; "
                        "`rigbench results flush` tries again", len(done.left), self.url, done.reason,
                        done.left[0].parent)
        if done.unreadable:
            log.warning("%d spooled file(s) cannot be read and were set aside: %s",
                        len(done.unreadable), "; ".join(done.unreadable))

    @contextmanager
    def _reading(self) -> Iterator[Connection]:
        """A connection for reads. A SQLite lock another process took after this Store opened
        and held past the busy timeout (RIGBENCH_DB_WAIT_S, store/waiting.py) is one line
        naming the variable, not a traceback."""
        with self.engine.connect() as conn:
            try:
                yield conn
            except OperationalError as exc:
                if not is_busy(exc):
                    raise
                raise UsageError(f"cannot read the database {self.url}: {error_text(exc)} ({Unavailable.hint})") from None

    def runs(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The stored runs, oldest first (the newest `limit` when given): id, created_at, command
        (masked), machine, and how many trials and calibration measurements each holds."""
        with self._reading() as conn:
            return rows.list_runs(conn, limit, self.url)

    def run_count(self) -> int:
        with self._reading() as conn:
            return rows.count_runs(conn)

    def get(self, trial_id: int) -> Result | None:
        """One result with its raw samples, or None; UsageError if its row cannot be read."""
        with self._reading() as conn:
            try:
                return rows.get_result(conn, trial_id)
            except ValueError as exc:
                raise UsageError(f"{exc} in {self.url}") from None

    def full(self, results: Sequence[Result]) -> list[Result]:
        """`results` (as listed, without raw samples) read again with their raw samples; one
        that cannot be read is skipped with a warning naming it (as `list` does), so one bad
        row does not stop an export or a score over the whole database."""
        with self._reading() as conn:
            return rows.full_results(conn, [r.id for r in results if r.id is not None], self.url)

    def stream(self, run_id: str | None = None, *, raw: bool = False, chunk: int | None = None) -> Iterator[Result]:
        """The results `list(run_id=run_id)` lists (with their raw samples if `raw`), oldest
        first, read from the database `chunk` rows at a time as they are used (rows.stream_results):
        an export holds one page of decoded results, however many are stored."""
        with self._reading() as conn:
            yield from rows.stream_results(conn, _filters({"run_id": run_id}), raw, self.url, chunk)

    def of_runs(self, run_ids: Sequence[str]) -> list[Result]:
        """The results of the runs `run_ids`, as `list` lists them (without raw samples, oldest
        first, unreadable rows skipped with a warning)."""
        with self._reading() as conn:
            return rows.results_of_runs(conn, run_ids, self.url)

    def list(self, run_id: str | None = None, workload: str | None = None,
             status: str | None = None, limit: int | None = None, *, kind: str | None = None,
             framework: str | None = None, device: str | None = None, precision: str | None = None,
             batch_size: int | None = None, world_size: int | None = None,
             any_of: Mapping[str, Collection[Any]] | None = None) -> list[Result]:
        """Results without raw samples, oldest first (the newest `limit` when given), filtered
        in SQL by each argument given; `any_of`: column (rows.FILTER_COLUMNS) -> the values it
        may hold, one of them (`--where`). Rows that cannot be read are skipped with a warning."""
        where = _filters({"run_id": run_id, "workload": workload, "status": status, "kind": kind,
                          "framework": framework, "device": device, "precision": precision,
                          "batch_size": batch_size, "world_size": world_size}, any_of)
        with self._reading() as conn:
            return rows.list_results(conn, where, limit, self.url)

    def count(self, run_id: str | None = None, workload: str | None = None, status: str | None = None, *,
              any_of: Mapping[str, Collection[Any]] | None = None) -> int:
        """How many stored results match, as Store.list would list them (unreadable rows included)."""
        with self._reading() as conn:
            return rows.count_results(conn, _filters({"run_id": run_id, "workload": workload, "status": status},
                                                     any_of))

    def machine(self, run_id: str) -> dict[str, Any] | None:
        with self._reading() as conn:
            return rows.run_machines(conn, [run_id], self.url).get(run_id)

    def commands(self, run_ids: Sequence[str]) -> dict[str, str]:
        """run id -> its stored command line, for those of `run_ids` that are stored."""
        with self._reading() as conn:
            return rows.run_commands(conn, run_ids)
