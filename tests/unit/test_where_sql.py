"""`--where` in SQL: its exact keys filter the trials table before any row is read (a fleet's
database), and what every command gets is what where_matches keeps of every stored result,
on both backends."""

from __future__ import annotations

import pytest

from rigbench import api
from rigbench.cli.common import listed_results
from rigbench.errors import UsageError
from rigbench.spec import Result
from rigbench.store import Store
from tests.unit.test_store import make_result

WHERES = [
    ["framework=jax"],
    ["batch_size=64", "batch_size=0032"],  # either value; a number as written
    ["status=crash", "framework=torch"],
    ["workload=cnn", "precision=fp32", "device=cpu"],
    ["device_name=xeon", "batch_size=32"],  # a part of a name: in Python, after SQL's batch_size
    ["framework=mxnet"],
    ["world_size=2"],  # the data-parallel trials (was refused: not a key)
    ["world_size=01", "framework=jax"],
]


def _result(run_id: str, framework: str, batch: int, status: str = "ok") -> Result:
    r = make_result(run_id, status, **({"samples_per_s": 100.0} if status == "ok" else {}))
    spec = r.spec.model_copy(update={"framework": framework, "batch_size": batch,
                                     "world_size": 2 if (framework, status) == ("torch", "crash") else 1})
    return r.model_copy(update={"spec": spec, "device_name": "Intel Xeon" if batch == 32 else None})


@pytest.fixture
def store(db_url) -> Store:
    store = Store(db_url)
    for run_id in ("r1", "r2"):
        store.add_run(run_id, "2026-01-01T00:00:00+00:00", "rigbench run", {})
    for run_id, framework, batch, status in [("r1", "torch", 32, "ok"), ("r2", "jax", 64, "ok"),
                                             ("r1", "jax", 32, "crash"), ("r2", "torch", 64, "crash"),
                                             ("r1", "torch", 64, "ok"), ("r2", "jax", 32, "ok")]:
        store.add_result(_result(run_id, framework, batch, status))
    return store


def _kept(store: Store, where: list[str], run_id: str | None = None) -> list[int | None]:
    """The ids where_matches keeps of every stored result: what the commands gave before SQL filtered."""
    accepted = api.parse_where(where)
    return [r.id for r in store.list(run_id=run_id) if api.where_matches(r, accepted)]


@pytest.mark.parametrize("where", WHERES)
def test_selected_and_listed_results_are_those_where_matches_keeps(store, where):
    kept = _kept(store, where)
    try:
        assert [r.id for r in api.select_results(store, where=where)] == kept
    except UsageError as exc:
        assert kept == [] and "match" in str(exc)
    for limit in (1, 2, 50):
        rows, total = listed_results(store, None, None, None, limit, where)
        assert [r.id for r in rows] == kept[-limit:] and total == len(kept)


def test_world_size_picks_the_data_parallel_trials(store):
    assert [(r.spec.framework, r.spec.world_size) for r in api.select_results(store, where=["world_size=2"])] == [
        ("torch", 2)]
    assert len(api.select_results(store, where=["world_size=1"])) == 5
    with pytest.raises(UsageError, match="world_size must be a whole number"):
        api.parse_where(["world_size=two"])


def test_a_run_with_results_none_of_which_match_is_no_missing_run(store):
    assert _kept(store, ["framework=jax"], "r1") != []
    with pytest.raises(UsageError, match=r"no results in runs r1 .* match --where framework=jax --where batch_size=64"):
        api.select_results(store, ["r1"], ["framework=jax", "batch_size=64"])
    with pytest.raises(UsageError, match="no results stored for --run 'r9'"):
        api.select_results(store, ["r9"], ["framework=jax"])


def test_any_of_and_a_plain_filter_on_one_column_must_both_hold(store):
    assert store.list(status="ok", any_of={"status": {"crash"}}) == []
    assert store.count(status="ok", any_of={"status": {"ok", "crash"}}) == 4
    assert [r.spec.framework for r in store.list(any_of={"framework": {"jax"}, "batch_size": {32}})] == ["jax", "jax"]
    with pytest.raises(TypeError, match="unknown filter"):
        store.list(any_of={"device_name": {"xeon"}})
