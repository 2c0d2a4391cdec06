"""`rigbench recommend --no-run --run ID`: a recommendation from the stored results of the machine a
run was measured on (an imported bundle, a fleet's database), measuring nothing and probing none
of this machine's devices; and the hints a recommendation prints naming commands that make sense
for whose results they are."""

import pytest
from typer.testing import CliRunner

from rigbench.cli import app
from rigbench.errors import UsageError
from rigbench.experiments import devices as device_module
from rigbench.experiments.recommend import recommend
from rigbench.fingerprint import machine_fingerprint
from rigbench.spec import MeasureOptions
from rigbench.store import Store
from tests.unit.test_recommend_logic import trial

GPU_VM = {**machine_fingerprint(), "hostname": "gpu-vm",
          "gpus": [{"vendor": "nvidia", "index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_bytes": 85 * 2**30}]}


def stored_db(tmp_path) -> str:
    """Runs g1 and g2 of another machine (an H100 VM: cnn speeds on cuda:0 in g1, a max-batch
    search in g2) and run h1 of this one (cnn on the cpu)."""
    db = str(tmp_path / "rec.db")
    store = Store(db)
    store.add_run("g1", "2026-01-01T00:00:00+00:00", "rigbench sweep cnn -d cuda:0", GPU_VM)
    store.add_run("g2", "2026-01-01T01:00:00+00:00", "rigbench max-batch cnn -d cuda:0", GPU_VM)
    store.add_run("h1", "2026-01-02T00:00:00+00:00", "rigbench run cnn", machine_fingerprint())
    probe = MeasureOptions.quick(min_steps=2, min_seconds=0.0)
    rows = [("g1", trial(32, 3000.0, device="cuda:0")), ("g1", trial(128, 9000.0, device="cuda:0")),
            ("g1", trial(512, 9500.0, device="cuda:0")),
            ("g2", trial(512, 50.0, steps=2, device="cuda:0", measure=probe, kind="probe",
                         metrics={"gpu_mem_peak_mib": 2000.0})),
            ("g2", trial(1024, None, status="oom", steps=0, device="cuda:0", measure=probe, kind="probe")),
            ("h1", trial(64, 700.0))]
    for run, r in rows:
        r = r.model_copy(update={"run_id": run, "id": None,
                                 "spec": r.spec.model_copy(update={"workload": "cnn"})})
        store.add_result(r)
    return db


def no_probe(monkeypatch):
    """Asking the framework for this machine's devices (a child process, 2-7 s) fails the test."""
    def probe(*_a, **_k):
        raise AssertionError("probed this machine's devices")
    monkeypatch.setattr(device_module, "framework_devices", probe)


def texts(outcome) -> list[str]:
    return [line.text for line in outcome.lines] + outcome.missing + outcome.not_tried + [outcome.busy or ""]


def test_run_ids_pick_the_machine_whose_results_are_used_and_nothing_is_probed(tmp_path, monkeypatch):
    db = stored_db(tmp_path)
    no_probe(monkeypatch)
    outcome = recommend("cnn", run_missing=False, run_ids=["g1"], db=db)
    lines = {line.decision: line for line in outcome.lines}
    assert lines["device"].value == "cuda:0" and outcome.devices == ["cuda:0"]
    assert lines["batch_size"].value == 128  # 9000 >= 90% of 9500; g2's search (same machine) caps at 512
    assert lines["batch_size"].numbers["max_batch"]["run_id"] == "g2"
    assert outcome.results_used == 5 and outcome.other_machines == 1  # this machine's cnn trial
    assert outcome.runs == ["g1"] and "NVIDIA H100 80GB HBM3" in outcome.machine
    assert outcome.ran == [] and outcome.run_id is None
    # an asked device is that machine's: no probe of this one, however it is spelt
    assert recommend("cnn", devices=["cuda"], run_missing=False, run_ids=["g2"], db=db).devices == ["cuda:0"]
    assert outcome.to_dict()["machine"] == outcome.machine and outcome.to_dict()["runs"] == ["g1"]


def test_hints_for_another_machines_results_name_that_machine_not_a_run_here(tmp_path, monkeypatch):
    db = stored_db(tmp_path)
    no_probe(monkeypatch)
    outcome = recommend("cnn", devices=["cpu"], run_missing=False, run_ids=["g1"], db=db)
    assert outcome.lines[0].value is None
    said = " ".join(texts(outcome))
    assert "without --no-run" not in said and "WORKLOAD" not in said
    assert "that machine" in outcome.lines[0].text and "rigbench recommend cnn" in outcome.lines[0].text
    assert outcome.measure_hint is not None and "that machine" in outcome.measure_hint
    full = recommend("cnn", run_missing=False, run_ids=["g1"], db=db)
    assert "WORKLOAD" not in " ".join(texts(full)) and "without --no-run" not in " ".join(texts(full))


