"""Results bundles: every field of stored runs and results as one JSON file, to move them
between machines (`rigbench results export --format bundle`, `rigbench results import`).

    {"format": "rigbench-results", "schema_version": 1, "exported_at": ..., "rigbench_version": ...,
     "runs": [{"id", "created_at", "command", "machine"}],
     "results": [Result as JSON, raw step times and tracker samples included],
     "calibrations": [a device's measured peaks: store/bundle_calibrations.py; only when any]}

JSON only, never pickle: a bundle comes from another machine, so reading one must not run code.
An import checks the whole file before it opens the database (store/bundle_read.py, one result
at a time), and refuses the whole bundle when any part is wrong, so a bad file leaves the
database as it was: first the envelope (format, schema version, runs, each key once), then every result, which must validate as a Result (its spec bound by
rigbench.numlimits: finite numbers, integers the database holds) and follow
rigbench.result_rules (finite figures; an `ok` speed, probe or training trial has a throughput
above 0), with an `id` no other result of the bundle has; then every calibration
(store/bundle_calibrations.py). The refusal names each refused result
and why, e.g. `results[3].status: Input should be 'ok', 'oom', ...` (the first SHOWN,
then how many more). Text longer than rigbench.textlimits allows (a 50 MB error string) is stored
clipped, with its length noted in the text, and the import says which results were clipped.

Re-importing is safe: runs already stored (same id and machine) are not added again. A result
is the same trial as a stored one when its run, creation time and whole spec are
(`rows.trial_key`); with the same content too it is skipped and counted (a stored row whose text
is byte for byte what storing the result writes is that copy, known without decoding it; any
other row is decoded and compared as JSON values), with other content
(an edited or re-measured bundle) the import is refused: two versions of one trial would both
count in every comparison, and neither silently replacing the stored one nor adding a copy is
what a re-import means. A result with another spec is another trial and is added; a result
given twice in one bundle (joined by hand) is added once. Calibrations
follow the same rule (store/bundle_calibrations.py). An import is one transaction: all of it
lands, or nothing (a result refused against what is stored rolls back what came before it).
"""

from __future__ import annotations

import codecs
import io
import json
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from sqlalchemy import select

from rigbench import __version__
from rigbench.errors import UsageError
from rigbench.spec import SCHEMA_VERSION, Result
from rigbench.store.bundle_calibrations import exported_calibrations, insert_calibrations, new_calibrations
from rigbench.store.bundle_read import (
    FORMAT,
    SHOWN,
    BundleFile,
    Opener,
    RunRecord,
    digest,
    read_bundle,
    refusal,
    trial_digest,
)
from rigbench.store.calibrations import CalibrationRecord
from rigbench.store.db import Store, Transaction
from rigbench.store.export import json_pieces
from rigbench.store.machines import read_machine
from rigbench.store.rows import (
    column_text,
    read_results,
    stored_command,
    stored_digests,
    stored_keys,
    text_digest,
    warn_unreadable,
)
from rigbench.store.schema import runs
from rigbench.textlimits import NAME_CHARS, clip, clip_value
from rigbench.timestamps import now_iso

__all__ = ["BATCH", "FORMAT", "SHOWN", "Bundle", "BundleFile", "ImportOutcome", "RunRecord", "check_bundle",
           "dump_bundle", "export_bundle", "import_bundle", "load_bundle", "parse_bundle", "refusal",
           "stored_runs", "write_bundle"]


#: Results an import stores in one statement (Transaction.add_results).
BATCH = 100


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

    @property
    def count(self) -> int:
        return len(self.results)

    def each(self) -> Iterator[Result]:
        return iter(self.results)

    @property
    def repeated(self) -> set[bytes]:
        """trial_digest of each trial more than one result is of (as BundleFile.repeated)."""
        seen: set[bytes] = set()
        repeated: set[bytes] = set()
        for trial in map(trial_digest, self.results):
            (repeated if trial in seen else seen).add(trial)
        return repeated


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


def parse_bundle(text: str, origin: str = "bundle") -> Bundle:
    """Validate a bundle's text completely (bundle_read.read_bundle), its results kept."""
    return _kept(read_bundle(lambda: io.StringIO(text), origin, keep=True))


