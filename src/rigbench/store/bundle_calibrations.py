"""A device's measured ceilings (`rigbench calibrate`, store/calibrations.py) in a results
bundle (store/bundle.py): without them, results measured on a lent GPU machine and imported
elsewhere lose their "MFU against the measured peak" (`rigbench roofline`, `compare
--frameworks`), since the peak is only in the database that ran the calibration.

    "calibrations": [{"run_id", "created_at", "device", "device_name", "kind", "precision",
                      "status", "value", "unit", "detail"}]

One entry per row of the `calibrations` table, without its id (each database gives its own);
`detail` is the row's detail_json parsed. A calibration is a run of its own (a `rigbench
calibrate` run holds no trials), listed in the bundle's `runs` like a run of results.

Format version: adding this key does not bump the bundle's `schema_version` (which is
rigbench.spec.SCHEMA_VERSION, the version of a stored Result: bumping it would say every result
changed meaning, and an older rigbench would then refuse even the results). The key is
optional and written only when there are calibrations, so a bundle without any is exactly
what an older rigbench reads. An older rigbench given one with calibrations refuses it whole,
on one line naming the key (`calibrations: Extra inputs are not permitted`, exit 2, nothing
imported: its envelope forbids unknown keys), rather than importing the results and silently
dropping the peaks; a bundle without the key (every one written before) imports as before.

Each entry is checked before anything is written, like a result: its types (strict), text
bound as the table's columns are (kind 32, precision 8, unit 16 characters; names, times and
the detail's strings clipped to textlimits.NAME_CHARS, and said), a status the calibration
writes, a finite value that is more than 0 exactly when the status is `ok`, the unit of a
known kind (FLOP/s for matmul, B/s for a bandwidth: the value is read in that unit), a
precision on every matmul, and a run among the bundle's runs. The first problem refuses the
whole bundle. A kind or precision this rigbench does not know is stored and ignored by its
readers, as a newer calibration's would be.

Re-import follows the results' rule: an entry is the same measurement as a stored one when its
run, creation time, device, device name, kind and precision are; with the same content it is
skipped, with other content the import is refused (two versions of one peak would make the
calibrated MFU depend on which one happened to be newer).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from sqlalchemy import insert, select
from sqlalchemy.engine import Connection

from rigbench.errors import validation_line
from rigbench.store.calibrations import FIELDS, CalibrationRecord, Key, calibration_problem, list_calibrations, row_key
from rigbench.store.db import Store
from rigbench.store.schema import calibrations
from rigbench.textlimits import NAME_CHARS, clip, clip_value


def exported_calibrations(store: Store, run_ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Every stored calibration row of `run_ids` (default: all), oldest first, as bundle entries."""
    if run_ids is None:
        rows = list_calibrations(store)
    else:
        rows = [row for run_id in dict.fromkeys(run_ids) for row in list_calibrations(store, run_id=run_id)]
    return [{name: row[name] for name in FIELDS} for row in rows]


def check_calibrations(entries: Any, run_ids: set[str]) -> tuple[list[CalibrationRecord], list[str]] | str:
    """A bundle's `calibrations` (absent: None) as records clipped to the stored limits, with a
    note per clipped entry; or, for the first entry that is wrong, why (its path named)."""
    if entries is None:
        return [], []
    if not isinstance(entries, list):
        return f"calibrations: expected a list of calibration rows, got {type(entries).__name__}"
    records: list[CalibrationRecord] = []
    notes: list[str] = []
    seen: dict[Key, int] = {}
    for i, raw in enumerate(entries):
        where = f"calibrations[{i}]"
        if not isinstance(raw, dict):
            return f"{where}: expected an object, got {type(raw).__name__}"
        try:
            record = CalibrationRecord.model_validate_json(json.dumps(raw), strict=True)
        except ValidationError as exc:
            return validation_line(exc, where)
        problem = calibration_problem(record)
        if problem:
            return f"{where}.{problem}"
        if record.run_id not in run_ids:
            return f"{where}.run_id: run {record.run_id!r} is not in the bundle's runs"
        clipped = record.model_copy(update={
            "created_at": clip(record.created_at, NAME_CHARS), "device": clip(record.device, NAME_CHARS),
            "device_name": clip(record.device_name, NAME_CHARS), "detail": clip_value(record.detail, NAME_CHARS)})
        if clipped != record:
            notes.append(f"{where}: text over its limit stored clipped")
        if clipped.key() in seen:
            return (f"{where}: the same measurement (run, time, device, kind and precision) as "
                    f"calibrations[{seen[clipped.key()]}]")
        seen[clipped.key()] = i
        records.append(clipped)
    return records, notes


def new_calibrations(conn: Connection, records: Sequence[CalibrationRecord],
                     present_runs: Sequence[str]) -> tuple[list[CalibrationRecord], str | None]:
    """The records not stored yet (only a run already stored can hold one) and, when one is
    stored with other content, why the import is refused; reads only."""
    stored: dict[Key, dict[str, Any]] = {}
    if present_runs:
        query = select(calibrations).where(calibrations.c.run_id.in_(list(present_runs)))
        for row in conn.execute(query).mappings():
            stored[row_key(row)] = dict(row)
    new, refused = [], []
    for i, record in enumerate(records):
        columns = record.columns()
        key = row_key(columns)
        if key not in stored:
            new.append(record)
            continue
        difference = _difference(stored[key], columns)
        if difference:
            refused.append(f"calibrations[{i}]: {record.kind} {record.precision or ''} of run {record.run_id} "
                           f"(same time and device) is stored with other content ({difference})")
    if refused:
        more = f"; and {len(refused) - 1} more" if len(refused) > 1 else ""
        return new, f"{len(refused)} of {len(records)} calibrations refused, nothing imported: {refused[0]}{more}"
    return new, None


def _difference(stored: dict[str, Any], given: dict[str, Any]) -> str | None:
    """The first stored field that `given` holds otherwise, with both values, or None. The
    detail compares as JSON text, so a NaN in it equals itself."""
    for name in ("status", "value", "unit", "detail_json"):
        a, b = stored[name], given[name]
        if name == "detail_json":
            a, b = (_canonical(v) for v in (a, b))
        if a != b:
            return f"{name.removesuffix('_json')}: {clip(str(a), 40)} stored, {clip(str(b), 40)} in the bundle"
    return None


def _canonical(text: str) -> str:
    """A detail's JSON text with its keys sorted; unreadable text as it is (then it differs)."""
    try:
        return json.dumps(json.loads(text), sort_keys=True)
    except ValueError:
        return text


def insert_calibrations(conn: Connection, records: Sequence[CalibrationRecord]) -> None:
    """Store `records` on `conn` (inside the import's transaction; their runs stored first)."""
    for record in records:
        conn.execute(insert(calibrations).values(**record.columns()))
