"""Names and times lose their declared length on PostgreSQL: workload, framework, device,
device name and created_at may be as long as rigbench.textlimits lets any name be (a bundle
from another machine, a device id), which SQLite always stored whatever the declaration said.
PostgreSQL enforced VARCHAR(64) and refused such a row; rigbench.textlimits is the one bound.

SQLite (and any other database) is left as it is: SQLite never enforced a declared length.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

#: table -> its columns that become VARCHAR without a length (the lengths 0001 gave them)
_COLUMNS = {
    "runs": {"created_at": 32},
    "trials": {"created_at": 32, "workload": 64, "framework": 32, "device": 64},
    "calibrations": {"created_at": 32, "device": 64, "device_name": 200},
}


def _alter(unbounded: bool) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, columns in _COLUMNS.items():
        for column, length in columns.items():
            # varchar(n) -> varchar changes only the catalogue in PostgreSQL: no table rewrite
            op.alter_column(table, column, type_=sa.String() if unbounded else sa.String(length))


def upgrade() -> None:
    _alter(unbounded=True)


def downgrade() -> None:
    _alter(unbounded=False)
