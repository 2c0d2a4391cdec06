"""Database URLs and engines: which database, and how every connection to it is set up."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError

from rigbench.errors import UsageError

#: Seconds a SQLite connection waits for another process's write lock (a migration, a bundle
#: import, a sweep storing a result) before giving up with "database is locked".
SQLITE_BUSY_TIMEOUT_S = 60.0


def default_db_url() -> str:
    """`RIGBENCH_DB` if set, else a SQLite file in the user's data directory."""
    if os.environ.get("RIGBENCH_DB"):
        return resolve_db_url(os.environ["RIGBENCH_DB"])
    path = Path(platformdirs.user_data_dir("rigbench")) / "rigbench.db"
    return f"sqlite:///{path}"


def resolve_db_url(text: str) -> str:
    """Accept an SQLAlchemy URL (`postgresql://...`, `sqlite:///x.db`) or a plain file path."""
    if "://" not in text:
        return f"sqlite:///{Path(text).expanduser().resolve()}"
    try:
        make_url(text)
    except ArgumentError:
        raise UsageError(f"--db {text!r} is not a database URL: use e.g. sqlite:///results.db") from None
    return text


def sqlite_file(url: str) -> Path | None:
    """The file an SQLite URL names (plain or `file:` URI form), or None: another database
    kind, or an in-memory one."""
    parsed = make_url(url)
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    if parsed.query.get("uri") in ("true", "1") and database.startswith("file:"):
        if parsed.query.get("mode") == "memory":
            return None
        database = database.removeprefix("file:").split("?")[0]
    return Path(database)


def make_engine(url: str, create: bool = True) -> Engine:
    """An engine for `url`; on SQLite every connection enforces foreign keys and waits for
    other processes' write locks (the busy timeout) instead of failing at once.

    `create`: a missing SQLite file (and its folder) may be made; commands that only read
    pass False, so a mistyped --db is an error instead of a new empty database."""
    path = sqlite_file(url)
    if path is not None and create:
        path.parent.mkdir(parents=True, exist_ok=True)
    elif path is not None and not path.exists():
        raise UsageError(f"the database {url} does not exist: check --db "
                         "(commands that store results create it)")
    is_sqlite = make_url(url).get_backend_name() == "sqlite"
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S} if is_sqlite else {})
    if is_sqlite:
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # SQLite leaves foreign keys off unless each connection turns them on.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
