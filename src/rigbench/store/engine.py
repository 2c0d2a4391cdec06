"""Database URLs and engines: which database, and how every connection to it is set up."""

from __future__ import annotations

import logging
import os
import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from rigbench.errors import UsageError
from rigbench.store.waiting import T, begin_immediate, sqlite_busy_timeout_s, wait_bound, while_busy

log = logging.getLogger("rigbench.store")
#: any constant: the key of the PostgreSQL advisory lock that stands for SQLite's write lock
_PG_WRITE_LOCK_KEY = 7_210_101
#: URL schemes that mean PostgreSQL without naming a driver -> the one rigbench installs
#: (the `postgres` extra: psycopg 3). SQLAlchemy alone would pick psycopg2 for `postgresql://`
#: and reject `postgres://` (the form many hosting providers hand out).
_POSTGRES_SCHEMES = ("postgresql", "postgres")
POSTGRES_DRIVER = "postgresql+psycopg"
POSTGRES_INSTALL = "pip install 'rigbench[postgres]'"
#: A URL inside free text (an error message, a command line that cannot be split into its
#: arguments), up to whitespace or a quote: there a password with a space cannot be told from
#: the text after it, so a command line is masked argument by argument (mask_command).
_URL_IN_TEXT = re.compile(r"[A-Za-z][\w+.-]*://[^\s'\"]+")
_SCHEME = re.compile(r"\A[A-Za-z][\w+.-]*://")
#: The password of `scheme://user:password@host`: from the user's first colon to the LAST `@`
#: (greedy), so an unencoded `@` or `:` in the password is masked whole. SQLAlchemy and libpq
#: stop at the first `@`; masking more than they read shows less, never a part of a secret.
_USERINFO_PASSWORD = re.compile(r"\A([A-Za-z][\w+.-]*://[^:/]*:).*@", re.DOTALL)
#: libpq also takes a password as a query parameter (`?password=...`): in free text up to
#: whitespace, in a whole argument (mask_url) up to the next parameter.
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#\s]*", re.IGNORECASE)
_WHOLE_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&]*", re.IGNORECASE)
#: The options whose whole value is a database URL (or a path), masked whatever it holds.
_DB_OPTIONS = ("--db",)
#: An argument a shell takes as it is (shlex.quote's safe characters, and `*`).
_BARE_ARG = re.compile(r"[\w@%+=:,./*-]+", re.ASCII)
#: Seconds one connection attempt to a PostgreSQL server may take (libpq waits forever by
#: default): a server that went away must fail the attempt, so the retries stay bounded.
PG_CONNECT_TIMEOUT_S = 10


def default_db_url() -> str:
    """`RIGBENCH_DB` if set, else a SQLite file in the user's data directory."""
    if os.environ.get("RIGBENCH_DB"):
        return resolve_db_url(os.environ["RIGBENCH_DB"])
    return sqlite_url(Path(platformdirs.user_data_dir("rigbench")) / "rigbench.db")


def sqlite_url(path: Path) -> str:
    """The URL of the SQLite file `path` (a Windows one too: sqlite:///C:\\Users\\...). SQLAlchemy
    reads a URL's `%XX` as an escape and ends its path at `?`: a folder named `100%20` or `a?b`
    opened another file. Those two are escaped; the rest stays as the user wrote it."""
    return "sqlite:///" + str(path).replace("%", "%25").replace("?", "%3F")


def resolve_db_url(text: str) -> str:
    """Accept an SQLAlchemy URL (`postgresql://...`, `sqlite:///x.db`) or a plain file path.
    `postgresql://` and `postgres://` get the psycopg 3 driver, so users need not name it."""
    if "://" not in text:
        return sqlite_url(Path(text).expanduser().resolve())
    if not text.lower().startswith("sqlite") and text.split("?")[0].count("@") > 1:
        # SQLAlchemy splits at the first `@` and a driver's error then names the password's rest
        # as the host, where no masking can know it for a secret
        raise UsageError(f"--db {display_url(text)!r} has more than one '@' before its host: write an '@' "
                         "in the user name or password as %40") from None
    try:
        make_url(text)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        raise UsageError(f"--db {display_url(text)!r} is not a database URL: use e.g. sqlite:///results.db "
                         "or postgresql://user@host/db") from None
    scheme, rest = text.split("://", 1)
    # the text itself is kept (re-rendering would re-quote the password and reorder the query)
    return f"{POSTGRES_DRIVER}://{rest}" if scheme.lower() in _POSTGRES_SCHEMES else text


