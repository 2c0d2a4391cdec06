"""Rows in and out, on one connection: what Store and its transactions share."""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Select, func, insert, select
from sqlalchemy.engine import Connection

from rigbench.spec import Result
from rigbench.store.engine import mask_command
from rigbench.store.lenient import read_result
from rigbench.store.machines import read_machine
from rigbench.store.schema import calibrations, runs, trial_samples, trials

log = logging.getLogger("rigbench.store")

_RAW_FIELDS = {"step_times_s", "tracker_samples"}
#: Store.list's filters that are plain column equalities
FILTER_COLUMNS = ("run_id", "workload", "status", "kind", "framework", "device", "precision",
                  "batch_size", "world_size")


def trial_key(result: Result) -> tuple[str, str, str]:
    """What makes two results the same trial: its run, creation time and whole spec. A bundle's
    re-import compares the rest (store/bundle.py): the same content is skipped, other content
    refused, so a trial is never stored twice in two versions."""
    return (result.run_id, result.created_at, result.spec.canonical_json())


def column_text(text: str) -> str:
    """`text` as a text column can hold it on every database: PostgreSQL refuses the NUL
    character, which SQLite stores (a crash's output may hold one). Where a column copies a
    Result's field, result_json keeps the exact text (JSON escapes NUL as \\u0000)."""
    return text.replace("\x00", "\ufffd")


def stored_command(command: str) -> str:
    """A run's command line as stored and shown: `rigbench run --db postgresql://u:pw@h/db`
    must not keep the password, whatever it holds (engine.mask_command: argument by argument;
    masked again on reading, for rows stored before this)."""
    return column_text(mask_command(command))


def insert_run(conn: Connection, run_id: str, created_at: str, command: str, machine: dict[str, Any]) -> None:
    conn.execute(insert(runs).values(id=run_id, created_at=column_text(created_at), command=stored_command(command),
                                     machine_json=json.dumps(machine)))


def insert_result(conn: Connection, result: Result) -> int:
    """Store a result with its raw samples; returns its id (also set on `result`)."""
    inserted = conn.execute(insert(trials).values(**_trial_row(result)))
    new_id = int(inserted.inserted_primary_key[0])  # type: ignore[index]
    conn.execute(insert(trial_samples).values(**_samples_row(new_id, result)))
    result.id = new_id
    return new_id


def insert_results(conn: Connection, results: Sequence[Result]) -> list[int]:
    """insert_result for each of `results`, in one statement per table (executemany, the new
    ids read back in order): a bundle's import stores thousands, and SQLAlchemy's work for a
    statement a row was a tenth of it. Row by row where the database cannot say the ids in
    order (SQLite before 3.35 has no RETURNING)."""
    if not conn.dialect.insert_executemany_returning_sort_by_parameter_order:
        return [insert_result(conn, r) for r in results]
    if not results:
        return []
    added = conn.execute(insert(trials).returning(trials.c.id, sort_by_parameter_order=True),
                         [_trial_row(r) for r in results])
    ids = [int(i) for i in added.scalars()]
    conn.execute(insert(trial_samples), [_samples_row(i, r) for i, r in zip(ids, results, strict=True)])
    for new_id, result in zip(ids, results, strict=True):
        result.id = new_id
    return ids


def _trial_row(result: Result) -> dict[str, Any]:
    spec = result.spec
    return dict(
        run_id=result.run_id, created_at=column_text(result.created_at), workload=column_text(spec.workload),
        kind=spec.kind, workload_options=json.dumps(spec.workload_options, sort_keys=True, separators=(",", ":")),
        world_size=spec.world_size,
        framework=column_text(spec.framework), device=column_text(spec.device), batch_size=spec.batch_size,
        precision=spec.precision, threads=result.threads, status=result.status,
        error=None if result.error is None else column_text(result.error),
        samples_per_s=result.metrics.samples_per_s,
        step_time_ms_median=result.metrics.step_time_ms_median,
        schema_version=result.schema_version,
        result_json=_result_json(result),
    )


