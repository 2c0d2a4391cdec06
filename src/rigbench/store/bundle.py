"""Results bundles: every field of stored runs and results as one JSON file, to move them
between machines (`rigbench results export --format bundle`, `rigbench results import`).

    {"format": "rigbench-results", "schema_version": 1, "exported_at": ..., "rigbench_version": ...,
     "runs": [{"id", "created_at", "command", "machine"}],
     "results": [Result as JSON, raw step times and tracker samples included],
     "calibrations": [a device's measured peaks: store/bundle_calibrations.py; only when any]}

JSON only, never pickle: a bundle comes from another machine, so reading one must not run code.
An import checks everything before it writes anything, and refuses the whole bundle when any
part is wrong, so a bad file leaves the database as it was: first the envelope (format, schema
version, runs), then every result, which must validate as a Result (its spec bound by
rigbench.numlimits: finite numbers, integers the database holds) and follow
rigbench.result_rules (finite figures; an `ok` speed, probe or training trial has a throughput
above 0), with an `id` no other result of the bundle has; then every calibration
(store/bundle_calibrations.py). The refusal names each refused result
and why, e.g. `results[3].status: Input should be 'ok', 'oom', ...` (the first SHOWN,
then how many more). Text longer than rigbench.textlimits allows (a 50 MB error string) is stored
clipped, with its length noted in the text, and the import says which results were clipped.

Re-importing is safe: runs already stored (same id and machine) are not added again. A result
is the same trial as a stored one when its run, creation time and whole spec are
(`rows.trial_key`); with the same content too it is skipped and counted, with other content
(an edited or re-measured bundle) the import is refused: two versions of one trial would both
count in every comparison, and neither silently replacing the stored one nor adding a copy is
what a re-import means. A result with another spec is another trial and is added; a result
given twice in one bundle (joined by hand) is added once. Calibrations
follow the same rule (store/bundle_calibrations.py). An import is one transaction: all of it
lands, or nothing.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select

from rigbench import __version__
from rigbench.errors import UsageError, validation_line
from rigbench.result_rules import result_problems
from rigbench.spec import SCHEMA_VERSION, Result
from rigbench.store.bundle_calibrations import (
    check_calibrations,
    exported_calibrations,
    insert_calibrations,
    new_calibrations,
)
from rigbench.store.calibrations import CalibrationRecord
from rigbench.store.db import Store
from rigbench.store.export import json_pieces
from rigbench.store.machines import machine_problem, read_machine
from rigbench.store.rows import stored_command, trial_key
from rigbench.store.schema import runs
from rigbench.textlimits import ERROR_CHARS, NAME_CHARS, TEXT_LIMITS, clip, clip_result, clip_value
from rigbench.timestamps import not_a_time, now_iso

FORMAT = "rigbench-results"


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
class Bundle:
    """A validated bundle: its runs and full results (ids as in the source database), and
    notes on what was clipped."""

    runs: list[RunRecord]
    results: list[Result]
    origin: str = "bundle"
    notes: list[str] = field(default_factory=list)
    calibrations: list[CalibrationRecord] = field(default_factory=list)

    def machine(self, run_id: str) -> dict[str, Any] | None:
        return next((r.machine for r in self.runs if r.id == run_id), None)


@dataclass
class ImportOutcome:
    added_runs: list[str]
    present_runs: list[str]      # already stored: not added again
    added_results: int
    skipped_results: int         # already stored in their run, or a copy earlier in the bundle
    notes: list[str] = field(default_factory=list)  # text stored clipped, per result
    added_calibrations: int = 0    # calibration measurements (rows) stored now
    skipped_calibrations: int = 0  # already stored in their run


def stored_runs(store: Store, run_ids: Sequence[str] | None = None) -> list[RunRecord]:
    """The runs table (all runs, or those of `run_ids`), oldest first."""
    query = select(runs).order_by(runs.c.created_at, runs.c.id)
    if run_ids is not None:
        query = query.where(runs.c.id.in_(list(run_ids)))
    with store.engine.connect() as conn:
        rows = conn.execute(query).all()
    return [RunRecord(id=r.id, created_at=r.created_at, command=stored_command(r.command),
                      machine=read_machine(r.machine_json, r.id, store.url)) for r in rows]


def export_bundle(store: Store, run_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """Every result of `run_ids` (default: all) with raw samples, the calibrations stored under
    them (a `rigbench calibrate` run has calibrations and no results), and their runs, as a dict."""
    text = io.StringIO()
    write_bundle(store, run_ids, text)
    return dict(json.loads(text.getvalue()))


def write_bundle(store: Store, run_ids: Sequence[str] | None, out: TextIO,
                 spill_dir: str | None = None) -> tuple[int, int]:
    """export_bundle's bundle as dump_bundle writes it, into `out`, each result written as it is
    read (Store.stream): memory does not grow with the results. Its runs come first and are those
    of the results that could be read, so the results go to a temporary file (in `spill_dir`:
    beside the output, not a /tmp that may be memory) until they are known. Returns how many
    results and calibration measurements were written."""
    chosen = list(dict.fromkeys(run_ids)) if run_ids else None
    calibrated = exported_calibrations(store, chosen)
    for run_id in chosen or []:
        if not store.count(run_id=run_id) and not any(c["run_id"] == run_id for c in calibrated):
            raise UsageError(f"no results stored for --run {run_id!r} in {store.url}, nor calibrations: "
                             "`rigbench results runs` lists the stored runs")
    selected: list[str | None] = list(chosen) if chosen else [None]
    used: dict[str, None] = {}
    written = 0

    def results() -> Iterator[dict[str, Any]]:
        nonlocal written
        for run_id in selected:
            for result in store.stream(run_id=run_id, raw=True):  # one whose raw samples cannot be read: skipped, said
                used[result.run_id] = None
                written += 1
                yield result.model_dump(mode="json")

    with tempfile.TemporaryFile("w+", encoding="utf-8", dir=spill_dir) as spill:
        for piece in json_pieces(results(), 1, 1):
            spill.write(piece)
        used.update(dict.fromkeys(c["run_id"] for c in calibrated))
        head = json.dumps({"format": FORMAT, "schema_version": SCHEMA_VERSION, "exported_at": now_iso(),
                           "rigbench_version": __version__,
                           "runs": [r.model_dump() for r in stored_runs(store, list(used))]}, indent=1)
        out.write(head.removesuffix("\n}") + ',\n "results": ')
        spill.seek(0)
        shutil.copyfileobj(spill, out)
    if calibrated:  # only then: a bundle without calibrations stays readable by an older rigbench
        out.write(',\n "calibrations": ' + json.dumps(calibrated, indent=1).replace("\n", "\n "))
    out.write("\n}\n")
    return written, len(calibrated)


def dump_bundle(bundle: dict[str, Any]) -> str:
    return json.dumps(bundle, indent=1) + "\n"


def _unknown_key(given: Any, known: Any, path: str) -> str | None:
    """The first key of `given` that validation dropped (absent from the re-dumped `known`)."""
    if isinstance(given, dict) and isinstance(known, dict):
        for key, value in given.items():
            if key not in known:
                return f"{path}.{key}"
            found = _unknown_key(value, known[key], f"{path}.{key}")
            if found:
                return found
    elif isinstance(given, list) and isinstance(known, list):
        for i, (g, k) in enumerate(zip(given, known)):
            found = _unknown_key(g, k, f"{path}[{i}]")
            if found:
                return found
    return None


def parse_bundle(text: str, origin: str = "bundle") -> Bundle:
    """Validate a bundle's text completely; UsageError naming the first bad part of the
    envelope, or every refused result (bounded: `refusal`) otherwise."""
    def fail(message: str) -> UsageError:
        return UsageError(f"{origin}: {message}")

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise fail(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if isinstance(data, list):
        raise fail("a list of flat rows, not a bundle: export with `rigbench results export --format bundle`")
    if not isinstance(data, dict):
        raise fail(f"expected a JSON object with \"format\": \"{FORMAT}\"")
    if data.get("format") != FORMAT:
        raise fail(f"format: expected {FORMAT!r}, got {data.get('format')!r}")
    version = data.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise fail(f"schema_version: {version} is newer than this rigbench understands "
                   f"({SCHEMA_VERSION}): upgrade rigbench")
    try:
        envelope = BundleEnvelope.model_validate_json(text, strict=True)
    except ValidationError as exc:
        raise fail(validation_line(exc)) from None
    run_ids: set[str] = set()
    for i, run in enumerate(envelope.runs):
        if run.id in run_ids:
            raise fail(f"runs[{i}].id: run {run.id!r} appears twice")
        run_ids.add(run.id)
        problem = machine_problem(run.machine)  # a field every report reads, of the wrong type
        if problem:
            raise fail(f"runs[{i}].machine.{problem}")
        if not_a_time(run.created_at):
            raise fail(f"runs[{i}].created_at: {not_a_time(run.created_at)}")
    results, refused, notes = [], [], []
    row_of_id: dict[int, int] = {}
    for i, raw in enumerate(envelope.results):
        where = f"results[{i}]"
        checked = _check_result(raw, where, run_ids)
        if isinstance(checked, str):
            refused.append(checked)
            continue
        if not_a_time(checked.created_at):  # results are ordered and chosen by it
            refused.append(f"{where}.created_at: {not_a_time(checked.created_at)}")
            continue
        if checked.id is not None and checked.id in row_of_id:
            refused.append(f"{where}.id: {checked.id} is also the id of results[{row_of_id[checked.id]}]")
            continue
        if checked.id is not None:
            row_of_id[checked.id] = i
        clipped = clip_result(checked)  # text over textlimits' maxima is stored clipped, and said
        notes += [_clipped_note(f"{where}.{name}", getattr(checked, name), TEXT_LIMITS.get(name, NAME_CHARS))
                  for name in Result.model_fields if getattr(clipped, name) != getattr(checked, name)]
        results.append(clipped)
    if refused:
        raise fail(refusal(refused, len(envelope.results)))
    calibrated = check_calibrations(envelope.calibrations, run_ids)
    if isinstance(calibrated, str):
        raise fail(calibrated)
    runs_ = [_clip_run(r) for r in envelope.runs]
    notes += [f"runs[{i}]: text over its limit stored clipped" for i, (a, b) in enumerate(zip(envelope.runs, runs_)) if a != b]
    return Bundle(runs_, results, origin, notes + calibrated[1], calibrated[0])


def _clipped_note(where: str, value: Any, limit: int) -> str:
    size = f"{len(value):,} characters" if isinstance(value, str) else "text"
    return f"{where}: {size} over the {limit:,} stored, clipped"


def _check_result(raw: dict[str, Any], where: str, run_ids: set[str]) -> Result | str:
    """One result of a bundle as a Result, or why it is refused (its first broken rule)."""
    try:
        result = Result.model_validate_json(json.dumps(raw), strict=True)
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


#: How many refused results (or results stored clipped) are named before the rest are counted.
SHOWN = 5


def refusal(reasons: Sequence[str], total: int) -> str:
    """Refused results on one line: the first SHOWN reasons and how many more."""
    more = len(reasons) - SHOWN
    shown = "; ".join(reasons[:SHOWN]) + (f"; and {more} more" if more > 0 else "")
    return f"{len(reasons)} of {total} results refused, nothing imported: {shown}"


def _clip_run(run: RunRecord) -> RunRecord:
    return run.model_copy(update={"command": clip(run.command, ERROR_CHARS),
                                  "machine": clip_value(run.machine, NAME_CHARS)})


def load_bundle(path: str | Path) -> Bundle:
    """Read and validate a bundle file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    return parse_bundle(text, str(path))


