"""Reading and writing results. Each result is committed as soon as it is added, so a
failure or Ctrl-C later in a run never loses finished trials."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import create_engine, insert, select
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError

from rigbench.errors import UsageError
from rigbench.spec import SCHEMA_VERSION, Result
from rigbench.store.schema import meta, metadata, runs, trial_samples, trials

_RAW_FIELDS = {"step_times_s", "tracker_samples"}


def default_db_url() -> str:
    """`RIGBENCH_DB` if set, else a SQLite file in the user's data directory."""
    if os.environ.get("RIGBENCH_DB"):
        return resolve_db_url(os.environ["RIGBENCH_DB"])
    path = Path(platformdirs.user_data_dir("rigbench")) / "rigbench.db"
    return f"sqlite:///{path}"


def resolve_db_url(text: str) -> str:
    """Accept an SQLAlchemy URL (`postgresql://...`, `sqlite:///x.db`) or a plain file path."""
    if "://" not in text:
        return f"sqlite:///{Path(text).expanduser().resolve()}"
    try:
        make_url(text)
    except ArgumentError:
        raise UsageError(f"--db {text!r} is not a database URL: use e.g. sqlite:///results.db") from None
    return text


class Store:
    """A results database. Creates its tables on first use and checks the schema version."""

    def __init__(self, url: str | None = None):
        self.url = resolve_db_url(url) if url else default_db_url()
        if self.url.startswith("sqlite:///"):
            Path(self.url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        try:
            self.engine: Engine = create_engine(self.url)
            metadata.create_all(self.engine)
            self._check_version()
        except OperationalError as exc:
            raise UsageError(f"cannot open the database {self.url}: {exc.orig}") from None
        except ModuleNotFoundError as exc:
            raise UsageError(f"the database driver for {self.url} is not installed ({exc.name})") from None
        except NoSuchModuleError:
            raise UsageError(f"--db {self.url!r}: unknown database kind; use sqlite:/// or postgresql://") from None

    def _check_version(self) -> None:
        with self.engine.begin() as conn:
            row = conn.execute(select(meta.c.value).where(meta.c.key == "schema_version")).first()
            if row is None:
                conn.execute(insert(meta).values(key="schema_version", value=str(SCHEMA_VERSION)))
            elif int(row.value) > SCHEMA_VERSION:
                raise UsageError(
                    f"the database {self.url} has schema version {row.value}, newer than this "
                    f"rigbench understands ({SCHEMA_VERSION}): upgrade rigbench"
                )

    def add_run(self, run_id: str, created_at: str, command: str, machine: dict[str, Any]) -> None:
        with self.engine.begin() as conn:
            conn.execute(insert(runs).values(id=run_id, created_at=created_at, command=command,
                                             machine_json=json.dumps(machine)))

    def add_result(self, result: Result) -> int:
        """Store a result with its raw samples; returns its id (also set on `result`)."""
        spec = result.spec
        body = result.model_dump_json(exclude=_RAW_FIELDS | {"id"})
        with self.engine.begin() as conn:
            new_id = conn.execute(insert(trials).values(
                run_id=result.run_id, created_at=result.created_at, workload=spec.workload,
                framework=spec.framework, device=spec.device, batch_size=spec.batch_size,
                precision=spec.precision, threads=result.threads, status=result.status,
                error=result.error, samples_per_s=result.metrics.samples_per_s,
                step_time_ms_median=result.metrics.step_time_ms_median,
                schema_version=result.schema_version, result_json=body,
            )).inserted_primary_key[0]
            conn.execute(insert(trial_samples).values(
                trial_id=new_id, step_times_json=json.dumps(result.step_times_s),
                tracker_json=json.dumps(result.tracker_samples),
            ))
        result.id = new_id
        return new_id

    def get(self, trial_id: int) -> Result | None:
        """One result with its raw samples, or None."""
        query = (select(trials.c.id, trials.c.result_json, trial_samples.c.step_times_json,
                        trial_samples.c.tracker_json)
                 .join(trial_samples, trial_samples.c.trial_id == trials.c.id, isouter=True)
                 .where(trials.c.id == trial_id))
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            return None
        data = json.loads(row.result_json)
        data["id"] = row.id
        data["step_times_s"] = json.loads(row.step_times_json or "[]")
        data["tracker_samples"] = json.loads(row.tracker_json or "[]")
        return Result.model_validate(data)

    def list(self, run_id: str | None = None, workload: str | None = None,
             status: str | None = None, limit: int | None = None) -> list[Result]:
        """Results without raw samples, oldest first (the newest `limit` when given)."""
        query = select(trials.c.id, trials.c.result_json).order_by(trials.c.id.desc())
        if run_id:
            query = query.where(trials.c.run_id == run_id)
        if workload:
            query = query.where(trials.c.workload == workload)
        if status:
            query = query.where(trials.c.status == status)
        if limit:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        out = []
        for row in reversed(rows):
            result = Result.model_validate_json(row.result_json)
            result.id = row.id
            out.append(result)
        return out

    def machine(self, run_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(runs.c.machine_json).where(runs.c.id == run_id)).first()
        return json.loads(row.machine_json) if row else None
