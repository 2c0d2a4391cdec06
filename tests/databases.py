"""A real PostgreSQL server for the store's tests: a fresh database per test.

The server is named by RIGBENCH_TEST_POSTGRES_URL (`.ci/postgres.sh` starts one and sets it;
CI sources it). Its user needs CREATEDB: every test gets a database of its own, made from
the server's template and dropped afterwards, so tests share nothing and run side by side
under pytest-xdist. Without the variable, PostgreSQL cases are skipped with SKIP_REASON.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from rigbench.store.engine import resolve_db_url

ENV = "RIGBENCH_TEST_POSTGRES_URL"
SKIP_REASON = (f"{ENV} is not set: start a throwaway PostgreSQL server with `. .ci/postgres.sh` "
               "(README, Run the tests), then run pytest in that shell")


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
            with admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.dispose()
