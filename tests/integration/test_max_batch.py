"""max-batch on the CPU under a memory limit, with real probe processes: it finds a batch
that runs, and the probe just above it failed with `oom`."""

import pytest

from rigbench.experiments.max_batch import MIB, find_max_batch
from rigbench.experiments.search_limits import stored_limit
from rigbench.experiments.sweep import spec_key
from rigbench.spec import MaxBatchSearch
from rigbench.store import Store
from tests.conftest import framework_rss_mib

pytest.importorskip("torch")
pytestmark = pytest.mark.timeout(300)


def test_finds_the_largest_batch_under_a_memory_limit(tmp_path, monkeypatch):
    db = str(tmp_path / "mb.db")
    # One thread: the cap counts address space, and on a 16-core machine the OpenMP threads'
    # stacks alone exhausted a tight cap (libgomp could not start them), whatever the batch.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    seen = []
    # A cnn trial holds ~230 MiB before its cap (CPU torch imported, the model counted) and
    # needs ~100 MiB more plus ~0.4-0.6 MiB per sample; the cap counts address space, so 500 MiB
    # held batch 128 but not 256: probes 128, 256 (oom), 192, and 256 - 192 <= 0.5 * 192 ends
    # the search. The cap is set over what the child reports holding (a CUDA build of torch
    # holds twice as much). The assertions hold wherever the boundary falls.
    limit = int(framework_rss_mib("cnn") + 270) * MIB
    outcome = find_max_batch("cnn", "cpu", memory_limit_bytes=limit, start=128,
                             tolerance=0.5, db=db, on_probe=seen.append)
    statuses = {r.spec.batch_size: r.status for r in outcome.probes}
    assert outcome.stopped is None and not outcome.interrupted, statuses
    assert set(statuses.values()) <= {"ok", "oom"}, outcome.probes[-1].error

    assert outcome.largest_ok is not None and statuses[outcome.largest_ok] == "ok"
    assert outcome.smallest_oom is not None and statuses[outcome.smallest_oom] == "oom"
    assert outcome.smallest_oom > outcome.largest_ok
    assert not [b for b in statuses if outcome.largest_ok < b < outcome.smallest_oom], \
        "the oom probe is the next one probed above the largest that ran"
    assert outcome.smallest_oom - outcome.largest_ok <= max(1, 0.5 * outcome.largest_ok)

    oom = next(r for r in outcome.probes if r.spec.batch_size == outcome.smallest_oom)
    assert oom.error and oom.spec.measure.memory_limit_bytes == limit
    assert outcome.limit_bytes == limit and outcome.memory_metric == "capped_peak_mib"
    assert outcome.recommended is not None and 1 <= outcome.recommended <= outcome.largest_ok
    assert outcome.reason

    # every probe was stored under one run, in order, and reported as it finished
    stored = Store(db).list(run_id=outcome.run_id)
    assert [(r.spec.batch_size, r.status) for r in stored] == list(statuses.items())
    assert [spec_key(r.spec) for r in seen] == [spec_key(r.spec) for r in stored]
    # each says what its search was asked, so a reader can tell that it ended by its own rule
    # (and under --memory-limit: a recommendation under another limit leaves it out)
    asked = MaxBatchSearch(start=128, max_batch=65536, tolerance=0.5, leap=8, memory_limit="given")
    assert all(r.spec.search == asked for r in stored)
    read = stored_limit(stored, "cpu", limit)
    assert stored_limit(stored, "cpu") is None
    assert (read.unfinished, read.tolerance, outcome.to_dict()["complete"]) == (None, 0.5, True)
    # probes are a kind of their own: never a speed trial
    assert {r.spec.kind for r in stored} == {"probe"}
    assert [r.id for r in Store(db).list(kind="probe")] == [r.id for r in stored]
    assert Store(db).list(kind="speed") == []

    ok = [r for r in outcome.probes if r.status == "ok"]
    if len({r.spec.batch_size for r in ok}) >= 2:  # two points make a line
        assert outcome.per_sample_bytes > 0
        # the fitted line passes within 25% of every ok probe's measured peak of what the cap
        # counts, which never exceeds the cap (RLIMIT_AS refuses any mapping past it)
        for r in ok:
            modelled = outcome.fixed_bytes + outcome.per_sample_bytes * r.spec.batch_size
            assert modelled == pytest.approx(r.metrics.capped_peak_mib * MIB, rel=0.25)
            assert r.metrics.capped_peak_mib * MIB <= limit


def test_a_limit_below_the_framework_stops_at_the_first_probe_and_says_why(tmp_path):
    """No batch fits a cap below what the framework holds on import: one probe, not a bisection
    down to batch 1, and the reason is the child's own words."""
    outcome = find_max_batch("mlp", "cpu", memory_limit_bytes=8 * MIB, start=8, db=str(tmp_path / "mb.db"))
    assert [(r.spec.batch_size, r.status) for r in outcome.probes] == [(8, "oom")]
    assert outcome.recommended is None and outcome.largest_ok is None
    assert "is below what the framework alone takes" in outcome.reason and "raise --memory-limit" in outcome.reason