def _opener(path: str | Path) -> Opener:
    def open_() -> TextIO:
        try:
            return open(path, encoding="utf-8")
        except FileNotFoundError:
            raise UsageError(f"no such file: {path}") from None
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc}") from None
    return open_


def check_bundle(path: str | Path) -> BundleFile:
    """Read and validate a bundle file, one result at a time: what `import_bundle` takes to
    store a bundle of any size (its results are read again then, one at a time)."""
    return _read_file(path, keep=False)


def load_bundle(path: str | Path) -> Bundle:
    """Read and validate a bundle file, its results held in memory (compare, score)."""
    return _kept(_read_file(path, keep=True))


def _read_file(path: str | Path, keep: bool) -> BundleFile:
    try:
        return read_bundle(_opener(path), str(path), keep=keep)
    except UnicodeDecodeError:
        raise UsageError(f"cannot read {path}: {_not_utf8(path)}") from None


def _not_utf8(path: str | Path) -> str:
    """Why the file is not UTF-8, as Python says it with the position in the file (a file read
    in pieces says the position in the piece)."""
    decoder, done = codecs.getincrementaldecoder("utf-8")(), 0
    with open(path, "rb") as file:
        while True:
            piece = file.read(1 << 20)
            held = len(decoder.getstate()[0])  # the end of the piece before, not decoded yet
            try:
                decoder.decode(piece, final=not piece)
            except UnicodeDecodeError as exc:
                start, end = done - held + exc.start, done - held + exc.end
                what = (f"byte 0x{exc.object[exc.start]:02x} in position {start}" if end - start == 1
                        else f"bytes in position {start}-{end - 1}")
                return f"'utf-8' codec can't decode {what}: {exc.reason}"
            if not piece:
                return "not UTF-8 text"
            done += len(piece)


def _kept(checked: BundleFile) -> Bundle:
    return Bundle(checked.runs, checked.results or [], checked.origin, checked.notes, checked.calibrations)


def import_bundle(store: Store, bundle: Bundle | BundleFile) -> ImportOutcome:
    """Add a validated bundle's runs and results to `store`, the results as `bundle.each()`
    gives them (a BundleFile reads them from its file, one at a time); see the module docstring
    for what is skipped and what is refused. Everything is written in one transaction, rolled
    back when a result is refused against what is stored: a refusal, a failure or a kill
    midway leaves the database exactly as it was."""
    with store.transaction() as tx:
        present = tx.machines([r.id for r in bundle.runs])
        for i, run in enumerate(bundle.runs):
            # clipped like the bundle's, so a run stored before clipping still matches
            if run.id in present and clip_value(present[run.id], NAME_CHARS) != run.machine:
                raise UsageError(f"{bundle.origin}: runs[{i}].id: run {run.id!r} is already stored in "
                                 f"{store.url} with a different machine; refusing to mix them")
        stored = _StoredTrials(tx, list(present))
        new_runs = [r for r in bundle.runs if r.id not in present]
        for run in new_runs:  # before their results: a result's run_id must exist
            tx.add_run(run.id, run.created_at, run.command, run.machine)
        added = 0
        refused: list[str] = []
        pending: list[Result] = []  # stored BATCH at a time (Transaction.add_results): a few MB held
        repeated = bundle.repeated  # only a result of a trial another result of the bundle is of can be a copy
        in_bundle: set[bytes] = set()  # their contents: a copy in a hand-joined bundle lands once
        for i, result in enumerate(stored.said_after(bundle.each())):
            trial = trial_digest(result)
            # (not by trial_key alone: repeats of one spec can share a run and a second, with other figures)
            if trial in repeated:
                content = digest(_content(result))
                if content in in_bundle:
                    continue
                in_bundle.add(content)
            if stored.copy_of(result):
                continue  # what follows would find that stored row the same, without decoding it
            same = stored.of_trial(result, trial)
            if not same:
                if not refused:  # once one is refused nothing will land: only the rest's checks go on
                    pending.append(result.model_copy(update={"id": None}))
                    if len(pending) == BATCH:
                        tx.add_results(pending)
                        pending.clear()
                added += 1
                continue
            copies = stored.read_back(same)
            differences = [_difference(_content(c), _content(result)) for c in copies if c is not None]
            if differences and all(differences):
                refused.append(f"results[{i}]: trial {same[0]} of run {result.run_id} (same time and spec) is "
                               f"stored with other content ({differences[0]}): an edited or re-measured copy")
        if refused:  # raised inside the transaction: what was written is rolled back
            raise UsageError(f"{bundle.origin}: {refusal(refused, bundle.count)}")
        tx.add_results(pending)
        new_cals, cal_refusal = new_calibrations(tx.conn, bundle.calibrations, list(present))
        if cal_refusal:
            raise UsageError(f"{bundle.origin}: {cal_refusal}")
        insert_calibrations(tx.conn, new_cals)  # after their runs: a row's run_id must exist
    present_ids = [r.id for r in bundle.runs if r.id in present]
    return ImportOutcome([r.id for r in new_runs], present_ids, added, bundle.count - added, bundle.notes,
                         len(new_cals), len(bundle.calibrations) - len(new_cals))


