"""Table definitions at the newest migration (store/migrations/versions/). A change here is
made by a new migration too: the tables of existing databases only change through one.
Bump rigbench.spec.SCHEMA_VERSION when a stored Result changes meaning.

Queryable columns are real columns; the full spec, metrics and software versions are kept
as JSON so that a Result round-trips exactly; raw samples (every step time, every tracker
sample) live in their own table so listing results does not load them.
"""

from sqlalchemy import Column, Float, ForeignKey, Integer, MetaData, String, Table, Text

metadata = MetaData()

meta = Table(
    "meta", metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

runs = Table(
    "runs", metadata,
    Column("id", String(36), primary_key=True),
    Column("created_at", String(), nullable=False),
    Column("command", Text, nullable=False),
    Column("machine_json", Text, nullable=False),  # rigbench.fingerprint.machine_fingerprint()
)

trials = Table(
    "trials", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(36), ForeignKey("runs.id"), nullable=False, index=True),
    # names and times have no declared length (migration 0004): rigbench.textlimits bounds them
    Column("created_at", String(), nullable=False),
    Column("workload", String(), nullable=False, index=True),
    # kind (speed, probe, train, lr_find), workload options (canonical JSON) and world size are
    # columns so filters run in SQL
    Column("kind", String(16), nullable=False, index=True, server_default="speed"),
    Column("workload_options", Text, nullable=False, server_default="{}"),
    Column("world_size", Integer, nullable=False, server_default="1"),
    Column("framework", String(), nullable=False),
    Column("device", String(), nullable=False),
    Column("batch_size", Integer, nullable=False),
    Column("precision", String(8), nullable=False),
    Column("threads", Integer),
    Column("status", String(16), nullable=False, index=True),
    Column("error", Text),
    Column("samples_per_s", Float),
    Column("step_time_ms_median", Float),
    Column("schema_version", Integer, nullable=False),
    Column("result_json", Text, nullable=False),  # Result without the raw samples
)

trial_samples = Table(
    "trial_samples", metadata,
    Column("trial_id", Integer, ForeignKey("trials.id"), primary_key=True),
    Column("step_times_json", Text, nullable=False),
    Column("tracker_json", Text, nullable=False),
)

# `rigbench calibrate`: one row per measured ceiling of a device (store/calibrations.py).
calibrations = Table(
    "calibrations", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(36), ForeignKey("runs.id"), nullable=False, index=True),
    Column("created_at", String(), nullable=False),
    Column("device", String(), nullable=False),  # the id it ran on: cpu, cuda:0, ...
    Column("device_name", String(), nullable=False, index=True),
    Column("kind", String(32), nullable=False),  # matmul, memory_bandwidth, h2d_pinned, ...
    Column("precision", String(8)),  # matmul only
    Column("status", String(16), nullable=False),  # ok, unsupported, n/a, failed
    Column("value", Float),  # FLOP/s or B/s (SI base units); NULL unless ok
    Column("unit", String(16), nullable=False),
    Column("detail_json", Text, nullable=False),  # sizes, repeats, times, or why not measured
)
