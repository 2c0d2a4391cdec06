"""Stored calibrations (`rigbench calibrate`): a device's measured ceilings, one row each.

Values are kept in SI base units (FLOP/s, B/s); the terminal shows TFLOP/s and GB/s.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert, select

from rigbench.spec import Result
from rigbench.store.db import Store
from rigbench.store.rows import column_text
from rigbench.store.schema import calibrations

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


def latest_calibration(store: Store, device_name: str) -> dict[str, Any] | None:
    """The newest calibration of a device name, or None if it was never calibrated.

    Each figure is the newest successful measurement of that figure, so calibrating only
    `--precision bf16` later keeps the earlier fp32 peak. Returns {"device", "device_name",
    "created_at" (of the newest row used), "run_ids", "matmul_flops": {precision: FLOP/s},
    "memory_bandwidth_bytes_s", "h2d_pageable_bytes_s", "h2d_pinned_bytes_s",
    "d2h_pageable_bytes_s", "d2h_pinned_bytes_s" (None where not measured),
    "unsupported": {precision: reason} for matmul precisions never measured here}.
    """
    rows = list_calibrations(store, device_name=device_name)
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
        out["created_at"] = max(r["created_at"] for r in used)
        out["device"] = max(used, key=lambda r: r["id"])["device"]
        out["run_ids"] = list(dict.fromkeys(r["run_id"] for r in used))
    return out


def device_calibrations(store: Store, results: Sequence[Result]) -> dict[str, dict[str, Any]]:
    """device name -> its latest calibration, for the devices of `results` that have one."""
    names = dict.fromkeys(r.device_name for r in results if r.device_name)
    found = {name: latest_calibration(store, name) for name in names}
    return {name: cal for name, cal in found.items() if cal is not None}
