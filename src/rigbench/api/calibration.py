"""Device ceilings: `calibrate` (experiments/calibrate.py) measures them, `roofline` places
stored trials under them (analysis/roofline.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigbench.analysis.roofline import result_roofline
from rigbench.api.results import select_results
from rigbench.spec import Result
from rigbench.store import Store
from rigbench.store.calibrations import device_calibrations


def roofline(db: str | None = None, run_ids: Sequence[str] = (),
             where: Sequence[str] = ()) -> list[tuple[Result, Any]]:
    """(result, TrialRoofline) for every successful stored trial of `run_ids` matching `where`."""
    store = Store(db, create=False)
    results = [r for r in select_results(store, run_ids, where) if r.status == "ok"]
    calibrations = device_calibrations(store, results)
    return [(r, result_roofline(r, calibrations.get(r.device_name or ""))) for r in results]