def import_bundle(store: Store, bundle: Bundle) -> ImportOutcome:
    """Add a validated bundle's runs and results to `store`; see the module docstring for what
    is skipped and what is refused. Every check runs before the first write, and everything is
    written in one transaction: a failure or a kill midway leaves the database exactly as it was."""
    with store.transaction() as tx:
        present = tx.machines([r.id for r in bundle.runs])
        for i, run in enumerate(bundle.runs):
            # clipped like the bundle's, so a run stored before clipping still matches
            if run.id in present and clip_value(present[run.id], NAME_CHARS) != run.machine:
                raise UsageError(f"{bundle.origin}: runs[{i}].id: run {run.id!r} is already stored in "
                                 f"{store.url} with a different machine; refusing to mix them")
        stored: dict[tuple[str, str, str], list[Result]] = {}
        for run_id in present:
            for r in tx.list(run_id=run_id):
                stored.setdefault(trial_key(r), []).append(r)
        new_results, refused = [], []
        in_bundle: set[str] = set()  # each result's content: a copy in a hand-joined bundle lands once
        for i, result in enumerate(bundle.results):
            # (not by trial_key alone: repeats of one spec can share a run and a second, with other figures)
            content = hashlib.sha256(json.dumps(_content(result), sort_keys=True).encode()).hexdigest()
            if content in in_bundle:
                continue
            in_bundle.add(content)
            same = stored.get(trial_key(result), [])
            if not same:
                new_results.append(result)
                continue
            copies = [tx.get(r.id) for r in same if r.id is not None]
            differences = [_difference(_content(c), _content(result)) for c in copies if c is not None]
            if differences and all(differences):
                refused.append(f"results[{i}]: trial {same[0].id} of run {result.run_id} (same time and spec) is "
                               f"stored with other content ({differences[0]}): an edited or re-measured copy")
        if refused:
            raise UsageError(f"{bundle.origin}: {refusal(refused, len(bundle.results))}")
        new_cals, cal_refusal = new_calibrations(tx.conn, bundle.calibrations, list(present))
        if cal_refusal:
            raise UsageError(f"{bundle.origin}: {cal_refusal}")
        new_runs = [r for r in bundle.runs if r.id not in present]
        for run in new_runs:
            tx.add_run(run.id, run.created_at, run.command, run.machine)
        for result in new_results:
            tx.add_result(result.model_copy(update={"id": None}))
        insert_calibrations(tx.conn, new_cals)  # after their runs: a row's run_id must exist
    present_ids = [r.id for r in bundle.runs if r.id in present]
    return ImportOutcome([r.id for r in new_runs], present_ids, len(new_results),
                         len(bundle.results) - len(new_results), bundle.notes,
                         len(new_cals), len(bundle.calibrations) - len(new_cals))


def _content(result: Result) -> dict[str, Any]:
    """Everything a result holds but its id (which each database gives), as JSON values."""
    return result.model_dump(mode="json", exclude={"id"})


def _difference(stored: Any, given: Any, path: str = "") -> str | None:
    """The first place where `given` differs from `stored`, with both values, or None. Values
    compare as JSON text, so a NaN in a raw tracker sample equals itself."""
    if json.dumps(stored, sort_keys=True) == json.dumps(given, sort_keys=True):
        return None
    if isinstance(stored, dict) and isinstance(given, dict):
        for key in sorted(stored.keys() | given.keys()):
            found = _difference(stored.get(key), given.get(key), f"{path}.{key}" if path else key)
            if found:
                return found
    return f"{path or 'the result'}: {_short(stored)} stored, {_short(given)} in the bundle"


def _short(value: Any) -> str:
    return clip(json.dumps(value), 40)
