"""A max-batch search's own record: every probe stores what the search was asked (start, --max,
--tolerance), so a reader can tell a search that ended by its own stopping rule at a coarse
tolerance from one stopped mid-bisection (Ctrl-C, a timeout, a killed process). The search runs
here with a fake runner that stores each probe as run_trials does: no child process."""

import logging

import pytest

from rigbench.analysis import recommend as rules
from rigbench.cli.console import out
from rigbench.cli.max_batch import _print_max_batch
from rigbench.experiments import max_batch
from rigbench.experiments.search_limits import limit_of, stored_limit
from rigbench.runner.session import SessionOutcome
from rigbench.spec import MeasureOptions, Metrics, Result, TrialSpec
from rigbench.store import Store
from rigbench.timestamps import now_iso
from tests.unit.test_recommend_logic import trial

#: One measured batch, so that the batch line is made and names its max-batch search.
MEASURED = [trial(64, 100.0)]

MIB = 2**20
LIMIT = 1024 * MIB


def fits(batch: int) -> bool:
    """The fake machine: batches up to 1000 fit (300 MiB + 0.5 MiB per sample)."""
    return batch <= 1000


def search_run(db: str, monkeypatch, tolerance: float, interrupt_at: int | None = None, start: int = 8,
               as_stored: bool = False):
    """find_max_batch with a runner that stores each probe as it ends; Ctrl-C during the
    `interrupt_at`-th probe (1-based), which, as in a real search, is then not stored; or, with
    `as_stored`, as it was stored (the session holds it until then: it is stored and returned)."""
    calls: list[int] = []

    def run_trials(specs, store, run_id, **_):
        (spec,) = specs
        calls.append(spec.batch_size)
        if len(calls) == interrupt_at and not as_stored:
            return SessionOutcome(interrupted=True, stopped=spec)
        ok = fits(spec.batch_size)
        result = Result(run_id=run_id, created_at=now_iso(), spec=spec, status="ok" if ok else "oom",
                        metrics=Metrics(capped_peak_mib=300.0 + 0.5 * spec.batch_size if ok else None))
        store.add_result(result)
        return SessionOutcome(results=[result], interrupted=len(calls) == interrupt_at)

    monkeypatch.setattr(max_batch, "run_trials", run_trials)
    outcome = max_batch.find_max_batch("mlp", "cpu", memory_limit_bytes=LIMIT, start=start,
                                       tolerance=tolerance, db=db)
    return outcome, Store(db).list(run_id=outcome.run_id)


def printed(outcome) -> str:
    with out.capture() as captured:
        _print_max_batch(outcome, db=None)
    return captured.get()


def test_every_probe_stores_the_search_it_belongs_to(tmp_path, monkeypatch):
    # 8, 16 ok; the line through them puts the 1 GiB limit at batch 1448, so x8 (128, under
    # 1448 / 2) and x4 (512); then 1024 oom, 768 and 896 ok: 1024 - 896 = 128 <= 0.25 x 896 ends it
    outcome, stored = search_run(str(tmp_path / "mb.db"), monkeypatch, tolerance=0.25)
    assert [r.spec.batch_size for r in stored] == [8, 16, 128, 512, 1024, 768, 896]
    assert {r.spec.model_dump().get("search") is not None for r in stored} == {True}
    asked = {"start": 8, "max_batch": 65536, "tolerance": 0.25, "leap": 8, "memory_limit": "given"}  # --memory-limit set its cap
    assert [r.spec.model_dump()["search"] for r in stored[:1]] == [asked]
    data = outcome.to_dict()
    assert data["search"] == asked
    assert data["complete"] is True and data["unfinished"] is None


def test_a_finished_coarse_search_is_complete_to_its_tolerance(tmp_path, monkeypatch):
    """The gap left (896..1024) is wider than one sample: the stored tolerance says it is the
    search's own end, and both max-batch and recommend say complete, to that tolerance."""
    outcome, stored = search_run(str(tmp_path / "mb.db"), monkeypatch, tolerance=0.25)
    limit = stored_limit(stored, "cpu", LIMIT)
    assert (limit.largest_ok, limit.smallest_oom, limit.unfinished, limit.tolerance) == (896, 1024, None, 0.25)
    line = rules.decide_batch(MEASURED, "cpu", limit)
    assert "complete to its --tolerance 0.25" in line.text and "incomplete" not in line.text
    assert line.numbers["max_batch"]["tolerance"] == 0.25
    assert ("search: complete to --tolerance 0.25: smallest oom - largest ok = 128, within "
            "max(1, 0.25 x 896) = 224") in printed(outcome)


def test_a_search_stopped_mid_bisection_is_incomplete_with_the_range_left(tmp_path, monkeypatch):
    """Ctrl-C during the probe of 896 leaves 768 ok, 1024 oom: a gap (256) below the largest ok,
    which the probes alone read as a coarse --tolerance. The stored tolerance (0.25) says the
    search had 896 still to probe: incomplete, and an older complete search is preferred."""
    db = str(tmp_path / "mb.db")
    complete, _ = search_run(db, monkeypatch, tolerance=0.0)
    stopped, stored = search_run(db, monkeypatch, tolerance=0.25, interrupt_at=7)
    assert stopped.interrupted and [r.spec.batch_size for r in stored][-2:] == [1024, 768]
    left = "it was stopped with the batches between 768 and 1024 untried (its --tolerance 0.25 would have probed 896 next)"
    alone = stored_limit(stored, "cpu", LIMIT)
    assert (alone.largest_ok, alone.smallest_oom, alone.unfinished) == (768, 1024, left)
    assert limit_of(stopped).unfinished == left
    line = rules.decide_batch(MEASURED, "cpu", alone)
    assert f"an incomplete search (run {stopped.run_id}): {left}" in line.text
    both = stored_limit(Store(db).list(), "cpu", LIMIT)
    assert (both.run_id, both.unfinished, both.largest_ok, both.smallest_oom) == (complete.run_id, None, 1000, 1001)
    assert stopped.to_dict()["complete"] is False and stopped.to_dict()["unfinished"] == left
    assert f"search: incomplete: {left}" in printed(stopped)


