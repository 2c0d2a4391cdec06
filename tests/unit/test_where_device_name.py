"""Filtering by GPU model (the GPU audit, item 2): `device` is `cuda:0` on an H100 and an H200
alike, so `--where device_name=VALUE` keeps the trials whose device's name holds VALUE, in any
case (`h100` matches "NVIDIA H100 80GB HBM3"), in every command that takes `--where`."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from rigbench import api
from rigbench.api.comparison import side_results
from rigbench.cli import app
from rigbench.errors import UsageError
from rigbench.spec import Result
from rigbench.store import Store
from tests.unit.test_store import make_result

H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"


def gpu_result(run_id: str, name: str | None, batch: int = 32) -> Result:
    r = make_result(run_id, samples_per_s=1000.0 if name == H100 else 1500.0, samples_per_s_ci=(990.0, 1010.0),
                    flops_per_sample=1e9, bytes_per_sample=1e7, steps_measured=3)
    spec = r.spec.model_copy(update={"device": "cuda:0", "batch_size": batch})
    return r.model_copy(update={"spec": spec, "device_name": name})


@pytest.fixture
def db(tmp_path) -> str:
    store = Store(str(tmp_path / "gpus.db"))
    store.add_run("h100run", "2026-11-23T07:00:00+00:00", "rigbench run cnn -d cuda:0",
                  {"hostname": "vm", "cpu_model": "Xeon", "gpus": [{"name": H100}]})
    store.add_run("h200run", "2026-11-26T07:00:00+00:00", "rigbench run cnn -d cuda:0",
                  {"hostname": "vm", "cpu_model": "Xeon", "gpus": [{"name": H200}]})
    for batch in (32, 64):
        store.add_result(gpu_result("h100run", H100, batch))
        store.add_result(gpu_result("h200run", H200, batch))
    return store.url


def names(results: list[Result]) -> set[str | None]:
    return {r.device_name for r in results}


@pytest.mark.parametrize("value", ["h100", "H100", "NVIDIA H100 80GB HBM3", "nvidia h100 80gb hbm3", "80GB"])
def test_device_name_matches_a_part_of_the_name_in_any_case(db, value):
    selected = api.select_results(Store(db, create=False), where=[f"device_name={value}"])
    assert names(selected) == {H100} and len(selected) == 2


def test_device_name_values_are_either_and_other_keys_still_all(db):
    store = Store(db, create=False)
    assert names(api.select_results(store, where=["device_name=h100", "device_name=h200"])) == {H100, H200}
    both = api.select_results(store, where=["device_name=h200", "batch_size=64"])
    assert [(r.device_name, r.spec.batch_size) for r in both] == [(H200, 64)]
    assert names(api.select_results(store, where=["device_name=nvidia"])) == {H100, H200}


def test_a_device_name_that_matches_nothing_says_so(db):
    with pytest.raises(UsageError, match="device_name=a100"):
        api.select_results(Store(db, create=False), where=["device_name=a100"])


def test_an_unknown_key_names_device_name_among_the_keys():
    with pytest.raises(UsageError, match="device_name"):
        api.parse_where(["gpu=h100"])


def test_roofline_keeps_only_the_named_gpu(db):
    done = CliRunner().invoke(app, ["roofline", "--where", "device_name=h200", "--json", "--db", db])
    assert done.exit_code == 0, done.output
    import json

    assert {row["device_name"] for row in json.loads(done.stdout)} == {H200}


def test_results_list_takes_where_too(db):
    done = CliRunner().invoke(app, ["results", "list", "--where", "device_name=H100", "--db", db],
                              env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    ids = [line.split()[0] for line in done.stdout.splitlines()[2:] if line.strip()[:1].isdigit()]
    assert ids == ["1", "3"]  # the H100's trials: the first and third stored


def test_compare_sides_can_be_chosen_by_gpu_model(db):
    store = Store(db, create=False)
    a, _, label_a = side_results(store, None, ["device_name=h100"], "A")
    b, _, label_b = side_results(store, None, ["device_name=h200"], "B")
    assert names(a) == {H100} and names(b) == {H200}
    assert "device_name=h100" in label_a and "device_name=h200" in label_b


@pytest.mark.parametrize("command", [["report"], ["roofline"], ["compare"], ["results", "list"]])
def test_every_command_that_filters_names_device_name_in_its_help(command):
    done = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert done.exit_code == 0
    assert "device_name" in done.stdout, done.stdout