def _samples_row(trial_id: int, result: Result) -> dict[str, Any]:
    step_times_json, tracker_json = _samples_json(result)
    return dict(trial_id=trial_id, step_times_json=step_times_json, tracker_json=tracker_json)


def _result_json(result: Result) -> str:
    return result.model_dump_json(exclude=_RAW_FIELDS | {"id"})


def _samples_json(result: Result) -> tuple[str, str]:
    return json.dumps(result.step_times_s), json.dumps(result.tracker_samples)


def text_digest(result: Result) -> bytes | None:
    """A digest of the JSON texts storing `result` writes (its result_json and raw samples'
    columns): stored_digests' digest of a row that holds them byte for byte, which then reads back
    as `result`. None where that does not hold: pydantic cannot write it (a lone surrogate, which
    only a Result built by hand holds: nor can storing it), or a step time is inf or NaN (stored,
    the row reads back as unreadable: lenient.read_result)."""
    if not all(map(math.isfinite, result.step_times_s)):
        return None
    try:
        return _digest(_result_json(result), *_samples_json(result))
    except ValueError:
        return None


def _digest(*texts: str) -> bytes:
    digest = hashlib.sha256()
    for text in texts:  # each after its length: no two lists of texts give the same bytes
        encoded = text.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "little") + encoded)
    return digest.digest()


def stored_digests(conn: Connection, run_ids: Sequence[str]) -> dict[int, bytes]:
    """Trial id -> text_digest's digest of the texts its row holds, for the results of `run_ids`
    with raw samples, read STREAM_CHUNK rows at a time: texts only, none decoded (a bundle's
    re-import finds its copies by them, store/bundle.py)."""
    query = (select(trials.c.id, trials.c.result_json, trial_samples.c.step_times_json, trial_samples.c.tracker_json)
             .join(trial_samples, trial_samples.c.trial_id == trials.c.id))
    found: dict[int, bytes] = {}
    for run_id in run_ids:
        after = 0
        while page := conn.execute(query.where(trials.c.run_id == run_id, trials.c.id > after)
                                   .order_by(trials.c.id).limit(STREAM_CHUNK)).all():
            after = page[-1].id
            found.update((r.id, _digest(r.result_json, r.step_times_json, r.tracker_json)) for r in page)
    return found


#: Values in one IN list at most: SQLite bounds a statement's variables (999 before 3.32).
IN_LIST_MAX = 500


def _in_lists(column: Any, values: Sequence[Any]) -> Iterator[Any]:
    """`column IN (...)` over `values`, IN_LIST_MAX values a clause: one query per clause."""
    for start in range(0, len(values), IN_LIST_MAX):
        yield column.in_(values[start:start + IN_LIST_MAX])


def stored_keys(conn: Connection, run_ids: Sequence[str]) -> dict[tuple[str, str], list[int]]:
    """(run id, created_at) as the key columns hold them -> the ids of the results of `run_ids`
    stored with them, oldest first: the only rows that can be a result's trial (trial_key; its
    created_at through column_text), found without decoding any (a bundle's re-import)."""
    found: dict[tuple[str, str], list[int]] = {}
    query = select(trials.c.id, trials.c.run_id, trials.c.created_at).order_by(trials.c.id)
    for chosen in _in_lists(trials.c.run_id, run_ids):
        for row in conn.execute(query.where(chosen)):
            found.setdefault((row.run_id, row.created_at), []).append(row.id)
    return found


def read_results(conn: Connection, trial_ids: Sequence[int]) -> tuple[list[Result], list[tuple[int, str]]]:
    """The results of `trial_ids` without raw samples, as stream_results reads them, by id; and
    the id and why of each row that cannot be read, unsaid (the caller says it: warn_unreadable)."""
    found: list[Any] = []
    for chosen in _in_lists(trials.c.id, list(dict.fromkeys(trial_ids))):
        found += conn.execute(select(trials.c.id, trials.c.result_json).where(chosen))
    skipped: list[tuple[int, str]] = []
    return list(_decoded(sorted(found, key=lambda row: row.id), False, skipped)), skipped


