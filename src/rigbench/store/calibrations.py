"""Stored calibrations (`rigbench calibrate`): a device's measured ceilings, one row each.

Values are kept in SI base units (FLOP/s, B/s); the terminal shows TFLOP/s and GB/s.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert, select

from rigbench.spec import Result
from rigbench.store.db import Store
from rigbench.store.rows import column_text
from rigbench.store.schema import calibrations
from rigbench.store.this_machine import most_common_machine, run_machines
from rigbench.timestamps import parse_iso

#: measurement kind -> key of `latest_calibration`'s dict (bandwidths in bytes per second)
BANDWIDTH_KEYS: dict[str, str] = {
    "memory_bandwidth": "memory_bandwidth_bytes_s",
    "h2d_pageable": "h2d_pageable_bytes_s",
    "h2d_pinned": "h2d_pinned_bytes_s",
    "d2h_pageable": "d2h_pageable_bytes_s",
    "d2h_pinned": "d2h_pinned_bytes_s",
}


def add_calibration(store: Store, run_id: str, created_at: str, calibration: dict[str, Any]) -> list[int]:
    """Store every measurement of one device's calibration (the child's dict, see
    frameworks/driver/calibration.calibrate) in one transaction; returns the new row ids."""
    context = {k: calibration.get(k) for k in ("threads", "quick", "software", "others_cpu_pct_mean")}
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
    """Stored measurements, oldest first, as dicts with the table's columns (`detail` parsed)."""
    query = select(calibrations).order_by(calibrations.c.id)
    if device_name is not None:
        query = query.where(calibrations.c.device_name == device_name)
    if run_id is not None:
        query = query.where(calibrations.c.run_id == run_id)
    with store.engine.connect() as conn:
        rows = conn.execute(query).mappings().all()
    out = []
    for row in rows:
        item = dict(row)
        item["detail"] = json.loads(item.pop("detail_json"))
        out.append(item)
    return out


def measured_at(text: Any) -> datetime:
    """A row's `created_at` as a UTC time for ordering by measurement (an import can bring an
    older calibration in after a newer one); the earliest time where it cannot be read."""
    return parse_iso(str(text)) or datetime.min.replace(tzinfo=UTC)


def latest_calibration(store: Store, device_name: str, machine: tuple[Any, ...] | None = None) -> dict[str, Any] | None:
    """The newest calibration of a device name, or None if it was never calibrated. `machine`
    (fingerprint.machine_key): only that machine's calibrations, since a name is not a device
    ("Intel(R) Xeon(R) Processor" names many, and an imported bundle brings other machines').
    Newest is by measurement time, not by the order the rows were stored in.

    Each figure is the newest successful measurement of that figure, so calibrating only
    `--precision bf16` later keeps the earlier fp32 peak. Returns {"device", "device_name",
    "created_at" (of the newest row used), "run_ids", "matmul_flops": {precision: FLOP/s},
    "memory_bandwidth_bytes_s", "h2d_pageable_bytes_s", "h2d_pinned_bytes_s",
    "d2h_pageable_bytes_s", "d2h_pinned_bytes_s" (None where not measured),
    "unsupported": {precision: reason} for matmul precisions never measured here}.
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
                           **dict.fromkeys(BANDWIDTH_KEYS.values()), "unsupported": {}}
    used = []
    for row in rows:  # oldest first: a newer measurement overwrites an older one
        if row["status"] != "ok":
            if row["kind"] == "matmul":
                out["unsupported"][row["precision"]] = row["detail"].get("reason", row["status"])
            continue
        if row["kind"] == "matmul":
            out["matmul_flops"][row["precision"]] = row["value"]
            out["unsupported"].pop(row["precision"], None)
        elif row["kind"] in BANDWIDTH_KEYS:
            out[BANDWIDTH_KEYS[row["kind"]]] = row["value"]
        else:
            continue
        used.append(row)
    for precision in out["matmul_flops"]:  # measured once: a later failure does not erase it
        out["unsupported"].pop(precision, None)
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
