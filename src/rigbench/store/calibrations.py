"""Stored calibrations (`rigbench calibrate`): a device's measured ceilings, one row each.

Values are kept in SI base units (FLOP/s, B/s); the terminal shows TFLOP/s and GB/s.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import insert, select

from rigbench.errors import validation_line
from rigbench.spec import Result
from rigbench.store.db import Store
from rigbench.store.rows import column_text
from rigbench.store.schema import calibrations
from rigbench.store.this_machine import most_common_machine, run_machines
from rigbench.timestamps import not_a_time, parse_iso

log = logging.getLogger("rigbench.store")

#: measurement kind -> key of `latest_calibration`'s dict (bandwidths in bytes per second)
BANDWIDTH_KEYS: dict[str, str] = {
    "memory_bandwidth": "memory_bandwidth_bytes_s",
    "h2d_pageable": "h2d_pageable_bytes_s",
    "h2d_pinned": "h2d_pinned_bytes_s",
    "d2h_pageable": "d2h_pageable_bytes_s",
    "d2h_pinned": "d2h_pinned_bytes_s",
}


#: The unit each known kind's value is in (store/calibrations.py keeps SI base units).
KIND_UNITS = {"matmul": "FLOP/s", **dict.fromkeys(BANDWIDTH_KEYS, "B/s")}
#: A stored calibration row's fields, in the order a bundle writes them.
FIELDS = ("run_id", "created_at", "device", "device_name", "kind", "precision", "status", "value", "unit", "detail")

Key = tuple[str, str, str, str, str, str | None]
#: What makes two entries the same measurement (store/bundle_calibrations.py), in a record and a row alike.
KEY_FIELDS = ("run_id", "created_at", "device", "device_name", "kind", "precision")


def row_key(row: Any) -> Key:
    """The KEY_FIELDS of a record or a stored row."""
    return tuple(row[name] for name in KEY_FIELDS)


class CalibrationRecord(BaseModel):
    """One calibration measurement as a bundle carries it and a stored row is read back;
    lengths as the table's columns."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(min_length=1, max_length=36)
    created_at: str = Field(min_length=1)
    device: str = Field(min_length=1)
    device_name: str = Field(min_length=1)
    kind: str = Field(min_length=1, max_length=32)
    precision: str | None = Field(max_length=8)
    status: Literal["ok", "unsupported", "n/a", "failed"]
    value: float | None = Field(allow_inf_nan=False)
    unit: str = Field(min_length=1, max_length=16)
    detail: dict[str, Any]

    def key(self) -> Key:
        """What makes two entries the same measurement (KEY_FIELDS)."""
        return row_key(self.__dict__)

    def columns(self) -> dict[str, Any]:
        """The row as the table stores it: no NUL in a text column (PostgreSQL refuses it)."""
        text = {name: column_text(getattr(self, name)) for name in ("created_at", "device", "device_name", "kind", "unit")}
        return {"run_id": self.run_id, **text, "status": self.status, "value": self.value,
                "precision": None if self.precision is None else column_text(self.precision),
                "detail_json": json.dumps(self.detail)}


#: The values a measured ceiling can have, by unit. A bundle's peak of 1e-300 FLOP/s imported
#: (only 0 and below were refused) and made every calibrated MFU infinite, which no JSON holds.
#: From a million per second (slower than any CPU that could train a reference network) to a
#: thousand times today's largest single devices' (H200: 989 TFLOP/s dense bf16, 4.8 TB/s).
PLAUSIBLE = {"FLOP/s": (1e6, 1e18), "B/s": (1e6, 1e16)}


def calibration_problem(record: CalibrationRecord) -> str | None:
    """The first rule `record` breaks (its field named), or None: checked on a bundle's entries
    before import and on each stored row read. Its time must be one: the newest calibration is
    chosen by it (measured_at)."""
    if why := not_a_time(record.created_at):
        return f"created_at: {why}"
    if record.status == "ok" and (record.value is None or not record.value > 0):
        return f"value: must be a number more than 0 when status is 'ok', got {record.value}"
    low, high = PLAUSIBLE.get(record.unit, (0.0, float("inf")))
    if record.status == "ok" and record.value is not None and not low <= record.value <= high:
        return f"value: {record.value:g} {record.unit} is outside {low:g} to {high:g}, what any device measures"
    if record.status != "ok" and record.value is not None:
        return f"value: must be null when status is {record.status!r} (only an ok measurement has one)"
    unit = KIND_UNITS.get(record.kind)
    if unit is not None and record.unit != unit:
        return f"unit: a {record.kind} value is in {unit}, got {record.unit!r}"
    if record.kind == "matmul" and record.precision is None:
        return "precision: missing, which every matmul measurement has"
    return None


