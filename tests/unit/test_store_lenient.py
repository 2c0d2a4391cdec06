"""Stored rows are read leniently: unknown fields are dropped, and a row that still cannot be
read is skipped with one warning instead of failing the whole command."""

import json
import logging
import sqlite3

import pytest
from pydantic import ValidationError

from rigbench.errors import UsageError
from rigbench.metrics import Metrics
from rigbench.result_rules import non_finite_figure
from rigbench.spec import EpochRecord, Result, TrialSpec
from rigbench.store import Store


def _store_with_three_rows(tmp_path):
    path = tmp_path / "r.db"
    store = Store(str(path))
    store.add_run("r1", "t", "c", {})
    for batch in (8, 16, 32):
        store.add_result(Result(run_id="r1", created_at="t", status="ok",
                                spec=TrialSpec(workload="mlp", batch_size=batch)))
    con = sqlite3.connect(path)
    # row 1: written by a rigbench whose spec had an extra field, and whose measure options too
    data = json.loads(con.execute("select result_json from trials where id = 1").fetchone()[0])
    data["spec"]["gradient_accumulation"] = 4
    data["spec"]["measure"]["warmup_mode"] = "auto"
    data["metrics"]["joules"] = 12.5
    data["from_the_future"] = True
    # row 2: garbage; row 3: batch_size renamed to batch by some other version (now missing)
    bad = json.loads(con.execute("select result_json from trials where id = 3").fetchone()[0])
    bad["spec"]["batch"] = bad["spec"].pop("batch_size")
    con.executemany("update trials set result_json = ? where id = ?",
                    [(json.dumps(data), 1), ("{not json", 2), (json.dumps(bad), 3)])
    con.commit()
    con.close()
    return store


def test_unknown_fields_are_dropped_and_unreadable_rows_skipped(tmp_path, caplog):
    store = _store_with_three_rows(tmp_path)
    with caplog.at_level(logging.WARNING, logger="rigbench.store"):
        listed = store.list()
    assert [(r.id, r.spec.batch_size) for r in listed] == [(1, 8)]
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert "skipped 2 stored result(s)" in warnings[0] and "trial 2" in warnings[0]
    assert store.get(1).spec == TrialSpec(workload="mlp", batch_size=8)
    with pytest.raises(UsageError, match=r"trial 3 cannot be read \(spec.batch_size: Field required\)"):
        store.get(3)


def test_user_input_is_still_strict():
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        TrialSpec(workload="mlp", batch_size=8, gradient_accumulation=4)


def _row_with(tmp_path, edit):
    """A store of one result whose stored JSON `edit` changed, and that result's id."""
    path = tmp_path / "e.db"
    store = Store(str(path))
    store.add_run("r1", "t", "c", {})
    epoch = EpochRecord(epoch=1, steps=4, train_loss=0.5, train_seconds=1.0, eval_seconds=0.1)
    store.add_result(Result(run_id="r1", created_at="t", status="ok", spec=TrialSpec(workload="mlp", batch_size=8),
                            metrics=Metrics(samples_per_s=10.0, samples_per_s_ci=(9.0, 11.0)), epoch_records=[epoch]))
    con = sqlite3.connect(path)
    data = json.loads(con.execute("select result_json from trials where id = 1").fetchone()[0])
    edit(data)
    # json.dumps writes NaN as the bare NaN, which json.loads (the store's reading) takes back
    con.execute("update trials set result_json = ? where id = 1", (json.dumps(data),))
    con.commit()
    con.close()
    return store


def test_unknown_fields_of_models_in_lists_are_dropped_on_every_row(tmp_path):
    # the fields of each model are worked out once (lenient._fields) and serve every row after
    def future(data):
        data["epoch_records"][0]["grad_norm"] = 3.0
        data["spec"]["measure"]["warmup_mode"] = "auto"

    store = _row_with(tmp_path, future)
    for _ in range(2):
        [result] = store.list()
        assert result.epoch_records[0].train_loss == 0.5 and result.spec.measure.warmup_steps is not None


@pytest.mark.parametrize(("edit", "where"), [
    (lambda d: d["metrics"].update(samples_per_s_ci=[9.0, float("nan")]), "metrics.samples_per_s_ci[1]"),
    (lambda d: d["epoch_records"][0]["extra"].update(loss_d=float("inf")), "epoch_records[0].extra.loss_d"),
    (lambda d: d["metrics"].update(rss_peak_mib=float("-inf")), "metrics.rss_peak_mib"),
])
def test_a_row_with_a_figure_that_is_not_finite_is_skipped_naming_it(tmp_path, caplog, edit, where):
    store = _row_with(tmp_path, edit)
    with caplog.at_level(logging.WARNING, logger="rigbench.store"):
        listed = store.list()
    assert listed == [] and f"({where}: not a finite number)" in caplog.records[0].getMessage()
    assert non_finite_figure(Result(run_id="r", created_at="t", status="ok",
                                    spec=TrialSpec(workload="mlp", batch_size=8))) is None