def display_url(url: str) -> str:
    """`url` as it may be printed, logged or stored: any password replaced by `***`, the rest
    of the text as it was (SQLAlchemy would re-render a SQLite `file:` URI or a query)."""
    return _QUERY_PASSWORD.sub(r"\1***", _USERINFO_PASSWORD.sub(r"\1***@", url))


def mask_url(value: str) -> str:
    """A whole value known to be one URL (a --db argument): as display_url, but a password
    with spaces or quotes is masked whole too, up to the last `@` or the next parameter."""
    return _WHOLE_QUERY_PASSWORD.sub(r"\1***", _USERINFO_PASSWORD.sub(r"\1***@", value))


def url_without_password(url: str) -> str:
    """`url` with its password left out (user info and `?password=`), for a command a user
    copies from a hint: libpq then takes the password from PGPASSWORD, ~/.pgpass or a service
    file, where a masked `***` would be sent as the password. Unparsable text: masked instead."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return display_url(url)
    if url.split("?")[0].count("@") > 1:  # SQLAlchemy's host would hold the password's rest
        return display_url(url)
    secret_keys = [key for key in parsed.query if key.lower() == "password"]
    if parsed.password is None and not secret_keys:
        return url
    bare = URL.create(parsed.drivername, username=parsed.username, host=parsed.host, port=parsed.port,
                      database=parsed.database, query=parsed.difference_update_query(secret_keys).query)
    return bare.render_as_string(hide_password=False)


def mask_urls(text: str) -> str:
    """`text` (an error message, a line of free text) with the password of every URL in it
    masked. A command line: mask_command, which knows where each argument ends."""
    return _URL_IN_TEXT.sub(lambda found: display_url(found.group()), text)


def mask_argv(argv: Sequence[str]) -> list[str]:
    """A command's arguments with every password masked: the whole value of `--db X` and
    `--db=X`, any argument that is a URL (`--opt=URL` too), and URLs inside other arguments."""
    return _each_url(argv, mask_url)


def hint_argv(argv: Sequence[str]) -> list[str]:
    """A command's arguments to print for a user to run again (a resume hint): as mask_argv,
    but a database URL loses its password (url_without_password: libpq then reads it from
    PGPASSWORD or ~/.pgpass), where a masked `***` would be sent as the password."""
    return _each_url(argv, lambda value: url_without_password(value) if _SCHEME.match(value) else value)


def _each_url(argv: Sequence[str], whole: Callable[[str], str]) -> list[str]:
    """`argv` with `whole` applied to each value known to be one URL or database (`--db X`,
    `--db=X`, a URL argument, `--opt=URL`) and URLs inside other arguments masked (mask_urls)."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        option, eq, value = arg.partition("=")
        if (i > 0 and argv[i - 1] in _DB_OPTIONS) or _SCHEME.match(arg):
            out.append(whole(arg))
        elif eq and option.startswith("-") and (option in _DB_OPTIONS or _SCHEME.match(value)):
            out.append(f"{option}={whole(value)}")
        else:
            out.append(mask_urls(arg))
    return out


