"""The max-batch search a recommendation reads is one made under the memory limit the
recommendation applies: the default (a share of the RAM available when the search ran) or its
--memory-limit. Searches under other limits are left out, and named (experiments/search_limits)."""

import pytest

from rigbench.analysis import recommend as rules
from rigbench.errors import UsageError
from rigbench.experiments import max_batch
from rigbench.experiments import recommend as experiment
from rigbench.experiments.recommend import recommend
from rigbench.experiments.search_limits import stored_limit
from rigbench.fingerprint import machine_fingerprint
from rigbench.spec import MaxBatchSearch, MeasureOptions
from rigbench.store import Store
from tests.unit.test_max_batch_record import search_run
from tests.unit.test_recommend_logic import trial

GIB = 2**30


def search(run, limit, source, *probes, created="2026-01-01T00:00:00+00:00"):
    """One stored CPU search under `limit` bytes, from `source` ("default", "given", or None for a
    search stored before its probes said), its (batch, status) probes in the order they ran."""
    measure = MeasureOptions.quick(min_steps=2, min_seconds=0.0, memory_limit_bytes=limit)
    asked = MaxBatchSearch(start=probes[0][0], max_batch=65536, tolerance=0.5, memory_limit=source)
    return [trial(b, 50.0 if status == "ok" else None, status=status, steps=2, measure=measure, kind="probe",
                  search=asked if source else None,
                  metrics={"capped_peak_mib": 100.0 + b / 8} if status == "ok" else None)
            .model_copy(update={"run_id": run, "created_at": created}) for b, status in probes]


# the 1 GiB search is older, the 2 GiB one newer: before, the newest complete one won whatever its limit
ONE = search("one", GIB, "given", (512, "ok"), (1024, "oom"), (768, "ok"))
TWO = search("two", 2 * GIB, "given", (1024, "ok"), (2048, "oom"), (1536, "ok"),
             created="2026-01-02T00:00:00+00:00")
DEFAULT = search("dflt", 3 * GIB, "default", (2048, "ok"), (4096, "oom"), (3072, "ok"))


def test_the_search_under_the_recommendations_limit_is_used_whatever_is_newer():
    assert stored_limit(ONE + TWO, "cpu", memory_limit_bytes=GIB).run_id == "one"
    assert stored_limit(ONE + TWO, "cpu", memory_limit_bytes=2 * GIB).run_id == "two"
    assert stored_limit(ONE + TWO + DEFAULT, "cpu").run_id == "dflt"  # the default's, not the newest
    assert stored_limit(ONE + TWO, "cpu") is None  # none made under the default
    assert stored_limit(ONE + TWO, "cpu", memory_limit_bytes=3 * GIB) is None


def test_the_batch_line_says_which_limit_and_which_searches_it_left_out():
    limit = stored_limit(ONE + TWO + DEFAULT, "cpu", memory_limit_bytes=GIB)
    text = rules.decide_batch([trial(64, 100.0)], "cpu", limit).text
    assert "under --memory-limit 1.0 GiB" in text
    assert "left out 2 searches under other limits: 2.0 GiB (run two), the default's 3.0 GiB (run dflt)" in text
    assert limit.row()["source"] == "--memory-limit" and limit.row()["limit_bytes"] == GIB
    default = rules.decide_batch([trial(64, 100.0)], "cpu", stored_limit(ONE + DEFAULT, "cpu")).text
    assert "under the default memory limit (3.0 GiB" in default


