"""Trials gain `kind`, `workload_options` and `world_size` columns (filters run in SQL),
backfilled from each row's stored spec.

Revision ID: 0002
Revises: 0001
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_BATCH = 500  # rows read and updated at a time, so a large database is not loaded at once


def columns_from_spec(result_json: str) -> dict | None:
    """The three values for one stored row, or None when its JSON cannot be read (the row
    keeps the defaults; reading it is then the store's lenient loader's business)."""
    try:
        spec = json.loads(result_json)["spec"]
        kind = spec.get("kind") or ("train" if spec.get("train") else
                                    "lr_find" if spec.get("lr_find") else "speed")
        options = json.dumps(spec.get("workload_options") or {}, sort_keys=True, separators=(",", ":"))
        return {"kind": str(kind), "workload_options": options, "world_size": int(spec.get("world_size") or 1)}
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def upgrade() -> None:
    op.add_column("trials", sa.Column("kind", sa.String(16), nullable=False, server_default="speed"))
    op.add_column("trials", sa.Column("workload_options", sa.Text, nullable=False, server_default="{}"))
    op.add_column("trials", sa.Column("world_size", sa.Integer, nullable=False, server_default="1"))
    op.create_index("ix_trials_kind", "trials", ["kind"])

    trials = sa.table("trials", sa.column("id", sa.Integer), sa.column("result_json", sa.Text),
                      sa.column("kind", sa.String), sa.column("workload_options", sa.Text),
                      sa.column("world_size", sa.Integer))
    update = (sa.update(trials).where(trials.c.id == sa.bindparam("row_id"))
              .values(kind=sa.bindparam("kind"), workload_options=sa.bindparam("workload_options"),
                      world_size=sa.bindparam("world_size")))
    conn = op.get_bind()
    last = 0
    while True:
        rows = conn.execute(sa.select(trials.c.id, trials.c.result_json).where(trials.c.id > last)
                            .order_by(trials.c.id).limit(_BATCH)).all()
        if not rows:
            break
        last = rows[-1].id
        values = [{"row_id": r.id, **found} for r in rows if (found := columns_from_spec(r.result_json))]
        if values:
            conn.execute(update, values)


def downgrade() -> None:
    op.drop_index("ix_trials_kind", "trials")
    for column in ("world_size", "workload_options", "kind"):
        op.drop_column("trials", column)