def _decode(row: Any, raw: bool) -> Result:
    """One stored row as a Result (leniently); ValueError if it cannot be read."""
    data = json.loads(row.result_json)
    if not isinstance(data, dict):
        raise TypeError("result_json is not an object")
    data["id"] = row.id
    if raw:
        try:
            data["step_times_s"] = json.loads(row.step_times_json or "[]")
            data["tracker_samples"] = json.loads(row.tracker_json or "[]")
        except ValueError as exc:
            raise ValueError(f"its raw samples: {exc}") from None
    return read_result(data)


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return str(exc)


def _with_samples() -> Select:
    """Trials' rows with their raw samples (a trial without them still comes, its samples None)."""
    return (select(trials.c.id, trials.c.result_json, trial_samples.c.step_times_json, trial_samples.c.tracker_json)
            .join(trial_samples, trial_samples.c.trial_id == trials.c.id, isouter=True))


def get_result(conn: Connection, trial_id: int) -> Result | None:
    """One result with its raw samples, or None; ValueError if the row cannot be read."""
    row = conn.execute(_with_samples().where(trials.c.id == trial_id)).first()
    if row is None:
        return None
    try:
        return _decode(row, raw=True)
    except (ValueError, TypeError, ValidationError) as exc:
        raise ValueError(f"trial {trial_id} cannot be read ({_why(exc)})") from None


def list_results(conn: Connection, where: dict[str, Any], limit: int | None, url: str) -> list[Result]:
    """Results without raw samples, oldest first (the newest `limit` when given), filtered by
    column equality (`where`: FILTER_COLUMNS -> value). A row that cannot be read is skipped
    with one warning per call: one bad row never breaks a command over the whole database."""
    query = select(trials.c.id, trials.c.result_json).where(*_equal(where)).order_by(trials.c.id.desc())
    if limit:
        query = query.limit(limit)
    return _readable(reversed(conn.execute(query).all()), False, url)


def results_of_runs(conn: Connection, run_ids: Sequence[str], url: str) -> list[Result]:
    """The results of the runs `run_ids` (any number of them) without raw samples, oldest first,
    as list_results lists them: one warning for all the rows that cannot be read."""
    found: list[Any] = []
    for chosen in _in_lists(trials.c.run_id, list(dict.fromkeys(run_ids))):
        found += conn.execute(select(trials.c.id, trials.c.result_json).where(chosen)).all()
    return _readable(sorted(found, key=lambda row: row.id), False, url)


def count_results(conn: Connection, where: dict[str, Any]) -> int:
    """How many stored results `where` (as list_results) matches, readable or not."""
    return int(conn.execute(select(func.count()).select_from(trials).where(*_equal(where))).scalar_one())


def _equal(where: dict[str, Any]) -> list[Any]:
    """The conditions of `where` (trials column -> value, or a frozenset: any of its values)
    on the trials table."""
    return [trials.c[name].in_(sorted(value)) if isinstance(value, frozenset) else trials.c[name] == value
            for name, value in where.items()]


def list_runs(conn: Connection, limit: int | None, url: str) -> list[dict[str, Any]]:
    """Every stored run (the newest `limit` when given), oldest first: its id, when, the command
    line that made it (masked, as stored), its machine fingerprint, and how many trials and
    `rigbench calibrate` measurements it holds."""
    def counts(table: Any) -> Any:
        return select(table.c.run_id, func.count().label("n")).group_by(table.c.run_id).subquery()

    held, measured = counts(trials), counts(calibrations)
    query = (select(runs.c.id, runs.c.created_at, runs.c.command, runs.c.machine_json,
                    func.coalesce(held.c.n, 0).label("trials"), func.coalesce(measured.c.n, 0).label("calibrations"))
             .select_from(runs.outerjoin(held, held.c.run_id == runs.c.id)
                          .outerjoin(measured, measured.c.run_id == runs.c.id))
             .order_by(runs.c.created_at.desc(), runs.c.id.desc()))
    if limit:
        query = query.limit(limit)
    return [{"id": r.id, "created_at": r.created_at, "command": stored_command(r.command),
             "machine": read_machine(r.machine_json, r.id, url), "trials": int(r.trials),
             "calibrations": int(r.calibrations)} for r in reversed(conn.execute(query).all())]


