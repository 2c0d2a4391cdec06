"""Alembic migrations of the results database, run by rigbench.store.migrate (no alembic.ini).

Add a revision: a new file in versions/ whose `down_revision` is the current head, and set
`rigbench.store.migrate.HEAD_REVISION` to its id (a test checks the two agree).
"""
