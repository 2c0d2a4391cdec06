"""Reading and writing results. Each result is committed as soon as it is added, so a
failure or Ctrl-C later in a run never loses finished trials; several writes that must land
together (a bundle import) share one `Store.transaction()`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DatabaseError, NoSuchModuleError, OperationalError

from rigbench.errors import UsageError
from rigbench.spec import Result
from rigbench.store import rows
from rigbench.store.engine import default_db_url, display_url, make_engine, mask_urls, resolve_db_url, write_lock
from rigbench.store.migrate import ensure_current

__all__ = ["Store", "Transaction", "default_db_url", "resolve_db_url"]


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

    def get(self, trial_id: int) -> Result | None:
        """As Store.get (raw samples included), seeing this transaction's own writes."""
        return rows.get_result(self.conn, trial_id)

    def list(self, **where: Any) -> list[Result]:
        """As Store.list, seeing this transaction's own writes."""
        return rows.list_results(self.conn, _filters(where), None, self.url)

    def machines(self, run_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """run id -> machine fingerprint, for those of `run_ids` that are stored."""
        return rows.run_machines(self.conn, run_ids)


def _filters(where: dict[str, Any]) -> dict[str, Any]:
    unknown = set(where) - set(rows.FILTER_COLUMNS)
    if unknown:
        raise TypeError(f"unknown filter(s): {', '.join(sorted(unknown))}")
    return {k: v for k, v in where.items() if v is not None and v != ""}


def _reason(exc: DatabaseError) -> str:
    """The driver's message on one line (psycopg's span several), any URL in it masked."""
    return mask_urls(" ".join(str(exc.orig).split()))


class Store:
    """A results database. Creates or migrates its tables on first use (store/migrate.py).

    `url` is the database as shown in messages and outputs, its password masked
    (engine.display_url); only `engine` holds the real one, so no message, stored run or
    export made from a Store can carry a password.

    `create=False` (commands that only read): a missing SQLite file is a UsageError, and no
    file or folder is made."""

    def __init__(self, url: str | None = None, *, create: bool = True):
        real = resolve_db_url(url) if url else default_db_url()
        self.url = display_url(real)
        try:
            self.engine: Engine = make_engine(real, create=create)
            ensure_current(self.engine, self.url)
        except OperationalError as exc:  # unreachable server, wrong password, locked file
            raise UsageError(f"cannot open the database {self.url}: {_reason(exc)}") from None
        except DatabaseError as exc:  # e.g. SQLite's "file is not a database"
            hint = "; give --db a rigbench database or a new file" if real.startswith("sqlite") else ""
            raise UsageError(f"cannot open the database {self.url}: {_reason(exc)}{hint}") from None
        except NoSuchModuleError:
            raise UsageError(f"--db {self.url!r}: unknown database kind; use sqlite:/// or postgresql://") from None

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One write transaction: committed when the block ends, rolled back if it raises (or
        if the process dies inside it). It takes the database's write lock at once
        (engine.write_lock), so a transaction that reads before it writes cannot deadlock
        another or miss what another is writing."""
        try:
            with self.engine.connect() as conn:
                write_lock(conn)
                try:
                    yield Transaction(conn, self.url)
                except BaseException:
                    conn.rollback()
                    raise
                conn.commit()
        except OperationalError as exc:
            # read-only file, full disk, lock held too long: results committed before stay
            raise UsageError(f"cannot write to the database {self.url}: {_reason(exc)}") from None

    def add_run(self, run_id: str, created_at: str, command: str, machine: dict[str, Any]) -> None:
        with self.transaction() as tx:
            tx.add_run(run_id, created_at, command, machine)

    def add_result(self, result: Result) -> int:
        """Store a result with its raw samples; returns its id (also set on `result`)."""
        with self.transaction() as tx:
            return tx.add_result(result)

    def get(self, trial_id: int) -> Result | None:
        """One result with its raw samples, or None; UsageError if its row cannot be read."""
        with self.engine.connect() as conn:
            try:
                return rows.get_result(conn, trial_id)
            except ValueError as exc:
                raise UsageError(f"{exc} in {self.url}") from None

    def list(self, run_id: str | None = None, workload: str | None = None,
             status: str | None = None, limit: int | None = None, *, kind: str | None = None,
             framework: str | None = None, device: str | None = None, precision: str | None = None,
             batch_size: int | None = None, world_size: int | None = None) -> list[Result]:
        """Results without raw samples, oldest first (the newest `limit` when given), filtered
        in SQL by each argument given. Rows that cannot be read are skipped with a warning."""
        where = _filters({"run_id": run_id, "workload": workload, "status": status, "kind": kind,
                          "framework": framework, "device": device, "precision": precision,
                          "batch_size": batch_size, "world_size": world_size})
        with self.engine.connect() as conn:
            return rows.list_results(conn, where, limit, self.url)

    def machine(self, run_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            return rows.run_machines(conn, [run_id]).get(run_id)

    def commands(self, run_ids: Sequence[str]) -> dict[str, str]:
        """run id -> its stored command line, for those of `run_ids` that are stored."""
        with self.engine.connect() as conn:
            return rows.run_commands(conn, run_ids)
