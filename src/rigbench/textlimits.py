"""The stated maximum length of every stored text field, and `clip`, which enforces it.

A text field can come from a child process (an exception's message), from another machine
(an imported bundle) or from a database written by an older rigbench, so none of them is
trusted to be short: a 200 MB error string once made `results show` run for 12 minutes and a
report 210 MB. Text is clipped where it enters the database (runner/assemble.py, an import
in store/bundle.py) and again where it is shown (reports/terminal.py, reports/html.py), so
old databases display quickly too. A clipped text ends with the length it had, e.g.
"... [truncated: 209,715,200 characters]". Where text is shown, `visible` also writes out the
control characters a terminal would act on (an ESC sequence that clears the screen).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from itertools import chain
from typing import Any

from pydantic import BaseModel

from rigbench.spec import Result

#: A trial's error text (a traceback's last lines, an out-of-memory message) and a run's
#: command line: long enough for any real message, short enough to show.
ERROR_CHARS = 64 * 1024
#: Names: workload, framework, device, device name, option values, data set, machine fields.
NAME_CHARS = 256
#: Each value of a result's `software` (package versions, build strings).
SOFTWARE_CHARS = 256
#: A Result's fields with a limit of their own (clip_result); every other string: NAME_CHARS.
TEXT_LIMITS = {"error": ERROR_CHARS, "software": SOFTWARE_CHARS}


#: The note a clipped text ends with; a text clipped once (on import) keeps its first note
#: when clipped again (on display), so the length shown is the original one.
_NOTE = re.compile(r" \.\.\. \[truncated: [\d,]+ characters\]\Z")


def clip(text: str, limit: int) -> str:
    """`text` itself when it has at most `limit` characters (a clipped text's note not
    counted), else its first `limit` characters and a note of its full length."""
    if len(text) <= limit:
        return text
    note = _NOTE.search(text, max(0, len(text) - 64))
    if note and note.start() <= limit:
        return text
    return f"{text[:limit]} ... [truncated: {len(text):,} characters]"


#: Control characters a terminal acts on instead of showing: C0 but a line break and a tab
#: (which a wrapped cell or a traceback needs), DEL and C1. An ESC starts a sequence that can
#: clear the screen or set the window's title, so it is shown and not sent.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """`text` as a terminal may print it: each control character written out as `\\xNN`
    (`\\x1b[2J` instead of clearing the screen), everything else as it is. Applied where
    stored text becomes a cell or a line (reports/cells.literal, reports/table_fit.FitTable,
    error_line, every plain line the commands print: cli/common's consoles; the report's page
    and charts: reports/html's template, reports/chart_model.shown for the page's charts and
    the PNGs), never to what is stored or exported."""
    return _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


def clip_optional(text: str | None, limit: int) -> str | None:
    return None if text is None else clip(text, limit)


def clip_value(value: Any, limit: int) -> Any:
    """Every string inside `value` (dict keys and values, list items, model fields) clipped
    to `limit`; numbers and other values as they are. `value` itself (not a copy) where nothing
    needed clipping, as nearly always: copying every model of every result was most of the time
    a report over a fleet's database spent clipping (20,000 results: 2.9 s of CPU, now 0.5)."""
    if value is None or isinstance(value, (int, float)):  # most of a Result: asked first (report, roofline)
        return value
    if isinstance(value, str):
        return clip(value, limit)
    if isinstance(value, BaseModel):
        changed = _clipped_fields(value, limit)
        return value.model_copy(update=changed) if changed else value
    if isinstance(value, dict):
        if _plain_dicts((value,), limit):
            return value
        pairs = [(clip_value(k, limit), clip_value(v, limit)) for k, v in value.items()]
        same = all(k is old_k and v is old_v for (k, v), (old_k, old_v) in zip(pairs, value.items()))
        return value if same else dict(pairs)
    if isinstance(value, (list, tuple)) and not _plain_items(value, limit):
        items = [clip_value(v, limit) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else type(value)(items)
    return value


#: Types with no text in them, matched exactly (a subclass, numpy's float64, goes the long way).
_PLAIN = frozenset({int, float, bool, type(None)})


def _plain_items(items: list[Any] | tuple[Any, ...], limit: int) -> bool:
    """Nothing in `items` needs clipping, told in a few calls that run in C: a list of numbers
    (step times, a loss curve) or of dicts of short names to numbers (tracker samples). A
    result holds thousands of them, and a call per number was most of clip_result's time. False
    means only "look closer" (clip_value walks it)."""
    kinds = set(map(type, items))
    return kinds <= _PLAIN or (kinds == {dict} and _plain_dicts(items, limit))


def _plain_dicts(dicts: Iterable[dict[Any, Any]], limit: int) -> bool:
    """Every dict of `dicts` has only string keys of at most `limit` characters and only
    values of _PLAIN types."""
    keys: set[Any] = set().union(*dicts)
    return (set(map(type, keys)) <= {str} and max(map(len, keys), default=0) <= limit
            and set(map(type, chain.from_iterable(d.values() for d in dicts))) <= _PLAIN)


def _clipped_fields(model: BaseModel, limit: int, skip: Collection[str] = ()) -> dict[str, Any]:
    """The fields of `model` (but `skip`) that clip_value changes, clipped."""
    changed, fields = {}, type(model).model_fields
    for name, item in vars(model).items():  # the fields' values (a getattr each was a third of the time)
        if item is not None and not isinstance(item, (int, float)) and name in fields and name not in skip:
            clipped = clip_value(item, limit)
            if clipped is not item:
                changed[name] = clipped
    return changed


def clip_result(result: Result) -> Result:
    """`result` with its error text clipped to ERROR_CHARS, its software strings to
    SOFTWARE_CHARS and every other string (the spec's names and options, device name,
    epoch and tracker keys) to NAME_CHARS; `result` itself where none needed clipping."""
    error, software = clip_optional(result.error, ERROR_CHARS), clip_value(result.software, SOFTWARE_CHARS)
    changed = _clipped_fields(result, NAME_CHARS, skip=TEXT_LIMITS)
    if not changed and error is result.error and software is result.software:
        return result
    return result.model_copy(update={**changed, "error": error, "software": software})


#: TensorFlow ends an op's error with the graph node it failed in ("\t [[{{node sgd/
#: CollectiveReduceV2}}]] [Op:__inference_run_521]"), after a paragraph whose first line says
#: what happened ("Collective ops is aborted by: Socket closed").
_TF_NODE_LINE = re.compile(r"^\s*\[\[\{\{node .*\}\}\]\]")


def error_line(error: str | None, limit: int = 240) -> str:
    """A stored error's last line (a traceback's ends with the exception), cut to `limit`; for
    a TensorFlow op's error, the first line of the paragraph its node line closes, or where that
    paragraph is a whole traceback (no blank line before the node line), its exception line."""
    lines = (error or "").strip().splitlines()
    last = lines[-1] if lines else ""
    if _TF_NODE_LINE.match(last):
        body = lines[:-1]
        blanks = [i for i, line in enumerate(body) if not line.strip()]
        paragraph = [line for line in body[blanks[-1] + 1 if blanks else 0:] if line.strip()]
        if paragraph and paragraph[0].startswith("Traceback"):  # the exception is its last unindented line
            paragraph = [line for line in paragraph if not line[:1].isspace()][-1:]
        last = paragraph[0].strip() if paragraph else last
    last = visible(last)
    return last if len(last) <= limit else last[:limit - 3] + "..."
