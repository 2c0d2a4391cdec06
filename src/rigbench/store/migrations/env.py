"""Alembic's entry point. rigbench.store.migrate always passes an open connection, already
inside the transaction that holds the database's write lock, so nothing here commits."""

from alembic import context

from rigbench.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata)
with context.begin_transaction():
    context.run_migrations()
