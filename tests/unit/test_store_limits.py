"""A value the database cannot store is refused before any trial runs (issue 23 item 4):
`rigbench -b 3000000000` fits SQLite's 64-bit INTEGER but not PostgreSQL's 32-bit one, and
used to end in DataError after the trial, its result lost."""

from pathlib import Path

import pytest
from sqlalchemy import Integer
from typer.testing import CliRunner

from rigbench.cli import app
from rigbench.errors import UsageError
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store
from rigbench.store.limits import SPEC_COLUMNS, check_storable, column_range
from rigbench.store.schema import trials
from tests.databases import sql

INT32_MAX = 2**31 - 1


def test_every_integer_column_a_spec_fills_is_checked():
    filled_elsewhere = {"id", "schema_version"}  # the row's key; rigbench's own constant
    integer_columns = {c.name for c in trials.columns if isinstance(c.type, Integer)}
    assert integer_columns - filled_elsewhere == set(SPEC_COLUMNS)
    assert column_range(trials.c.batch_size) == (-(2**31), INT32_MAX)


@pytest.mark.parametrize(("field", "named"), [("batch_size", "--batch-size"), ("threads", "--threads"),
                                              ("world_size", "the process count")])
def test_a_value_past_postgresql_integer_is_refused(field, named):
    spec = TrialSpec(workload="mlp", device="cpu", batch_size=8).model_copy(update={field: INT32_MAX + 1})
    with pytest.raises(UsageError, match=rf"^{named}.* {INT32_MAX + 1} is more than the results database can "
                                         rf"store \(at most {INT32_MAX}: an INTEGER column on PostgreSQL\)"):
        check_storable([TrialSpec(workload="mlp", device="cpu", batch_size=8), spec])


def test_the_largest_value_allowed_is_stored_on_every_backend(db_url):
    spec = TrialSpec(workload="mlp", device="cpu", batch_size=INT32_MAX, threads=INT32_MAX)
    check_storable([spec])
    store = Store(db_url)
    store.add_run("r1", "t", "c", {})
    new_id = store.add_result(Result(run_id="r1", created_at="t", spec=spec, status="oom", metrics=Metrics()))
    assert new_id is not None and store.get(new_id).spec.batch_size == INT32_MAX


@pytest.mark.parametrize("command", [["run", "mlp", "-b", "3000000000"], ["sweep", "mlp", "-b", "8,3000000000"]])
def test_run_and_sweep_refuse_it_before_any_trial(db_url, command):
    result = CliRunner().invoke(app, [*command, "--quick", "--db", db_url])
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"rigbench: error: --batch-size 3000000000 is more than the results database can store "
        f"(at most {INT32_MAX}: an INTEGER column on PostgreSQL); use a smaller value"]
    # refused before the database was even opened: no run recorded, no trial started
    if db_url.startswith("sqlite"):
        assert not Path(db_url.removeprefix("sqlite:///")).exists()
    else:
        assert sql(db_url, "select count(*) from information_schema.tables where table_name = 'runs'") == [(0,)]
