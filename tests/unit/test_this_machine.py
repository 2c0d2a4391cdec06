"""This machine's results in a shared database: chosen by their runs' fingerprints before any
result is read (store/this_machine.split_runs), the same results, in the same order, as
keeping this machine's of every stored result (split_by_machine), on both backends."""

from rigbench.fingerprint import this_machine_identity
from rigbench.spec import Result, TrialSpec
from rigbench.store import Store
from rigbench.store.this_machine import other_machines_count, split_by_machine, this_machine_results


def _result(run_id: str, batch: int) -> Result:
    return Result(run_id=run_id, created_at="2026-01-01T00:00:00+00:00", status="ok",
                  spec=TrialSpec(workload="mlp", batch_size=batch), step_times_s=[0.1, 0.11])


def test_this_machines_results_are_those_of_its_runs_in_stored_order(db_url):
    store = Store(db_url)
    here = this_machine_identity()
    store.add_run("mine1", "2026-01-02T00:00:00+00:00", "rigbench run", here)
    store.add_run("theirs", "2026-01-01T00:00:00+00:00", "rigbench run", {**here, "hostname": "node07"})
    store.add_run("mine2", "2026-01-03T00:00:00+00:00", "rigbench run", here)
    # two runs of this machine storing at once interleave their ids; the other machine's between
    for run_id, batch in [("mine2", 1), ("theirs", 2), ("mine1", 3), ("mine2", 4), ("theirs", 5)]:
        store.add_result(_result(run_id, batch))
    mine = this_machine_results(store)
    assert [(r.run_id, r.spec.batch_size) for r in mine] == [("mine2", 1), ("mine1", 3), ("mine2", 4)]
    kept, left = split_by_machine(store, store.list())
    assert [r.id for r in mine] == [r.id for r in kept] and all(r.step_times_s == [] for r in mine)
    assert other_machines_count(store) == left == 2


def test_results_of_many_runs_are_read_in_bounded_lists(db_url):
    store = Store(db_url)
    store.add_run("a", "2026-01-01T00:00:00+00:00", "rigbench run", {})
    store.add_run("b", "2026-01-01T00:00:00+00:00", "rigbench run", {})
    store.add_result(_result("b", 1))
    store.add_result(_result("a", 2))
    # 1,200 run ids (three IN lists of 500), the stored ones in different lists, one twice
    ids = ["b"] + [f"none{i}" for i in range(1198)] + ["a", "b"]
    assert [r.spec.batch_size for r in store.of_runs(ids)] == [1, 2]
    assert store.of_runs([]) == []
