"""Bringing a database to the newest schema with the Alembic migrations in migrations/.

Opening is cheap when the database is already at the head revision: one query reads the
revision and the stored Result schema version, and Alembic is not even imported. Otherwise
the migration runs under the database's write lock, in one transaction:

- SQLite: `BEGIN IMMEDIATE` takes the write lock before anything is read; other processes
  opening the same file wait on the busy timeout (engine.py), then find the work done. SQLite's
  own lock, not a lock file beside the database: it works on every OS and file system SQLite
  supports, the OS releases it when a process dies, and there is no stale file to clean up.
  DDL is transactional in SQLite, so a migration killed midway leaves the database as it was.
- PostgreSQL: a transaction-scoped advisory lock (`pg_advisory_xact_lock`), same effect.

A v0.1 database (meta.schema_version = 1, no alembic_version table) is stamped at the base
revision, then upgraded. A revision this code does not know means a newer rigbench wrote the
database: refused, never touched. A database with tables but not rigbench's own (`meta`,
`runs`, `trials`) is another application's, whatever its own alembic_version says: refused,
never touched.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import column, insert, inspect, select, table
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError, ProgrammingError

from rigbench.errors import UsageError
from rigbench.spec import SCHEMA_VERSION
from rigbench.store.engine import first_read, write_lock
from rigbench.store.schema import meta
from rigbench.textlimits import clip, visible

#: The newest revision in migrations/versions/ (a test checks Alembic agrees): comparing with
#: it keeps opening an up-to-date database free of Alembic's start-up cost.
HEAD_REVISION = "0004"
#: v0.1's schema; databases written by v0.1 are stamped here.
BASE_REVISION = "0001"
MIGRATIONS = Path(__file__).parent / "migrations"
#: Alembic's own table, as far as reading the revision goes
_ALEMBIC_VERSION = table("alembic_version", column("version_num"))


def peek(conn: Connection, url: str = "") -> tuple[str | None, str | None] | None:
    """(alembic revision, stored Result schema version) in one query; None when either table
    is missing (a fresh or v0.1 database). A SQLite file another process locks against reads
    is waited for out loud, up to RIGBENCH_DB_WAIT_S (engine.first_read), then Unavailable."""
    query = select(select(_ALEMBIC_VERSION.c.version_num).scalar_subquery(),
                   select(meta.c.value).where(meta.c.key == "schema_version").scalar_subquery())
    try:
        row = first_read(conn, url, lambda: conn.execute(query).first())
    except (OperationalError, ProgrammingError):
        conn.rollback()
        return None
    conn.rollback()  # end the read transaction (PostgreSQL would keep it open)
    return (row[0], row[1]) if row else (None, None)


def ensure_current(engine: Engine, url: str) -> None:
    """Create or migrate the database at `engine` to HEAD_REVISION; UsageError if it was
    written by a newer rigbench."""
    with engine.connect() as conn:
        state = peek(conn, url)
    if state is not None:
        _refuse_newer_results(state[1], url)
        if state[0] == HEAD_REVISION and state[1] is not None:
            return
    with engine.connect() as conn:
        write_lock(conn, url)
        try:
            _migrate(conn, url)
        except BaseException:
            conn.rollback()
            raise
        conn.commit()


def _refuse_newer_results(schema_version: str | None, url: str) -> None:
    if schema_version is not None and not schema_version.strip().isdecimal():
        # every rigbench writes a whole number here: an edited row, refused in one line
        raise UsageError(f"the database {url} has schema version {clip(visible(schema_version), 64)!r}, which is "
                         "not a number: not a database this rigbench wrote")
    if schema_version is not None and int(schema_version) > SCHEMA_VERSION:
        raise UsageError(f"the database {url} has schema version {schema_version}, newer than "
                         f"this rigbench understands ({SCHEMA_VERSION}): upgrade rigbench")


#: Table names a refusal lists before it counts the rest.
_NAMED_TABLES = 8
#: Tables every rigbench database has had, v0.1's included.
_OWN_TABLES = {"meta", "runs", "trials"}


def _refuse_foreign(tables: set[str], url: str) -> None:
    """A database with tables but without rigbench's own (`meta`, `runs`, `trials`: every
    version has them, v0.1's included) belongs to something else: refused before anything is
    written to it."""
    if not tables or _OWN_TABLES <= tables:
        return
    names = sorted(tables)
    shown = ", ".join(clip(visible(name), 64) for name in names[:_NAMED_TABLES])
    more = f" and {len(names) - _NAMED_TABLES} more" if len(names) > _NAMED_TABLES else ""
    raise UsageError(f"the database {url} is not a rigbench database (it has tables: {shown}{more}); "
                     "give an empty database or a rigbench one")


def _migrate(conn: Connection, url: str) -> None:
    """Under the lock: look again (another process may have done it), then stamp and upgrade."""
    from alembic import command
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    config.attributes["connection"] = conn
    tables = set(inspect(conn).get_table_names())
    _refuse_foreign(tables, url)
    revision = (conn.execute(select(_ALEMBIC_VERSION.c.version_num)).scalar()
                if "alembic_version" in tables else None)
    known = {script.revision for script in ScriptDirectory.from_config(config).walk_revisions()}
    if revision is not None and revision not in known:
        raise UsageError(f"the database {url} is at schema revision {revision!r}, newer than "
                         f"this rigbench understands: upgrade rigbench")
    if revision is None and "meta" in tables:
        command.stamp(config, BASE_REVISION)  # written by v0.1, before migrations existed
    if revision != HEAD_REVISION:
        command.upgrade(config, "head")
    stored = conn.execute(select(meta.c.value).where(meta.c.key == "schema_version")).scalar()
    if stored is None:
        conn.execute(insert(meta).values(key="schema_version", value=str(SCHEMA_VERSION)))
    _refuse_newer_results(stored, url)