def count_runs(conn: Connection) -> int:
    return int(conn.execute(select(func.count()).select_from(runs)).scalar_one())


def full_results(conn: Connection, trial_ids: Sequence[int], url: str) -> list[Result]:
    """The results of `trial_ids` with their raw samples, in that order; a row that cannot be
    read (its result or its raw samples) is skipped with one warning per call, as in
    list_results, and a missing one left out."""
    query = _with_samples()
    found: dict[int, Any] = {}
    ids = list(dict.fromkeys(trial_ids))
    for chosen in _in_lists(trials.c.id, ids):
        found.update((row.id, row) for row in conn.execute(query.where(chosen)))
    return _readable((found[i] for i in ids if i in found), True, url)


#: Rows a streamed read (stream_results) decodes at a time: its memory, whatever the database holds.
STREAM_CHUNK = 500


def stream_results(conn: Connection, where: dict[str, Any], raw: bool, url: str,
                   chunk: int | None = None) -> Iterator[Result]:
    """list_results' results (with their raw samples if `raw`), oldest first, read `chunk` rows
    (default STREAM_CHUNK) at a time by id, so a command over a fleet's database holds a page of
    decoded rows, not all of them (20,000 results: 630 MB). Rows stored once it has begun are
    left out, as one list_results call would. Unreadable rows: skipped as list_results skips
    them, with its one warning once every row has been read."""
    query = _with_samples() if raw else select(trials.c.id, trials.c.result_json)
    last = conn.execute(select(func.max(trials.c.id))).scalar()
    after = 0
    skipped: list[tuple[int, str]] = []
    while last is not None and after < last:
        page = conn.execute(query.where(*_equal(where), trials.c.id > after, trials.c.id <= last)
                            .order_by(trials.c.id).limit(chunk or STREAM_CHUNK)).all()
        if not page:
            break
        after = page[-1].id
        yield from _decoded(page, raw, skipped)
    warn_unreadable(skipped, url)


def _decoded(rows: Iterable[Any], raw: bool, skipped: list[tuple[int, str]]) -> Iterator[Result]:
    """Each row as a Result; one that cannot be read goes to `skipped` (its id and why)."""
    for row in rows:
        try:
            yield _decode(row, raw=raw)
        except (ValueError, TypeError, ValidationError) as exc:
            skipped.append((row.id, _why(exc)))


def _readable(rows: Iterable[Any], raw: bool, url: str) -> list[Result]:
    """Each row as a Result, skipping those that cannot be read, with one warning naming the
    first and counting the rest: one bad row never breaks a command over the whole database."""
    skipped: list[tuple[int, str]] = []
    out = list(_decoded(rows, raw, skipped))
    warn_unreadable(skipped, url)
    return out


def warn_unreadable(skipped: list[tuple[int, str]], url: str) -> None:
    if skipped:
        first_id, why = skipped[0]
        more = f" and {len(skipped) - 1} more" if len(skipped) > 1 else ""
        log.warning("skipped %d stored result(s) in %s that cannot be read: trial %s (%s)%s",
                    len(skipped), url, first_id, why, more)


def run_machines(conn: Connection, run_ids: Sequence[str], url: str) -> dict[str, dict[str, Any]]:
    """run id -> machine fingerprint, for the runs of `run_ids` that are stored; one that
    cannot be read is `{}` or keeps its readable fields, with a warning (machines.read_machine)."""
    rows = conn.execute(select(runs.c.id, runs.c.machine_json).where(runs.c.id.in_(list(run_ids)))).all()
    return {r.id: read_machine(r.machine_json, r.id, url) for r in rows}


def run_commands(conn: Connection, run_ids: Sequence[str]) -> dict[str, str]:
    """run id -> the command line that made it, for the runs of `run_ids` that are stored."""
    rows = conn.execute(select(runs.c.id, runs.c.command).where(runs.c.id.in_(list(run_ids)))).all()
    return {r.id: stored_command(r.command) for r in rows}