def add_calibration(store: Store, run_id: str, created_at: str, calibration: dict[str, Any]) -> list[int]:
    """Store every measurement of one device's calibration (the child's dict, see
    frameworks/driver/calibration.calibrate) in one transaction; returns the new row ids."""
    context = {k: calibration.get(k) for k in ("framework", "threads", "quick", "software", "others_cpu_pct_mean")}
    ids = []
    with store.transaction() as tx:
        for m in calibration["measurements"]:
            ids.append(tx.conn.execute(insert(calibrations).values(
                run_id=run_id, created_at=created_at, device=column_text(calibration["device"]),
                device_name=column_text(calibration["device_name"]), kind=m["kind"], precision=m.get("precision"),
                status=m["status"], value=m.get("value"), unit=m["unit"],
                detail_json=json.dumps({**m.get("detail", {}), **context}),
            )).inserted_primary_key[0])  # type: ignore[index]
    return ids


def list_calibrations(store: Store, device_name: str | None = None, run_id: str | None = None) -> list[dict[str, Any]]:
    """Stored measurements, oldest first, as dicts with the table's columns (`detail` parsed);
    a row that breaks calibration_problem's rules (edited by hand, or from before them) is
    skipped with one warning per call, as unreadable trials are (store/rows.py)."""
    query = select(calibrations).order_by(calibrations.c.id)
    if device_name is not None:
        query = query.where(calibrations.c.device_name == device_name)
    if run_id is not None:
        query = query.where(calibrations.c.run_id == run_id)
    with store.engine.connect() as conn:
        rows = conn.execute(query).mappings().all()
    out, skipped = [], []
    for row in rows:
        item = dict(row)
        try:
            item["detail"] = json.loads(item.pop("detail_json"))
            problem = calibration_problem(CalibrationRecord.model_validate({name: item[name] for name in FIELDS}))
        except ValidationError as exc:
            problem = validation_line(exc)
        except (ValueError, TypeError) as exc:  # detail_json's JSONDecodeError is a ValueError
            problem = f"detail_json: {exc}"
        if problem:
            skipped.append((row["id"], problem))
        else:
            out.append(item)
    if skipped:  # one bad row never breaks a command over the whole database
        more = f" and {len(skipped) - 1} more" if len(skipped) > 1 else ""
        warning = (f"skipped {len(skipped)} stored calibration row(s) in {store.url} that cannot be read: "
                   f"row {skipped[0][0]} ({skipped[0][1]}){more}")
        if warning not in _warned:  # a command reads the calibrations once per device or table
            _warned.add(warning)
            log.warning("%s", warning)
    return out


#: The skipped-rows warnings this process has given.
_warned: set[str] = set()


def measured_at(text: Any) -> datetime:
    """A row's `created_at` as a UTC time for ordering by measurement (an import can bring an
    older calibration in after a newer one); the earliest time where it cannot be read."""
    return parse_iso(str(text)) or datetime.min.replace(tzinfo=UTC)


def measured_by(detail: dict[str, Any]) -> str | None:
    """The framework that took a calibration measurement: `framework` in its detail (stored since
    calibrate records it), else read off the library versions it recorded; None where neither
    says (a bundle's hand-made row)."""
    named = detail.get("framework")
    if isinstance(named, str) and named:
        return named
    software = detail.get("software")
    if isinstance(software, dict):
        for name in ("tensorflow", "jax", "torch"):  # TensorFlow's and JAX's records name no torch
            if name in software:
                return name
    return None


def _figure(row: dict[str, Any]) -> str | None:
    """The calibration dict's key a row's value is (`matmul_flops:fp32`, a BANDWIDTH_KEYS value)."""
    if row["kind"] == "matmul":
        return f"matmul_flops:{row['precision']}"
    return BANDWIDTH_KEYS.get(row["kind"])


