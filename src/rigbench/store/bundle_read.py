"""Reading a results bundle (store/bundle.py describes the format and its rules) in memory that
does not grow with its results: the file is read twice, each result decoded, checked and let
go in turn (store/json_stream.py). The first reading checks everything (`read_bundle`, before
the database is opened); the import reads the results again (`BundleFile.each`) and stores them
as they come. A bundle of 20,000 results is about 12 GB of JSON: held whole, it could not be
imported back on an ordinary machine.
"""

from __future__ import annotations

import hashlib
import json
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, TextIO

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rigbench.errors import UsageError, validation_line
from rigbench.result_rules import result_problems
from rigbench.spec import SCHEMA_VERSION, Result
from rigbench.store.bundle_calibrations import check_calibrations
from rigbench.store.calibrations import CalibrationRecord
from rigbench.store.json_stream import ARRAY, JsonStream, entries
from rigbench.store.machines import machine_problem
from rigbench.store.rows import trial_key
from rigbench.textlimits import ERROR_CHARS, NAME_CHARS, TEXT_LIMITS, clip, clip_result, clip_value
from rigbench.timestamps import not_a_time

FORMAT = "rigbench-results"
#: How many refused results (or results stored clipped) are named before the rest are counted.
SHOWN = 5

Opener = Callable[[], AbstractContextManager[TextIO]]


class RunRecord(BaseModel):
    """One run: when, which command, on which machine (rigbench.fingerprint)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=36)
    created_at: str
    command: str
    machine: dict[str, Any]


class BundleEnvelope(BaseModel):
    """The bundle's outer layer; each result is validated on its own (as a Result)."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["rigbench-results"]
    schema_version: int = Field(ge=1)
    exported_at: str | None = None
    rigbench_version: str | None = None
    runs: list[RunRecord]
    results: list[dict[str, Any]]
    # checked entry by entry (bundle_calibrations.check_calibrations), so the refusal names one;
    # absent in a bundle without calibrations, as in every bundle written before they travelled
    calibrations: Any = None


@dataclass
class BundleFile:
    """A bundle checked in full (`read_bundle`) whose results stay in the file: `each` reads
    them again, one at a time. `results` holds them when read with keep=True."""

    origin: str
    runs: list[RunRecord]
    count: int                       # results in the bundle
    notes: list[str]                 # text stored clipped
    calibrations: list[CalibrationRecord]
    results: list[Result] | None
    _open: Opener
    _digest: bytes                   # of the results as first read (their JSON text)
    _clipped: set[int]               # which results were clipped
    repeated: set[bytes]             # trial_digest of each trial more than one result is of
    _spans: array[int]               # where each result's text starts in the file, and its length

    def each(self) -> Iterator[Result]:
        """The bundle's results as checked (text clipped), read again from the file unless kept:
        each one's text where the check found it, not parsed as JSON again (half the time of
        this reading). Not checked again: a digest of them all is, at the end, against the
        first reading's, and a file changed in between raises UsageError there (an import's
        transaction then stores nothing)."""
        if self.results is not None:
            yield from self.results
            return
        digest, count, at = hashlib.sha256(), 0, 0
        with self._open() as file:
            for start, length in zip(self._spans[::2], self._spans[1::2], strict=True):
                file.read(start - at)  # a comma and white space (before the first: the runs)
                text, at = file.read(length), start + length
                digest.update(_encoded(text))
                try:
                    result = _validated(None, text)
                except ValueError:  # pydantic's ValidationError, or json's error where it falls back
                    break  # changed: said below
                yield clip_result(result) if count in self._clipped else result
                count += 1
        if count != self.count or digest.digest() != self._digest:
            raise UsageError(f"{self.origin}: changed while it was imported: import it again")


def _results(open_: Opener, origin: str) -> Iterator[tuple[Any, str, int]]:
    """Each item of the bundle's results array, decoded as it is reached, with its JSON text
    and where that starts."""
    with open_() as text:
        for key, value in entries(JsonStream(text, origin), "results", texts=True):
            if key is None:
                yield value


def _encoded(text: str) -> bytes:
    """A result's JSON text as digested (a str given to parse_bundle may hold a lone surrogate)."""
    return text.encode("utf-8", "surrogatepass") + b"\n"