def test_a_search_stored_before_probes_said_reads_its_runs_command():
    """The 1 GiB and 2 GiB searches of an older database: their runs' commands say --memory-limit."""
    old_one = search("one", GIB, None, (512, "ok"), (1024, "oom"), (768, "ok"))
    old_two = search("two", 2 * GIB, None, (1024, "ok"), (2048, "oom"), (1536, "ok"),
                     created="2026-01-02T00:00:00+00:00")
    commands = {"one": "rigbench max-batch mlp --memory-limit 1GiB", "two": "rigbench max-batch mlp --memory-limit=2GiB"}
    assert stored_limit(old_one + old_two, "cpu", commands=commands) is None
    assert stored_limit(old_one + old_two, "cpu", memory_limit_bytes=GIB, commands=commands).run_id == "one"
    # a run of recommend itself searched under the default
    assert stored_limit(old_one, "cpu", commands={"one": "rigbench recommend mlp"}).run_id == "one"


def test_a_gpu_search_is_under_the_devices_memory_whatever_the_cpus_limit():
    probes = [r.model_copy(update={"spec": r.spec.model_copy(update={"device": "cuda:0", "measure": MeasureOptions.quick(
        min_steps=2, min_seconds=0.0)})}) for r in ONE]
    assert stored_limit(probes, "cuda:0").run_id == "one"
    assert stored_limit(probes, "cuda:0", memory_limit_bytes=2 * GIB).run_id == "one"


def test_a_search_stores_where_its_limit_came_from(tmp_path, monkeypatch):
    given, stored = search_run(str(tmp_path / "mb.db"), monkeypatch, tolerance=0.0)
    assert {r.spec.search.memory_limit for r in stored} == {"given"}
    monkeypatch.setattr(max_batch, "available_memory", lambda: 4 * GIB)
    outcome = max_batch.find_max_batch("mlp", "cpu", start=8, db=str(tmp_path / "mb.db"))
    assert outcome.limit_bytes == 2 * GIB
    assert {r.spec.search.memory_limit for r in outcome.probes} == {"default"}


def stored_db(tmp_path, *searches) -> str:
    db = str(tmp_path / "rec.db")
    store = Store(db)
    for run in dict.fromkeys(r.run_id for s in searches for r in s):
        store.add_run(run, "2026-01-01T00:00:00+00:00", "rigbench max-batch mlp", machine_fingerprint())
    store.add_run("s", "2026-01-01T00:00:00+00:00", "rigbench run mlp", machine_fingerprint())
    for r in [trial(64, 100.0).model_copy(update={"run_id": "s"})] + [r for s in searches for r in s]:
        store.add_result(r.model_copy(update={"id": None}))
    return db


def test_no_run_says_what_it_lacks_under_the_limit_and_what_the_stored_ones_are(tmp_path):
    db = stored_db(tmp_path, ONE, TWO)
    outcome = recommend("mlp", devices=["cpu"], batch_sizes=[64], run_missing=False, db=db)
    assert outcome.missing[0] == ("max-batch on cpu under the default memory limit (stored searches are under "
                                  "other limits: 1.0 GiB (run one), 2.0 GiB (run two); recommend with "
                                  "--memory-limit 2GiB reads run two's)")
    capped = recommend("mlp", devices=["cpu"], batch_sizes=[64], run_missing=False, memory_limit_bytes=GIB, db=db)
    batch = next(line for line in capped.lines if line.decision == "batch_size")
    assert batch.numbers["max_batch"]["run_id"] == "one" and "under --memory-limit 1.0 GiB" in batch.text


def test_a_missing_search_runs_under_the_recommendations_limit(tmp_path, monkeypatch):
    db = stored_db(tmp_path, ONE)
    asked = {}

    def find(*_a, **k):
        asked.update(k)
        raise KeyboardInterrupt  # stop here: what it was asked is the test
    monkeypatch.setattr(experiment.max_batch, "find_max_batch", find)
    with pytest.raises(KeyboardInterrupt):
        recommend("mlp", devices=["cpu"], batch_sizes=[64], memory_limit_bytes=2 * GIB, db=db)
    assert asked["memory_limit_bytes"] == 2 * GIB
    with pytest.raises(UsageError, match="--memory-limit caps host memory and applies to the CPU only"):
        recommend("mlp", devices=["cuda:0"], run_missing=False, memory_limit_bytes=GIB, db=db)