def test_this_machines_recommendation_names_the_other_machines_results_it_leaves_out(tmp_path, monkeypatch):
    db = stored_db(tmp_path)
    outcome = recommend("cnn", devices=["cpu"], run_missing=False, db=db)
    assert outcome.other_machines == 5 and outcome.machine is None
    [other] = outcome.elsewhere
    assert other["results"] == 5 and "NVIDIA H100 80GB HBM3" in other["machine"]
    assert other["command"] == f"rigbench recommend cnn --no-run --run g2 --db {db}"  # its newest run of cnn
    # the device line's hint names the workload, not a placeholder
    empty = recommend("mlp", devices=["cpu"], run_missing=False, db=db)
    assert "WORKLOAD" not in " ".join(texts(empty)) and "rigbench run mlp" in empty.lines[0].text


@pytest.mark.parametrize("runs, message", [
    (["nope"], "no run 'nope' in"),
    (["g1", "h1"], "runs of different machines"),
])
def test_unknown_or_mixed_runs_are_refused(tmp_path, monkeypatch, runs, message):
    db = stored_db(tmp_path)
    no_probe(monkeypatch)
    with pytest.raises(UsageError, match=message):
        recommend("cnn", run_missing=False, run_ids=runs, db=db)


def test_runs_whose_machine_holds_no_results_of_the_workload_are_refused(tmp_path, monkeypatch):
    db = stored_db(tmp_path)
    no_probe(monkeypatch)
    with pytest.raises(UsageError, match=r"no stored results of mlp \(torch\) from the machine of run g1.*cnn"):
        recommend("mlp", run_missing=False, run_ids=["g1"], db=db)
    with pytest.raises(UsageError, match="--run .* measures nothing: add --no-run"):
        recommend("cnn", run_ids=["g1"], db=db)


def invoke(*args):
    return CliRunner().invoke(app, list(args))


def test_the_command_line(tmp_path, monkeypatch):
    db = stored_db(tmp_path)
    no_probe(monkeypatch)
    res = invoke("recommend", "cnn", "--no-run", "--run", "g1", "--db", db)
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("Recommendation for cnn on the machine of run g1 (gpu-vm")
    assert "  - device: cuda:0" in res.stdout
    bad = invoke("recommend", "cnn", "--no-run", "--run", "nope", "--db", db)
    assert bad.exit_code == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert bad.stderr.startswith("rigbench: error: no run 'nope' in")
    here = invoke("recommend", "cnn", "--no-run", "-d", "cpu", "--db", db)
    assert f"`rigbench recommend cnn --no-run --run g2 --db {db}` recommends from them" in here.stdout
    usage = invoke("recommend", "--help").stdout
    assert "--run" in usage and "those with stored results" not in usage


def test_hints_that_measure_here_name_its_database_and_the_flags_that_shape_what_it_measures(tmp_path):
    """`recommend --no-run --db X` printed `rigbench recommend mlp` (without --no-run) and
    `rigbench run mlp --batch-size ...`: run as printed, they measured into the default database,
    and under the default memory limit, where this recommendation reads X and its own limit."""
    db = stored_db(tmp_path)
    empty = recommend("mlp", devices=["cpu"], run_missing=False, db=db, quick=True, batch_sizes=[8, 16],
                      memory_limit_bytes=2**30)
    assert f"`rigbench run mlp --db {db} --batch-size ...`" in empty.lines[0].text
    assert empty.measure_hint == (f"`rigbench recommend mlp --db {db} -d cpu --quick -b 8,16 --memory-limit 1GiB` "
                                  "(without --no-run) measures it here.")
    cnn = recommend("cnn", devices=["cpu"], run_missing=False, db=db)  # h1's b64 speed: lr-find is missing
    lr = next(line for line in cnn.lines if line.decision == "learning_rate")
    assert f"rigbench lr-find cnn --db {db} " in lr.text
    there = recommend("cnn", devices=["cpu"], run_missing=False, run_ids=["g1"], db=db)  # measured there
    assert "--db" not in " ".join(texts(there)) and "--db" not in (there.measure_hint or "")
