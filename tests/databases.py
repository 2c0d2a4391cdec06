"""The store's test databases: a fresh database per test on a real PostgreSQL server, and
plain SQL on any test database (SQLite or PostgreSQL) without opening a Store.

The server is named by RIGBENCH_TEST_POSTGRES_URL (`.ci/postgres.sh` starts one and sets it;
CI sources it). Its user needs CREATEDB: every test gets a database of its own, made from
the server's template and dropped afterwards, so tests share nothing and run side by side
under pytest-xdist. Without the variable, PostgreSQL cases are skipped with SKIP_REASON.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, make_url

from rigbench.store.engine import resolve_db_url

ENV = "RIGBENCH_TEST_POSTGRES_URL"
SKIP_REASON = (f"{ENV} is not set: start a throwaway PostgreSQL server with `. .ci/postgres.sh` "
               "(README, Development), then run pytest in that shell")


def server_url() -> str:
    """The test server's URL (driver made explicit); skips the calling test when none is set."""
    url = os.environ.get(ENV)
    if not url:
        pytest.skip(SKIP_REASON)
    return resolve_db_url(url)


@contextmanager
def fresh_database() -> Iterator[str]:
    """The URL of a new, empty database on the test server (password included), dropped on
    exit even if a connection to it is still open (a Store the test left behind)."""
    server = make_url(server_url())
    name = f"rigbench_test_{uuid.uuid4().hex[:16]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")  # CREATE DATABASE refuses a transaction
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        try:
            yield server.set(database=name).render_as_string(hide_password=False)
        finally:
            _drop(admin, name)
    finally:
        admin.dispose()


def _drop(admin: Any, name: str, tries: int = 20) -> None:
    """DROP DATABASE, ending the connections a test left open (FORCE). FORCE refuses to end a
    backend of another role, such as the superuser's autovacuum worker on a database just
    written to ("must be a member of the role whose process is being terminated", seen once
    in CI): that worker ends within moments, so try again a little later."""
    from sqlalchemy.exc import ProgrammingError

    for attempt in range(tries):
        try:
            with admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            return
        except ProgrammingError:
            if attempt == tries - 1:
                raise
            time.sleep(0.25)


@contextmanager
def connection(url: str) -> Iterator[Connection]:
    """A plain connection in a transaction committed at the end; not a Store's, since opening
    a Store would migrate the database."""
    engine = create_engine(resolve_db_url(url))
    try:
        with engine.begin() as conn:
            yield conn
    finally:
        engine.dispose()


def sql(url: str, query: str, **params: Any) -> list[tuple]:
    """The rows of one query, as tuples."""
    with connection(url) as conn:
        return [tuple(row) for row in conn.execute(text(query), params)]
