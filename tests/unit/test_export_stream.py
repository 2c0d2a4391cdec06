"""`results export` streams: it reads the store a page of rows at a time (Store.stream) and writes
each result as it is read, so its memory does not grow with a fleet's database. Its output is
the text the whole-list export wrote (byte for byte: the references below are that code), an
unreadable row in the middle is skipped and said as before, a bundle still imports, and an
export stopped halfway leaves the old file as it was. Real SQLite files (and PostgreSQL where
the test server is set up) through the real store."""

from __future__ import annotations

import csv
import io
import json
import logging
import math
import os
import threading

import pytest
from sqlalchemy import event, text
from typer.testing import CliRunner

from rigbench import cli
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store, bundle, rows
from rigbench.store.bundle_calibrations import exported_calibrations
from rigbench.store.export import _cell, replacing
from tests.databases import connection

RUNS = ("run1", "run2", "run3")
PER_RUN = 70
CHUNK = 7  # pages several times over each run and over the whole database
MACHINE = {"hostname": "box", "cpu_model": "Box CPU", "gpus": []}


def make(run_id: str, i: int) -> Result:
    crashed = i % 9 == 4
    spec = TrialSpec(workload=("mlp", "cnn")[i % 2], device="cpu", batch_size=2 ** (i % 5 + 3))
    return Result(run_id=run_id, created_at=f"2026-01-0{RUNS.index(run_id) + 1}T00:{i // 60:02d}:{i % 60:02d}+00:00",
                  spec=spec, status="crash" if crashed else "ok", device_name="Box CPU \u00e9",
                  error="boom\r=1 <x>" if crashed else None, threads=2,
                  metrics=Metrics() if crashed else Metrics(samples_per_s=100.0 + i, samples_per_s_ci=(99.0 + i, 101.5 + i)),
                  step_times_s=[0.01 * (1 + k % 3) for k in range(i % 6)],
                  tracker_samples=[{"t": float(k), "rss_bytes": 1e6 + k} for k in range(i % 3)],
                  software={"torch": "2.13.0"})


@pytest.fixture()
def filled(db_url) -> str:
    """Three runs of PER_RUN results each (crashes among them), stored as a run stores them."""
    store = Store(db_url)
    for run_id in RUNS:
        store.add_run(run_id, f"2026-01-0{RUNS.index(run_id) + 1}T00:00:00+00:00", "rigbench run mlp", MACHINE)
        with store.transaction() as tx:
            for i in range(PER_RUN):
                tx.add_result(make(run_id, i))
    return db_url


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(rows, "STREAM_CHUNK", CHUNK)


def invoke(*args: str, code: int = 0):
    done = CliRunner().invoke(cli.app, list(args), env={"COLUMNS": "200"})
    assert done.exit_code == code, done.output
    return done


# The whole-list export as it was written before it streamed: the references.

def old_json(results: list[Result]) -> str:
    return json.dumps([r.row() for r in results], indent=2)


def old_csv(results: list[Result]) -> str:
    table = [r.row() for r in results]
    if not table:
        return ""
    line, out = io.StringIO(), io.StringIO()
    writer = csv.DictWriter(line, fieldnames=list(table[0]), lineterminator="\r\n")
    for cells in [None, *table]:
        line.seek(0)
        line.truncate()
        writer.writeheader() if cells is None else writer.writerow({k: _cell(v) for k, v in cells.items()})
        out.write(line.getvalue().removesuffix("\r\n") + "\n")
    return out.getvalue()


def old_bundle(store: Store, exported_at: str) -> str:
    results = store.full(store.list())
    calibrated = exported_calibrations(store, None)
    used = list(dict.fromkeys([r.run_id for r in results] + [c["run_id"] for c in calibrated]))
    data = {"format": bundle.FORMAT, "schema_version": 1, "exported_at": exported_at,
            "rigbench_version": bundle.__version__,
            "runs": [r.model_dump() for r in bundle.stored_runs(store, used)],
            "results": [r.model_dump(mode="json") for r in results]}
    return json.dumps(data, indent=1) + "\n"


def test_the_streamed_export_is_the_text_the_whole_list_export_wrote(filled, tmp_path, monkeypatch):
    monkeypatch.setattr(bundle, "now_iso", lambda: "2026-02-02T00:00:00+00:00")
    store = Store(filled)
    listed = store.list()
    assert len(listed) == len(RUNS) * PER_RUN
    for fmt, expected in (("json", old_json(listed)), ("csv", old_csv(listed)),
                          ("bundle", old_bundle(store, "2026-02-02T00:00:00+00:00"))):
        path = tmp_path / f"all.{fmt}"
        done = invoke("results", "export", "--format", fmt, "-o", str(path), "--db", filled)
        assert path.read_bytes().decode() == expected, fmt  # read_text would make a cell's "\r" a "\n"
        assert f"wrote {len(listed)} results to {path}" in done.stderr
        # on stdout: the same text, a line feed after the JSON array
        assert invoke("results", "export", "--format", fmt, "--db", filled).stdout == expected + "\n" * (fmt == "json")
    one = [r for r in listed if r.run_id == "run2"]
    assert invoke("results", "export", "--run", "run2", "--db", filled).stdout == old_json(one) + "\n"
    assert invoke("results", "export", "--format", "csv", "--run", "run2", "--db", filled).stdout == old_csv(one)
    assert [r["id"] for r in json.loads((tmp_path / "all.bundle").read_text())["results"]] == [r.id for r in listed]