def latest_calibration(store: Store, device_name: str, machine: tuple[Any, ...] | None = None) -> dict[str, Any] | None:
    """The calibration of a device name, or None if it was never calibrated. `machine`
    (fingerprint.machine_key): only that machine's calibrations, since a name is not a device
    ("Intel(R) Xeon(R) Processor" names many, and an imported bundle brings other machines').

    Each figure is, per framework that measured it, that framework's newest successful
    measurement (by measurement time, not the order rows were stored in), and of those the
    highest: the best this machine reached. The newest whatever the framework made every
    calibrated MFU move with the last `calibrate --framework` (on the dev VM JAX measured an
    fp32 CPU peak of 0.104 TFLOP/s, TensorFlow 0.141); a framework that reaches less measures
    its own matmul library, which is what MFU is there to show. Calibrating only `--precision
    bf16` later keeps the earlier fp32 peak. Returns {"device", "device_name", "created_at" (of
    the newest row used), "run_ids", "matmul_flops": {precision: FLOP/s},
    "memory_bandwidth_bytes_s", "h2d_pageable_bytes_s", "h2d_pinned_bytes_s",
    "d2h_pageable_bytes_s", "d2h_pinned_bytes_s" (None where not measured), "measured_by":
    {figure: framework} and "measured_by_all": {figure: {framework: value}} (figure:
    `matmul_flops:fp32` or a bandwidth key), "unsupported": {precision: reason} for matmul
    precisions never measured here}.
    """
    rows = list_calibrations(store, device_name=device_name)
    if machine is not None:
        machines = run_machines(store, (row["run_id"] for row in rows))
        rows = [row for row in rows if machines[row["run_id"]] == machine]
    rows.sort(key=lambda row: (measured_at(row["created_at"]), row["id"]))
    if not rows:
        return None
    out: dict[str, Any] = {"device": rows[-1]["device"], "device_name": device_name,
                           "created_at": None, "run_ids": [], "matmul_flops": {},
                           **dict.fromkeys(BANDWIDTH_KEYS.values()), "unsupported": {},
                           "measured_by": {}, "measured_by_all": {}}
    newest: dict[tuple[str, str | None], dict[str, Any]] = {}
    for row in rows:  # oldest first: a framework's newer measurement replaces its older one
        figure = _figure(row)
        if row["status"] != "ok":
            if row["kind"] == "matmul":
                out["unsupported"][row["precision"]] = row["detail"].get("reason", row["status"])
            continue
        if figure is not None:
            newest[(figure, measured_by(row["detail"]))] = row
    best: dict[str, dict[str, Any]] = {}
    for (figure, framework), row in newest.items():
        out["measured_by_all"].setdefault(figure, {})[framework or "?"] = row["value"]
        if figure not in best or row["value"] > best[figure]["value"]:
            best[figure] = row
    for figure, row in best.items():
        out["measured_by"][figure] = measured_by(row["detail"])
        if row["kind"] == "matmul":
            out["matmul_flops"][row["precision"]] = row["value"]
        else:
            out[figure] = row["value"]
    for precision in out["matmul_flops"]:  # measured once: a later failure does not erase it
        out["unsupported"].pop(precision, None)
    used = sorted(best.values(), key=lambda row: (measured_at(row["created_at"]), row["id"]))
    if used:
        out["created_at"] = used[-1]["created_at"]
        out["device"] = used[-1]["device"]
        out["run_ids"] = list(dict.fromkeys(r["run_id"] for r in used))
    return out


def device_calibrations(store: Store, results: Sequence[Result]) -> dict[str, dict[str, Any]]:
    """device name -> its latest calibration on the machine that measured those of `results`
    (the one that measured most of them, where several machines share the name), for the
    devices of `results` that have one."""
    by_name: dict[str, list[Result]] = {}
    for r in results:
        if r.device_name:
            by_name.setdefault(r.device_name, []).append(r)
    found = {name: latest_calibration(store, name, most_common_machine(store, named))
             for name, named in by_name.items()}
    return {name: cal for name, cal in found.items() if cal is not None}
