"""Results bundles: every field of stored runs and results as one JSON file, to move them
between machines (`rigbench results export --format bundle`, `rigbench results import`).

    {"format": "rigbench-results", "schema_version": 1, "exported_at": ..., "rigbench_version": ...,
     "runs": [{"id", "created_at", "command", "machine"}],
     "results": [Result as JSON, raw step times and tracker samples included]}

JSON only, never pickle: a bundle comes from another machine, so reading one must not run code.
An import checks everything (envelope, every field of every result, types, statuses, schema
versions, that each result's run is in the bundle) before it writes anything; a malformed
file leaves the database as it was. Text longer than rigbench.textlimits allows (a 200 MB
error string) is stored clipped, with its length noted. Errors name the field and its position, e.g.
`results[3].status: Input should be 'ok', 'oom', ...`.

Re-importing is safe: runs already stored (same id and machine) are not added again, and a
result already stored in its run (the same `rows.result_identity`: time, spec, status and
speed) is skipped and counted. An import is one transaction: all of it lands, or nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select

from rigbench import __version__
from rigbench.errors import UsageError
from rigbench.spec import SCHEMA_VERSION, Result
from rigbench.store.db import Store
from rigbench.store.rows import result_identity, stored_command
from rigbench.store.schema import runs
from rigbench.textlimits import ERROR_CHARS, NAME_CHARS, clip, clip_result, clip_value
from rigbench.timestamps import now_iso

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


@dataclass
class Bundle:
    """A validated bundle: its runs and full results (ids as in the source database)."""

    runs: list[RunRecord]
    results: list[Result]
    origin: str = "bundle"

    def machine(self, run_id: str) -> dict[str, Any] | None:
        return next((r.machine for r in self.runs if r.id == run_id), None)


@dataclass
class ImportOutcome:
    added_runs: list[str]
    present_runs: list[str]      # already stored: not added again
    added_results: int
    skipped_results: int         # already stored in their run


def stored_runs(store: Store, run_ids: Sequence[str] | None = None) -> list[RunRecord]:
    """The runs table (all runs, or those of `run_ids`), oldest first."""
    query = select(runs).order_by(runs.c.created_at, runs.c.id)
    if run_ids is not None:
        query = query.where(runs.c.id.in_(list(run_ids)))
    with store.engine.connect() as conn:
        rows = conn.execute(query).all()
    return [RunRecord(id=r.id, created_at=r.created_at, command=stored_command(r.command),
                      machine=json.loads(r.machine_json)) for r in rows]


def export_bundle(store: Store, run_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """Every result of `run_ids` (default: all) with raw samples, and their runs, as a dict."""
    results: list[Result] = []
    for run_id in (list(dict.fromkeys(run_ids)) if run_ids else [None]):
        listed = store.list(run_id=run_id)
        if run_id is not None and not listed:
            raise UsageError(f"no results stored for --run {run_id!r} in {store.url}: see `rigbench results list`")
        results += [store.get(r.id) for r in listed if r.id is not None]  # type: ignore[misc]
    used = list(dict.fromkeys(r.run_id for r in results))
    return {
        "format": FORMAT, "schema_version": SCHEMA_VERSION, "exported_at": now_iso(),
        "rigbench_version": __version__,
        "runs": [r.model_dump() for r in stored_runs(store, used)],
        "results": [r.model_dump(mode="json") for r in results],
    }


def dump_bundle(bundle: dict[str, Any]) -> str:
    return json.dumps(bundle, indent=1) + "\n"


def _where(loc: Sequence[Any]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _first_error(exc: ValidationError, prefix: str = "") -> str:
    first = exc.errors()[0]
    loc = _where(first["loc"])
    where = f"{prefix}.{loc}" if prefix and not loc.startswith("[") else f"{prefix}{loc}"
    extra = f" ({len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return f"{where}: {first['msg']}{extra}"


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
    """Validate a bundle's text completely; UsageError naming the first bad field otherwise."""
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
        raise fail(_first_error(exc)) from None
    run_ids: set[str] = set()
    for i, run in enumerate(envelope.runs):
        if run.id in run_ids:
            raise fail(f"runs[{i}].id: run {run.id!r} appears twice")
        run_ids.add(run.id)
    results = []
    for i, raw in enumerate(envelope.results):
        where = f"results[{i}]"
        try:
            result = Result.model_validate_json(json.dumps(raw), strict=True)
        except ValidationError as exc:
            raise fail(_first_error(exc, where)) from None
        unknown = _unknown_key(raw, result.model_dump(mode="json"), where)
        if unknown:
            raise fail(f"{unknown}: unknown field")
        if result.schema_version > SCHEMA_VERSION:
            raise fail(f"{where}.schema_version: {result.schema_version} is newer than this "
                       f"rigbench understands ({SCHEMA_VERSION}): upgrade rigbench")
        if result.run_id not in run_ids:
            raise fail(f"{where}.run_id: run {result.run_id!r} is not in the bundle's runs")
        results.append(clip_result(result))  # text over textlimits' maxima is stored clipped
    return Bundle([_clip_run(r) for r in envelope.runs], results, origin)


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
    is skipped. Every check runs before the first write, and everything is written in one
    transaction: a failure or a kill midway leaves the database exactly as it was."""
    with store.transaction() as tx:
        present = tx.machines([r.id for r in bundle.runs])
        for i, run in enumerate(bundle.runs):
            # clipped like the bundle's, so a run stored before clipping still matches
            if run.id in present and clip_value(present[run.id], NAME_CHARS) != run.machine:
                raise UsageError(f"{bundle.origin}: runs[{i}].id: run {run.id!r} is already stored in "
                                 f"{store.url} with a different machine; refusing to mix them")
        stored = {result_identity(r) for run_id in present for r in tx.list(run_id=run_id)}
        new_runs = [r for r in bundle.runs if r.id not in present]
        new_results = [r for r in bundle.results if result_identity(r) not in stored]
        for run in new_runs:
            tx.add_run(run.id, run.created_at, run.command, run.machine)
        for result in new_results:
            tx.add_result(result.model_copy(update={"id": None}))
    present_ids = [r.id for r in bundle.runs if r.id in present]
    return ImportOutcome([r.id for r in new_runs], present_ids, len(new_results),
                         len(bundle.results) - len(new_results))