def _validated(raw: Any, text: str) -> Result:
    """The result whose JSON text is `text` (decoded: `raw`, or None: decoded here if need be),
    validated from that text. Where pydantic refuses it, from json.dumps(raw) instead, as every
    result was before it was taken from the file's text (dumping each result's thousands of
    figures was a fifth of an import), so a refusal reads as it did: an "Invalid JSON" error (a
    nesting deeper than pydantic reads, an escaped lone surrogate) says its line and column in
    that text."""
    try:
        return Result.model_validate_json(text, strict=True)
    except ValidationError:
        return Result.model_validate_json(json.dumps(json.loads(text) if raw is None else raw), strict=True)


def trial_digest(result: Result) -> bytes:
    """rows.trial_key as a digest: what an import keeps of each result it has read."""
    return digest(trial_key(result))


def digest(value: Any) -> bytes:
    """sha256 of `value` as sorted JSON: the same for the same content, whatever its keys' order."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).digest()


class _Checks:
    """Each result's checks in the bundle's order, and what they refused or noted."""

    def __init__(self, run_ids: set[str]):
        self.run_ids = run_ids
        self.count = 0
        self.refused: list[str] = []
        self.notes: list[str] = []
        self.clipped: set[int] = set()
        self.digest = hashlib.sha256()
        self._row_of_id: dict[int, int] = {}
        self._trials: set[bytes] = set()
        self.repeated: set[bytes] = set()
        self.spans = array("q")  # 16 bytes a result

    def add(self, raw: Any, text: str, start: int) -> Result | None:
        """`raw` (the next result, decoded from `text`, which starts at `start`) as it is
        stored, or None when refused (or not an object, which the envelope's check names)."""
        i, where = self.count, f"results[{self.count}]"
        self.count += 1
        self.digest.update(_encoded(text))
        self.spans += array("q", (start, len(text)))
        if not isinstance(raw, dict):
            return None
        checked = _check_result(raw, text, where, self.run_ids)
        if isinstance(checked, str):
            self.refused.append(checked)
            return None
        if not_a_time(checked.created_at):  # results are ordered and chosen by it
            self.refused.append(f"{where}.created_at: {not_a_time(checked.created_at)}")
            return None
        if checked.id is not None and checked.id in self._row_of_id:
            self.refused.append(f"{where}.id: {checked.id} is also the id of results[{self._row_of_id[checked.id]}]")
            return None
        if checked.id is not None:
            self._row_of_id[checked.id] = i
        clipped = clip_result(checked)  # text over textlimits' maxima is stored clipped, and said
        if clipped is not checked:
            self.clipped.add(i)
            self.notes += [_clipped_note(f"{where}.{name}", getattr(checked, name), TEXT_LIMITS.get(name, NAME_CHARS))
                           for name in Result.model_fields if getattr(clipped, name) != getattr(checked, name)]
        trial = trial_digest(clipped)  # only a result of a repeated trial can be another's copy (store/bundle.py)
        if trial in self._trials:
            self.repeated.add(trial)
        self._trials.add(trial)
        return clipped


def read_bundle(open_: Opener, origin: str, keep: bool = False) -> BundleFile:
    """Check a bundle completely, reading its results one at a time (and keeping them if
    `keep`); UsageError naming the first bad part of the envelope, or every refused result
    (bounded: `refusal`) otherwise."""
    def fail(message: str) -> UsageError:
        return UsageError(f"{origin}: {message}")

    envelope: dict[str, Any] = {}
    checks: _Checks | None = None  # results are checked as they are read once the runs are known
    kept: list[Result] = []
    count, not_object = 0, -1
    with open_() as text:
        stream = JsonStream(text, origin)
        first = stream.peek()
        if first == "\ufeff":  # as json.loads says it
            raise stream.error("Unexpected UTF-8 BOM (decode using utf-8-sig)")
        if first == "[":
            raise fail("a list of flat rows, not a bundle: export with `rigbench results export --format bundle`")
        if first != "{":
            stream.value()  # not JSON: said where; JSON: not an object
            stream.end()
            raise fail(f"expected a JSON object with \"format\": \"{FORMAT}\"")
        for key, value in entries(stream, "results", texts=True):
            if key is None:
                if not isinstance(value[0], dict) and not_object < 0:
                    not_object = count
                count += 1
                result = checks.add(*value) if checks else None
                if keep and result is not None:
                    kept.append(result)
                continue
            if key in envelope:  # json.loads would keep the last: half a hand-joined bundle lost
                raise fail(f"{key}: given twice")
            envelope[key] = [] if value is ARRAY else value
            if key == "runs" and isinstance(value, list):
                checks = _Checks({r["id"] for r in value if isinstance(r, dict) and isinstance(r.get("id"), str)})
    if envelope.get("format") != FORMAT:
        raise fail(f"format: expected {FORMAT!r}, got {envelope.get('format')!r}")
    version = envelope.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise fail(f"schema_version: {version} is newer than this rigbench understands "
                   f"({SCHEMA_VERSION}): upgrade rigbench")
    if not_object >= 0:  # named by the envelope's check, as results[i] (a few bytes per result before it)
        envelope["results"] = [{}] * not_object + [1]
    try:
        valid = BundleEnvelope.model_validate_json(json.dumps(envelope), strict=True)
    except ValidationError as exc:
        raise fail(validation_line(exc)) from None
    run_ids: set[str] = set()
    for i, run in enumerate(valid.runs):
        if run.id in run_ids:
            raise fail(f"runs[{i}].id: run {run.id!r} appears twice")
        run_ids.add(run.id)
        problem = machine_problem(run.machine)  # a field every report reads, of the wrong type
        if problem:
            raise fail(f"runs[{i}].machine.{problem}")
        if not_a_time(run.created_at):
            raise fail(f"runs[{i}].created_at: {not_a_time(run.created_at)}")
    if checks is None or checks.count != count or checks.run_ids != run_ids:  # the runs came after: read again
        checks = _Checks(run_ids)
        for raw, json_text, start in _results(open_, origin):
            result = checks.add(raw, json_text, start)
            if keep and result is not None:
                kept.append(result)
    if checks.refused:
        raise fail(refusal(checks.refused, count))
    calibrated = check_calibrations(valid.calibrations, run_ids)
    if isinstance(calibrated, str):
        raise fail(calibrated)
    runs_ = [_clip_run(r) for r in valid.runs]
    notes = checks.notes + [f"runs[{i}]: text over its limit stored clipped"
                            for i, (a, b) in enumerate(zip(valid.runs, runs_)) if a != b]
    return BundleFile(origin, runs_, count, notes + calibrated[1], calibrated[0], kept if keep else None,
                      open_, checks.digest.digest(), checks.clipped, checks.repeated, checks.spans)


def _unknown_key(given: Any, known: Any, path: str) -> str | None:
    """The first key of `given` that validation dropped (absent from the re-dumped `known`)."""
    if given == known:  # the same keys all the way down, told in C (a result's tracker samples: thousands)
        return None
    if isinstance(given, dict) and isinstance(known, dict):
        for key, value in given.items():
            if key not in known:
                return f"{path}.{key}"
            found = _unknown_key(value, known[key], f"{path}.{key}") if isinstance(value, (dict, list)) else None
            if found:
                return found
    elif isinstance(given, list) and isinstance(known, list):
        for i, (g, k) in enumerate(zip(given, known)):  # a call only for what can hold keys (not each step time)
            found = _unknown_key(g, k, f"{path}[{i}]") if isinstance(g, (dict, list)) else None
            if found:
                return found
    return None


def _clipped_note(where: str, value: Any, limit: int) -> str:
    size = f"{len(value):,} characters" if isinstance(value, str) else "text"
    return f"{where}: {size} over the {limit:,} stored, clipped"


def _check_result(raw: dict[str, Any], text: str, where: str, run_ids: set[str]) -> Result | str:
    """One result of a bundle (decoded, and as JSON text) as a Result, or why it is refused (its
    first broken rule)."""
    try:
        result = _validated(raw, text)
    except ValidationError as exc:
        return validation_line(exc, where)
    unknown = _unknown_key(raw, result.model_dump(mode="json"), where)
    if unknown:
        return f"{unknown}: unknown field"
    if result.schema_version > SCHEMA_VERSION:
        return (f"{where}.schema_version: {result.schema_version} is newer than this rigbench "
                f"understands ({SCHEMA_VERSION}): upgrade rigbench")
    if result.run_id not in run_ids:
        return f"{where}.run_id: run {result.run_id!r} is not in the bundle's runs"
    problems = result_problems(result)
    return f"{where}.{problems[0]}" if problems else result


def refusal(reasons: Sequence[str], total: int) -> str:
    """Refused results on one line: the first SHOWN reasons and how many more."""
    more = len(reasons) - SHOWN
    shown = "; ".join(reasons[:SHOWN]) + (f"; and {more} more" if more > 0 else "")
    return f"{len(reasons)} of {total} results refused, nothing imported: {shown}"


def _clip_run(run: RunRecord) -> RunRecord:
    return run.model_copy(update={"command": clip(run.command, ERROR_CHARS),
                                  "machine": clip_value(run.machine, NAME_CHARS)})
