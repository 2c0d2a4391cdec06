"""Max-batch probes become trials of kind "probe": rows that an older rigbench stored as "speed"
with a probe's timing (2 timed steps, no minimum time) are re-labelled in the `kind` column.
Their stored spec is left as it was: TrialSpec reads such a spec as a probe by the same rule
(spec.is_probe_timing), so the column and what is read agree.

Revision ID: 0003
Revises: 0002
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_BATCH = 500  # rows read and updated at a time, so a large database is not loaded at once
#: max-batch's probe timing when this revision was written (spec.PROBE_STEPS then); a
#: migration is history, so it keeps its own copy rather than import a rule that may move on
_PROBE_STEPS = 2


def is_old_probe(result_json: str) -> bool:
    """A stored "speed" row timed like a probe; False when its JSON cannot be read (the row
    keeps its kind; reading it is then the store's lenient loader's business)."""
    try:
        measure = json.loads(result_json)["spec"].get("measure") or {}
        return measure.get("min_steps") == _PROBE_STEPS and measure.get("min_seconds") == 0
    except (ValueError, TypeError, KeyError, AttributeError):
        return False


def upgrade() -> None:
    trials = sa.table("trials", sa.column("id", sa.Integer), sa.column("result_json", sa.Text),
                      sa.column("kind", sa.String))
    conn = op.get_bind()
    last = 0
    while True:
        rows = conn.execute(sa.select(trials.c.id, trials.c.result_json)
                            .where(trials.c.id > last, trials.c.kind == "speed")
                            .order_by(trials.c.id).limit(_BATCH)).all()
        if not rows:
            break
        last = rows[-1].id
        probes = [r.id for r in rows if is_old_probe(r.result_json)]
        if probes:
            conn.execute(sa.update(trials).where(trials.c.id.in_(probes)).values(kind="probe"))


def downgrade() -> None:
    trials = sa.table("trials", sa.column("kind", sa.String))
    op.get_bind().execute(sa.update(trials).where(trials.c.kind == "probe").values(kind="speed"))
