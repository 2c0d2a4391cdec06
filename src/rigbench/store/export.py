"""Results as JSON or CSV (flat rows, the same fields as `rigbench run --json`), written as
they are read: an export of a fleet's database holds one page of results (Store.stream), not
all of them."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from rigbench.spec import Result


def json_pieces(items: Iterable[Any], indent: int, level: int = 0) -> Iterator[str]:
    """The text of `json.dumps(list(items), indent=indent)`, nested `level` deep in an enclosing
    document (as json.dumps indents it), one item at a time. JSON text holds no raw line feed
    inside a string, so each of an item's lines is indented by a plain replace."""
    pad = "\n" + " " * indent * (level + 1)
    first = True
    for item in items:
        yield ("[" if first else ",") + pad + json.dumps(item, indent=indent).replace("\n", pad)
        first = False
    yield "[]" if first else "\n" + " " * indent * level + "]"


def write_json(results: Iterable[Result], out: TextIO) -> int:
    """`results`' rows as one JSON array (indent 2, no final line feed), each written as it comes;
    returns how many."""
    pieces = 0
    for piece in json_pieces((r.row() for r in results), 2):
        out.write(piece)
        pieces += 1
    return pieces - 1  # a piece per result, then the closing one


def to_json(results: Iterable[Result]) -> str:
    out = io.StringIO()
    write_json(results, out)
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


def write_csv(results: Iterable[Result], out: TextIO) -> int:
    """A header and one line per result, each cell as `_cell` writes it, each line ending in a
    line feed, written as each result comes (nothing for no results); returns how many."""
    # The writer quotes a cell holding a character of its line terminator, so it is given
    # "\r\n": with "\n" alone a stored "\r" went out bare, and a spreadsheet began a new row
    # there, whose first cell (`x\r=HYPERLINK(...)`) no quote prefix had covered.
    line = io.StringIO()
    writer: csv.DictWriter | None = None
    count = 0

    def put(write: Any, *args: Any) -> None:
        line.seek(0)
        line.truncate()
        write(*args)
        out.write(line.getvalue().removesuffix("\r\n") + "\n")

    for result in results:
        cells = result.row()
        if writer is None:  # the header from the first row's keys (every row has the same)
            writer = csv.DictWriter(line, fieldnames=list(cells), lineterminator="\r\n")
            put(writer.writeheader)
        put(writer.writerow, {k: _cell(v) for k, v in cells.items()})
        count += 1
    return count


def to_csv(results: Iterable[Result]) -> str:
    out = io.StringIO()
    write_csv(results, out)
    return out.getvalue()


@contextlib.contextmanager
def replacing(path: str) -> Iterator[TextIO]:
    """A file to write `path`'s new content into: a temporary file beside it, put in its place
    when the block ends and removed if it raises, so an export stopped halfway (Ctrl-C, a lost
    database) leaves no half file nor loses the old one. A path that is there and not a regular
    file (/dev/stdout, a named pipe) is written directly, and a symbolic link's file replaced
    (the link kept). OSError if it cannot be written."""
    target = Path(path).resolve()
    if target.exists() and not stat.S_ISREG(target.stat().st_mode):
        with open(target, "w", encoding="utf-8") as fh:
            yield fh
        return
    part = target.with_name(f".{target.name}.{os.getpid()}.part")  # made as open() makes a file: umask's mode
    try:
        with open(part, "x", encoding="utf-8") as fh:
            yield fh
        os.replace(part, target)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
