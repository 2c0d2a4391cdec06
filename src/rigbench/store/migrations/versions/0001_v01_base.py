"""The schema of rigbench v0.1, the base revision. A v0.1 database (meta.schema_version = 1,
no alembic_version table) is stamped at this revision, not created again.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A frozen copy of v0.1's tables: never import rigbench.store.schema here, it moves on.
    op.create_table(
        "meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("command", sa.Text, nullable=False),
        sa.Column("machine_json", sa.Text, nullable=False),
    )
    op.create_table(
        "trials",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(36), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("workload", sa.String(64), nullable=False),
        sa.Column("framework", sa.String(32), nullable=False),
        sa.Column("device", sa.String(64), nullable=False),
        sa.Column("batch_size", sa.Integer, nullable=False),
        sa.Column("precision", sa.String(8), nullable=False),
        sa.Column("threads", sa.Integer),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("samples_per_s", sa.Float),
        sa.Column("step_time_ms_median", sa.Float),
        sa.Column("schema_version", sa.Integer, nullable=False),
        sa.Column("result_json", sa.Text, nullable=False),
    )
    for column in ("run_id", "workload", "status"):
        op.create_index(f"ix_trials_{column}", "trials", [column])
    op.create_table(
        "trial_samples",
        sa.Column("trial_id", sa.Integer, sa.ForeignKey("trials.id"), primary_key=True),
        sa.Column("step_times_json", sa.Text, nullable=False),
        sa.Column("tracker_json", sa.Text, nullable=False),
    )
    op.create_table(
        "calibrations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(36), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("device", sa.String(64), nullable=False),
        sa.Column("device_name", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("precision", sa.String(8)),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("value", sa.Float),
        sa.Column("unit", sa.String(16), nullable=False),
        sa.Column("detail_json", sa.Text, nullable=False),
    )
    for column in ("run_id", "device_name"):
        op.create_index(f"ix_calibrations_{column}", "calibrations", [column])
    # the stored Result schema version (rigbench.spec.SCHEMA_VERSION) of v0.1
    op.bulk_insert(sa.table("meta", sa.column("key", sa.String), sa.column("value", sa.Text)),
                   [{"key": "schema_version", "value": "1"}])


def downgrade() -> None:
    for table in ("calibrations", "trial_samples", "trials", "runs", "meta"):
        op.drop_table(table)
