"""Results as JSON or CSV (flat rows, the same fields as `rigbench run --json`)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from rigbench.spec import Result


def to_json(results: Sequence[Result]) -> str:
    return json.dumps([r.row() for r in results], indent=2)


def to_csv(results: Sequence[Result]) -> str:
    """One line per result; nested values (CI pairs, option and version maps) as JSON text."""
    rows = [r.row() for r in results]
    out = io.StringIO()
    if not rows:
        return ""
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in row.items()})
    return out.getvalue()