def test_a_search_stopped_while_growing_says_so_and_caps_nothing(tmp_path, monkeypatch):
    stopped, stored = search_run(str(tmp_path / "mb.db"), monkeypatch, tolerance=0.0, interrupt_at=3)
    assert [r.spec.batch_size for r in stored] == [8, 16]
    limit = stored_limit(stored, "cpu", LIMIT)
    # the search's own rule, replayed with the line through 8 and 16, had 128 next (a leap)
    assert limit.unfinished == "it was stopped before probing batch 128 (its --max was 65536)"
    assert limit.cap is None and "so it caps nothing" in rules.decide_batch(MEASURED, "cpu", limit).text


def test_a_probe_stored_as_the_interrupt_came_counts_and_ends_the_search(tmp_path, monkeypatch):
    """Ctrl-C as the third probe (128) was stored: the search stops there with it among its
    probes (it was dropped from them, though stored, and 128's fit left out of the line)."""
    stopped, stored = search_run(str(tmp_path / "mb.db"), monkeypatch, tolerance=0.0, interrupt_at=3, as_stored=True)
    assert stopped.interrupted
    assert [r.spec.batch_size for r in stopped.probes] == [r.spec.batch_size for r in stored] == [8, 16, 128]
    assert stopped.largest_ok == 128


def old_search(run, *probes):
    """A search stored before probes carried their search: (batch, status) in the order they ran."""
    measure = MeasureOptions.quick(min_steps=2, min_seconds=0.0, memory_limit_bytes=LIMIT)
    return [Result(id=i, run_id=run, created_at=now_iso(), status=status,
                   spec=TrialSpec(kind="probe", workload="mlp", batch_size=b, measure=measure),
                   metrics=Metrics(capped_peak_mib=300.0 + 0.5 * b if status == "ok" else None))
            for i, (b, status) in enumerate(probes, 1)]


def test_an_old_search_falls_back_to_its_probes_and_says_so_where_it_matters():
    """Without a stored tolerance, a gap wider than one sample but below the largest ok may be a
    coarse tolerance or a stop mid-bisection: read as complete, as before, and said to be a guess."""
    coarse = stored_limit(old_search("a", (512, "ok"), (1024, "oom"), (768, "ok")), "cpu")
    assert (coarse.unfinished, coarse.tolerance) == (None, None)
    text = rules.decide_batch(MEASURED, "cpu", coarse).text
    assert ("complete as far as its probes show (stored without its --tolerance, so a search stopped "
            "mid-bisection would read the same)") in text
    exact = stored_limit(old_search("b", (512, "ok"), (1024, "oom"), (768, "ok"), (769, "oom")), "cpu")
    assert "as far as" not in rules.decide_batch(MEASURED, "cpu", exact).text  # one sample apart: done whatever it was asked
    doubling = stored_limit(old_search("c", (512, "ok"), (1024, "oom")), "cpu")
    assert doubling.unfinished == "it stopped before trying the batches between 512 and 1024"


def test_the_search_block_belongs_to_probes_only():
    probe = TrialSpec(kind="probe", workload="mlp", batch_size=8, search={"start": 8, "max_batch": 64, "tolerance": 0.0})
    assert probe.model_dump()["search"] == {"start": 8, "max_batch": 64, "tolerance": 0.0, "leap": 2,
                                            "memory_limit": None}  # stored before leaps: it doubled
    assert "search" not in dict(probe.config_key())  # what the search asked is not what the probe ran
    with pytest.raises(ValueError, match="search"):
        TrialSpec(workload="mlp", batch_size=8, search={"start": 8, "max_batch": 64, "tolerance": 0.0})
    with pytest.raises(ValueError):
        TrialSpec(kind="probe", workload="mlp", batch_size=8, search={"start": 8, "max_batch": 64, "tolerance": 1.0})


def test_a_limit_over_the_ram_available_is_warned_of_once(tmp_path, monkeypatch, caplog):
    """--memory-limit 1TiB on a 23 GiB VM was taken silently: the cap never binds, and a probe
    that outgrows the RAM is the kernel's to kill (a crash that stops the search)."""
    monkeypatch.setattr(max_batch, "available_memory", lambda: LIMIT // 2)
    with caplog.at_level(logging.WARNING, logger="rigbench.max_batch"):
        outcome, _ = search_run(str(tmp_path / "over.db"), monkeypatch, tolerance=0.5)
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "rigbench.max_batch"]
    assert warning.startswith("rigbench: warning: --memory-limit 1.0 GiB is more than the 512.0 MiB of RAM "
                              "available now") and warning.endswith("give at most 512MiB")
    assert outcome.limit_bytes == LIMIT and outcome.limit_source == "--memory-limit"  # the cap stays as given
    caplog.clear()
    monkeypatch.setattr(max_batch, "available_memory", lambda: LIMIT * 2)
    with caplog.at_level(logging.WARNING, logger="rigbench.max_batch"):
        search_run(str(tmp_path / "under.db"), monkeypatch, tolerance=0.5)
    assert not [r for r in caplog.records if r.name == "rigbench.max_batch"]