def test_the_export_reads_the_store_a_page_at_a_time(filled):
    store = Store(filled)
    ids = [r.id for r in store.list()]
    pages = []
    event.listen(store.engine, "before_cursor_execute",
                 lambda conn, cursor, statement, *_: pages.append(statement) if "LIMIT" in statement.upper() else None)
    stream = store.stream(raw=True)
    first = next(stream)  # one page read: the results are written while the rest wait in the database
    assert first.id == ids[0] and len(pages) == 1
    second = next(stream)
    assert first.step_times_s == [] and second.step_times_s == [0.01]  # raw samples read with them
    assert [first.id, second.id, *(r.id for r in stream)] == ids
    assert len(pages) == math.ceil(len(ids) / CHUNK) and len(ids) > 10 * CHUNK
    assert [r.id for r in store.stream(run_id="run3")] == [r.id for r in store.list(run_id="run3")]


def test_a_result_stored_while_the_export_runs_is_left_for_the_next_one(filled):
    store = Store(filled)
    stream = store.stream()
    next(stream)
    store.add_result(make("run3", 99))  # after the first page: as one list() would not have seen it
    assert len(list(stream)) == len(RUNS) * PER_RUN - 1


def test_unreadable_rows_mid_stream_are_skipped_and_said_once(filled, tmp_path, caplog):
    store = Store(filled)
    listed = store.list()
    bad = [listed[40], listed[150]]  # in different pages, neither the first nor the last
    with connection(filled) as conn:
        conn.execute(text("update trials set result_json = '{not json' where id = :id"), {"id": bad[0].id})
        conn.execute(text("update trial_samples set step_times_json = '[0.1,' where trial_id = :id"), {"id": bad[1].id})
    with caplog.at_level(logging.WARNING, logger="rigbench.store"):
        exported = invoke("results", "export", "--db", filled).stdout
        (warning,) = [r.getMessage() for r in caplog.records]  # one line for the flat rows: only the JSON is bad
        assert f"skipped 1 stored result(s) in {store.url} that cannot be read: trial {bad[0].id} (" in warning
        caplog.clear()
        invoke("results", "export", "--format", "bundle", "-o", str(tmp_path / "b.json"), "--db", filled)
        (warning,) = [r.getMessage() for r in caplog.records]
    assert f"skipped 2 stored result(s) in {store.url} that cannot be read: trial {bad[0].id} (" in warning
    assert "and 1 more" in warning
    assert exported == old_json([r for r in listed if r.id != bad[0].id]) + "\n"
    kept = json.loads((tmp_path / "b.json").read_text())["results"]
    assert [r["id"] for r in kept] == [r.id for r in listed if r.id not in (bad[0].id, bad[1].id)]


def test_an_exported_bundle_imports_whole(filled, tmp_path):
    path = tmp_path / "b.json"
    invoke("results", "export", "--format", "bundle", "-o", str(path), "--db", filled)
    target = str(tmp_path / "target.db")
    assert f"{len(RUNS) * PER_RUN} results" in invoke("results", "import", str(path), "--db", target).stdout
    source, copy = Store(filled).full(Store(filled).list()), Store(target).full(Store(target).list())
    assert [r.model_dump(exclude={"id"}) for r in copy] == [r.model_dump(exclude={"id"}) for r in source]


def test_an_export_stopped_halfway_leaves_the_old_file_as_it_was(filled, tmp_path, monkeypatch):
    path = tmp_path / "all.json"
    path.write_text("the old export")
    calls = 0
    real_row = Result.row

    def failing_row(self):
        nonlocal calls
        calls += 1
        if calls == 100:  # pages in: some results are written already
            raise KeyboardInterrupt
        return real_row(self)

    monkeypatch.setattr(Result, "row", failing_row)
    done = CliRunner().invoke(cli.app, ["results", "export", "-o", str(path), "--db", filled])
    assert done.exit_code != 0 and calls == 100
    assert path.read_text() == "the old export"
    assert [name for name in os.listdir(tmp_path) if name != "store.db"] == ["all.json"]  # no part file left


def test_an_output_that_is_not_a_regular_file_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    with replacing(str(fifo)) as fh:
        fh.write("[]")
    reader.join(timeout=10)
    assert got == ["[]"] and fifo.is_fifo()  # not replaced by a regular file
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    with replacing(str(tmp_path / "link.json")) as fh:
        fh.write("new")
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "real.json").read_text() == "new"


def test_an_unknown_run_is_refused_before_the_output_is_touched(filled, tmp_path):
    path = tmp_path / "all.json"
    path.write_text("the old export")
    for fmt in ("json", "csv", "bundle"):
        done = invoke("results", "export", "--format", fmt, "--run", "nope", "-o", str(path), "--db", filled, code=2)
        assert "nope" in done.output and path.read_text() == "the old export"
