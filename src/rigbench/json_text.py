"""JSON as other programs read it: strict, with no Infinity or NaN.

Python's json writes a float inf as `Infinity`, which no strict parser accepts (a browser's
JSON.parse threw on the report's chart data, and `roofline --json` printed `"mfu": Infinity`
after an imported calibration of 1e-300 FLOP/s). Every figure rigbench stores is finite
(result_rules), but a ratio of two stored figures can still overflow: such a number goes out
as null, what JSON has for "no figure".
"""

from __future__ import annotations

import json
import math
from typing import Any


def finite_or_none(value: Any) -> Any:
    """`value` with every inf or NaN float inside it (dicts, lists, tuples) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(item) for item in value]
    return value


def strict_json(value: Any, **options: Any) -> str:
    """json.dumps of `value` (same options) with non-finite numbers as null."""
    return json.dumps(finite_or_none(value), allow_nan=False, **options)
