"""Results database: SQLAlchemy Core, SQLite by default, any SQLAlchemy URL (PostgreSQL...)."""

from rigbench.store.db import Store, default_db_url, resolve_db_url

__all__ = ["Store", "default_db_url", "resolve_db_url"]