class _StoredTrials:
    """The stored results of an import's runs that are already stored, each read only as far as
    telling which trial it is needs: a row whose texts are byte for byte what storing a bundle's
    result writes (rows.stored_digests, text_digest) reads back as that result (pydantic and json
    round trip; test_bundle checks odd values), so it is that trial and that content, undecoded;
    only a result without such a copy has its candidates (same run and created_at columns:
    rows.stored_keys) decoded for their specs. Decoding every stored row for its spec was most of
    a re-import. Rows that cannot be read are said as reading them all said them, per run."""

    def __init__(self, tx: Transaction, run_ids: list[str]):
        self._tx, self._run_ids = tx, run_ids
        self._keys = stored_keys(tx.conn, run_ids)
        self._texts = stored_digests(tx.conn, run_ids)
        self._trials: dict[int, bytes] = {}  # a decoded row's trial_digest
        self._unreadable: dict[int, str] = {}  # a row that cannot be read: why
        self._copies: set[int] = set()  # rows known by their text: readable

    def _candidates(self, result: Result) -> list[int]:
        return self._keys.get((result.run_id, column_text(result.created_at)), [])

    def copy_of(self, result: Result) -> bool:
        """Whether a stored row holds byte for byte what storing `result` writes."""
        candidates = self._candidates(result)
        mine = text_digest(result) if candidates else None  # None where the text rule does not hold
        found = [i for i in candidates if mine is not None and self._texts.get(i) == mine]
        self._copies.update(found)
        return bool(found)

    def of_trial(self, result: Result, trial: bytes) -> list[int]:
        """The readable stored rows of `result`'s trial (its `trial` digest), oldest first."""
        candidates = self._candidates(result)
        self._decode(candidates)
        return [i for i in candidates if self._trials.get(i) == trial]

    def read_back(self, ids: list[int]) -> list[Result | None]:
        """The stored results `ids` with their raw samples (Transaction.get); ValueError for one
        that cannot be read, after the warning reading every row gave before it."""
        try:
            return [self._tx.get(i) for i in ids]
        except ValueError:
            self.warn_unreadable()
            raise

    def said_after(self, results: Iterator[Result]) -> Iterator[Result]:
        """`results`, then the warning of the stored rows that cannot be read (also where the
        bundle's file was changed meanwhile: UsageError)."""
        try:
            yield from results
        except UsageError:
            self.warn_unreadable()
            raise
        self.warn_unreadable()

    def _decode(self, ids: list[int]) -> None:
        found, skipped = read_results(self._tx.conn, [i for i in ids if i not in self._trials
                                                      and i not in self._unreadable])
        self._trials.update((r.id, trial_digest(r)) for r in found if r.id is not None)
        self._unreadable.update(skipped)

    def warn_unreadable(self) -> None:
        """One warning per run for its rows that cannot be read: each row no copy accounts for is
        decoded, if it was not."""
        self._decode([i for ids in self._keys.values() for i in ids if i not in self._copies])
        run_of = {i: run for (run, _), ids in self._keys.items() for i in ids}
        for run_id in self._run_ids:
            warn_unreadable(sorted((i, why) for i, why in self._unreadable.items() if run_of[i] == run_id),
                            self._tx.url)


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
