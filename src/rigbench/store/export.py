"""Results as JSON or CSV (flat rows, the same fields as `rigbench run --json`)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from rigbench.spec import Result


def to_json(results: Sequence[Result]) -> str:
    # json.dump writes each piece as it is made (into the one string returned); json.dumps with
    # an indent gathers millions of them first: 870 MB to export 20,000 results (71 MB of text)
    out = io.StringIO()
    json.dump([r.row() for r in results], out, indent=2)
    return out.getvalue()


#: The first characters that make a spreadsheet read a cell as a formula (or, tab and carriage
#: return, that some strip before doing so): OWASP's list for CSV injection.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """A CSV cell: nested values (CI pairs, option and version maps) as JSON text, and text that a
    spreadsheet would run as a formula (an imported device name `=HYPERLINK(...)`, an error
    `@SUM(...)`) behind a single quote, OWASP's remedy, so it shows as the text it is. Only
    text: a number, negative ones too, is written as the number it is."""
    text = json.dumps(value) if isinstance(value, (list, dict)) else value
    if isinstance(text, str) and text.startswith(_FORMULA_START):
        return "'" + text
    return text


def to_csv(results: Sequence[Result]) -> str:
    """A header and one line per result, each cell as `_cell` writes it, each line ending in a
    line feed."""
    rows = [r.row() for r in results]
    if not rows:
        return ""
    # The writer quotes a cell holding a character of its line terminator, so it is given
    # "\r\n": with "\n" alone a stored "\r" went out bare, and a spreadsheet began a new row
    # there, whose first cell (`x\r=HYPERLINK(...)`) no quote prefix had covered.
    line = io.StringIO()
    writer = csv.DictWriter(line, fieldnames=list(rows[0]), lineterminator="\r\n")
    out = io.StringIO()
    for cells in [None, *rows]:
        line.seek(0)
        line.truncate()
        if cells is None:
            writer.writeheader()
        else:
            writer.writerow({k: _cell(v) for k, v in cells.items()})
        out.write(line.getvalue().removesuffix("\r\n") + "\n")
    return out.getvalue()