def mask_command(command: str) -> str:
    """A stored command line (`shlex.join(sys.argv)`) with every password masked, argument by
    argument (mask_argv), so `--db 'postgresql://u:top secret@h/db'` hides all of `top secret`;
    text that is not a shell command line: mask_urls."""
    try:
        argv = shlex.split(command)
    except ValueError:  # an unclosed quote: free text
        return mask_urls(command)
    masked = mask_argv(argv)
    if masked == argv:
        return mask_urls(command)
    # quoted as shlex.join would, but a mask's `***` left bare, as mask_urls writes it
    return mask_urls(" ".join(arg if _BARE_ARG.fullmatch(arg) else shlex.quote(arg) for arg in masked))


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
        made = not path.parent.is_dir()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a read-only home, a path through a file
            raise UsageError(f"cannot create the folder {path.parent} for the database {display_url(url)} "
                             f"({exc.strerror}): give --db or set RIGBENCH_DB to a database you can write") from None
        if made:  # a mistyped --db or RIGBENCH_DB would otherwise go unnoticed
            log.warning("created the folder %s for the database %s", path.parent, path.name)
    elif path is not None and not path.exists():
        raise UsageError(f"the database {display_url(url)} does not exist: check --db or RIGBENCH_DB "
                         "(commands that store results create it)")
    elif path is not None and path.is_file() and path.stat().st_size == 0:
        # SQLite would take an empty file as an empty database and a read would write the schema into it
        raise UsageError(f"the database {display_url(url)} is an empty file (0 bytes), no rigbench database yet: "
                         "check --db or RIGBENCH_DB (commands that store results make it one)")
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    is_sqlite = backend == "sqlite"
    # no silent wait for another process's lock outlasts RIGBENCH_DB_WAIT_S (store/waiting.py)
    options: dict[str, Any] = {"connect_args": {"timeout": sqlite_busy_timeout_s()}}
    if not is_sqlite:
        # a pooled connection that died with its server (a restart) is replaced on checkout
        options = {"pool_pre_ping": True, "connect_args": {}}
        if backend == "postgresql" and "connect_timeout" not in parsed.query:
            options["connect_args"]["connect_timeout"] = PG_CONNECT_TIMEOUT_S
    try:
        engine = create_engine(url, **options)
    except ModuleNotFoundError as exc:  # the dialect imports its driver here
        how = f": {POSTGRES_INSTALL}" if backend == "postgresql" else ""
        if backend == "postgresql" and parsed.get_driver_name() != "psycopg":  # the extra would not bring it
            how = (f": rigbench's PostgreSQL driver is psycopg 3 ({POSTGRES_INSTALL}); give the URL as "
                   "postgresql://... and rigbench uses it")
        raise UsageError(f"the database driver for {display_url(url)} is not installed ({exc.name}){how}") from None
    if is_sqlite:
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # SQLite leaves foreign keys off unless each connection turns them on.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def error_text(exc: DBAPIError) -> str:
    """The driver's message on one line (psycopg's span several), any URL in it masked."""
    return mask_urls(" ".join(str(exc.orig).split()))


def write_lock(conn: Connection, url: str = "", wait_s: float | None = None) -> None:
    """Take the database's write lock for the rest of `conn`'s transaction (a migration, a
    Store.transaction), so write transactions run one at a time as on SQLite and one that
    reads before it writes (a bundle import skipping what is stored) sees every earlier one.
    SQLite: BEGIN IMMEDIATE, waiting up to `wait_s` (default: waiting.wait_bound()) and saying
    so (store/waiting.py), then waiting.Unavailable. PostgreSQL: a transaction-scoped advisory
    lock, released at commit, rollback or a lost connection. `url`: as shown in messages."""
    if conn.dialect.name == "sqlite":
        path = sqlite_file(conn.engine.url.render_as_string(hide_password=False))
        begin_immediate(conn, url or display_url(str(conn.engine.url)), path,
                        wait_bound() if wait_s is None else wait_s)
    elif conn.dialect.name == "postgresql":
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_WRITE_LOCK_KEY})")


def first_read(conn: Connection, url: str, attempt: Callable[[], T]) -> T:
    """A command's first read of the database (store/migrate.peek): on SQLite, while another
    process holds a lock that blocks reads (`BEGIN EXCLUSIVE`), waited for out loud up to
    RIGBENCH_DB_WAIT_S as a write is (store/waiting.py), then waiting.Unavailable."""
    if conn.dialect.name != "sqlite":
        return attempt()
    path = sqlite_file(conn.engine.url.render_as_string(hide_password=False))
    return while_busy(conn, url or display_url(str(conn.engine.url)), path, wait_bound(), attempt)
