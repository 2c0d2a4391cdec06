"""Calibrations in results bundles (store/bundle_calibrations.py): a device's measured peaks
travel with the results measured on it, so the importing database gives the same "MFU against
the measured peak"; a re-import adds nothing; a bundle written before calibrations travelled
imports as it did; a malformed calibration refuses the whole bundle. Real SQLite files (and
PostgreSQL where the test server is set up)."""

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rigbench import api, cli
from rigbench.errors import UsageError
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store
from rigbench.store.bundle import dump_bundle, export_bundle, import_bundle, load_bundle, parse_bundle
from rigbench.store.calibrations import add_calibration, latest_calibration, list_calibrations

MACHINE = {"hostname": "box", "cpu_model": "Box CPU", "gpus": []}
DEVICE = "Box CPU"
PEAK = 1e10  # FLOP/s, fp32
OLD_BUNDLE = Path(__file__).parents[2] / "docs" / "results" / "gpu-h100.bundle.json"


def calibration(device_name=DEVICE):
    """What the calibration child returns for one device (frameworks/base.Calibration)."""
    return {"device": "cpu", "device_name": device_name, "device_type": "cpu", "threads": 2, "quick": True,
            "software": {"torch": "2.13.0"}, "measurements": [
                {"kind": "matmul", "precision": "fp32", "unit": "FLOP/s", "status": "ok", "value": PEAK,
                 "detail": {"peak_n": 512, "sizes": [{"n": 512, "flops_per_s": PEAK}]}},
                {"kind": "matmul", "precision": "tf32", "unit": "FLOP/s", "status": "unsupported", "value": None,
                 "detail": {"reason": "tf32 needs an NVIDIA GPU"}},
                {"kind": "memory_bandwidth", "precision": None, "unit": "B/s", "status": "ok", "value": 2e10,
                 "detail": {"buffer_bytes": 1 << 26}},
                {"kind": "h2d_pinned", "precision": None, "unit": "B/s", "status": "n/a", "value": None,
                 "detail": {"reason": "host memory: the CPU needs no copy"}},
            ]}


def result(run_id="run1"):
    """A trial on the calibrated device: 1e3 samples/s x 1e6 FLOPs = 1e9 FLOP/s, 10% of PEAK."""
    spec = TrialSpec(workload="mlp", device="cpu", batch_size=32)
    return Result(run_id=run_id, created_at="2026-01-01T00:00:00+00:00", spec=spec, status="ok",
                  device_name=DEVICE, threads=2,
                  metrics=Metrics(samples_per_s=1e3, flops_per_sample=1e6, steps_measured=3),
                  step_times_s=[0.032, 0.032, 0.032])


@pytest.fixture()
def source(tmp_path):
    """A database with a run of one trial and a `rigbench calibrate` run of its device."""
    store = Store(str(tmp_path / "source.db"))
    store.add_run("run1", "2026-01-01T00:00:00+00:00", "rigbench run mlp", MACHINE)
    store.add_result(result())
    store.add_run("cal1", "2026-01-01T01:00:00+00:00", "rigbench calibrate -d cpu", MACHINE)
    add_calibration(store, "cal1", "2026-01-01T01:00:05+00:00", calibration())
    return store


def write(tmp_path, data, name="bundle.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def counts(store):
    with store.engine.connect() as conn:
        return tuple(conn.exec_driver_sql(f"select count(*) from {t}").scalar()
                     for t in ("runs", "trials", "calibrations"))


def rows(store):
    return [{k: v for k, v in row.items() if k != "id"} for row in list_calibrations(store)]


def test_calibrations_travel_and_give_the_calibrated_mfu(source, tmp_path, db_url):
    data = export_bundle(source)
    assert [r["id"] for r in data["runs"]] == ["run1", "cal1"]  # the calibrate run, though it has no trials
    assert [(c["kind"], c["precision"], c["status"]) for c in data["calibrations"]] == [
        ("matmul", "fp32", "ok"), ("matmul", "tf32", "unsupported"), ("memory_bandwidth", None, "ok"),
        ("h2d_pinned", None, "n/a")]
    path = write(tmp_path, dump_bundle(data))

    done = import_bundle(Store(db_url), load_bundle(path))
    assert (done.added_runs, done.added_results, done.added_calibrations, done.skipped_calibrations) == (
        ["run1", "cal1"], 1, 4, 0)
    fresh = Store(db_url)
    assert rows(fresh) == rows(source)  # every column, the detail (with its context) included
    assert latest_calibration(fresh, DEVICE)["matmul_flops"] == {"fp32": PEAK}

    [(trial, roof)] = api.roofline(db=db_url)
    assert trial.device_name == DEVICE
    assert roof.calibrated is not None and roof.calibrated.peak_flops == PEAK
    assert roof.calibrated.mfu == pytest.approx(1e9 / PEAK)


def test_importing_a_bundle_twice_adds_its_calibrations_once(source, tmp_path):
    path = write(tmp_path, dump_bundle(export_bundle(source)))
    target = Store(str(tmp_path / "target.db"))
    import_bundle(target, load_bundle(path))
    again = import_bundle(target, load_bundle(path))
    assert (again.added_runs, again.present_runs) == ([], ["run1", "cal1"])
    assert (again.added_calibrations, again.skipped_calibrations) == (0, 4)
    assert counts(target) == (2, 1, 4)
    # the results' bundle alone, then the calibrate run's: each adds only its own part
    other = Store(str(tmp_path / "other.db"))
    import_bundle(other, parse_bundle(dump_bundle(export_bundle(source, ["run1"]))))
    done = import_bundle(other, parse_bundle(dump_bundle(export_bundle(source, ["cal1"]))))
    assert (done.added_runs, done.added_results, done.added_calibrations) == (["cal1"], 0, 4)
    assert counts(other) == (2, 1, 4)


def test_export_of_one_run_carries_that_runs_calibrations_only(source):
    cal = export_bundle(source, ["cal1"])  # a calibrate run: no results, its calibrations
    assert ([r["id"] for r in cal["runs"]], cal["results"], len(cal["calibrations"])) == (["cal1"], [], 4)
    trials = export_bundle(source, ["run1"])
    # no calibrations: no key, so an older rigbench (whose envelope forbids unknown keys) reads it
    assert "calibrations" not in trials and [r["id"] for r in trials["runs"]] == ["run1"]
    with pytest.raises(UsageError, match="no results stored for --run 'nope' .* nor calibrations"):
        export_bundle(source, ["nope"])


def test_a_bundle_from_before_calibrations_travelled_imports_as_before(tmp_path):
    data = json.loads(OLD_BUNDLE.read_text())
    assert "calibrations" not in data
    target = Store(str(tmp_path / "target.db"))
    done = import_bundle(target, load_bundle(OLD_BUNDLE))
    assert (len(done.added_runs), done.added_results) == (len(data["runs"]), len(data["results"]))
    assert (done.added_calibrations, done.skipped_calibrations, done.notes) == (0, 0, [])
    assert counts(target) == (len(data["runs"]), len(data["results"]), 0)


def _cal(index, **changes):
    def mutate(data):
        data["calibrations"][index].update(changes)
        return data
    return mutate


def _drop(key):
    def mutate(data):
        del data["calibrations"][0][key]
        return data
    return mutate


@pytest.mark.parametrize("mutate,message", [
    (_cal(0, value="fast"), r"calibrations\[0\]\.value: Input should be a valid number"),
    (_cal(0, value=float("inf")), r"calibrations\[0\]\.value: Input should be a finite number"),
    (_cal(0, value=0.0), r"calibrations\[0\]\.value: must be a number more than 0 when status is 'ok'"),
    (_cal(2, value=None), r"calibrations\[2\]\.value: must be a number more than 0 when status is 'ok', got None"),
    (_cal(1, value=5.0), r"calibrations\[1\]\.value: must be null when status is 'unsupported'"),
    (_cal(1, status="great"), r"calibrations\[1\]\.status: Input should be 'ok', 'unsupported', 'n/a' or 'failed'"),
    (_cal(0, kind="k" * 33), r"calibrations\[0\]\.kind: String should have at most 32 characters"),
    (_cal(0, precision="fp32" * 3), r"calibrations\[0\]\.precision: String should have at most 8 characters"),
    (_cal(0, precision=None), r"calibrations\[0\]\.precision: missing, which every matmul measurement has"),
    (_cal(0, value=1e-300), r"calibrations\[0\]\.value: 1e-300 FLOP/s is outside 1e\+06 to 1e\+18"),
    (_cal(2, value=1e300), r"calibrations\[2\]\.value: 1e\+300 B/s is outside 1e\+06 to 1e\+16"),
    (_cal(0, unit="TFLOP/s"), r"calibrations\[0\]\.unit: a matmul value is in FLOP/s, got 'TFLOP/s'"),
    (_cal(2, unit="GB/s"), r"calibrations\[2\]\.unit: a memory_bandwidth value is in B/s, got 'GB/s'"),
    (_cal(0, device_name=7), r"calibrations\[0\]\.device_name: Input should be a valid string"),
    (_cal(0, detail="fast"), r"calibrations\[0\]\.detail: Input should be an object"),
    (_cal(0, run_id="elsewhere"), r"calibrations\[0\]\.run_id: run 'elsewhere' is not in the bundle's runs"),
    (_cal(0, id=3), r"calibrations\[0\]\.id: Extra inputs are not permitted"),
    (_drop("created_at"), r"calibrations\[0\]\.created_at: Field required"),
    (_cal(0, created_at="yesterday"), r"calibrations\[0\]\.created_at: not an ISO 8601 time, got 'yesterday'"),
    (_cal(3, kind="matmul", precision="fp32", status="ok", value=PEAK, unit="FLOP/s", detail={}),
     r"calibrations\[3\]: the same measurement .* as calibrations\[0\]"),
    (lambda d: {**d, "calibrations": {"kind": "matmul"}}, r"calibrations: expected a list of calibration rows, got dict"),
    (lambda d: {**d, "calibrations": ["matmul"]}, r"calibrations\[0\]: expected an object, got str"),
])
def test_a_malformed_calibration_is_refused_with_exit_2_and_nothing_imported(source, tmp_path, mutate, message):
    path = write(tmp_path, mutate(export_bundle(source)), "bad.json")
    target = Store(str(tmp_path / "target.db"))
    target.add_run("mine", "2026-02-01T00:00:00+00:00", "rigbench run", MACHINE)
    before = counts(target)
    done = CliRunner().invoke(cli.app, ["results", "import", str(path), "--db", str(tmp_path / "target.db")])
    assert done.exit_code == 2, done.output
    [line] = done.output.strip().splitlines()
    assert line.startswith(f"rigbench: error: {path}: ")
    assert re.search(message, line), line
    assert counts(target) == before


@pytest.mark.parametrize("column,value", [("detail_json", "{"), ("value", "x"), ("value", 1e-300),
                                          ("created_at", "yesterday")])
def test_a_stored_calibration_row_that_breaks_the_rules_is_skipped_with_a_warning(source, column, value, caplog):
    """One row edited by hand (bad JSON, a text value, a peak that makes MFU infinite) broke
    results show, report, roofline, compare and export with a traceback: it is skipped, said
    once, and the device's other measurements still count."""
    with source.engine.begin() as conn:
        conn.exec_driver_sql(f"UPDATE calibrations SET {column} = ? WHERE kind = 'memory_bandwidth'", (value,))
    latest = latest_calibration(source, DEVICE)
    assert latest["matmul_flops"] == {"fp32": PEAK} and latest["memory_bandwidth_bytes_s"] is None
    assert len(list_calibrations(source)) == 3
    warning = next(r.getMessage() for r in caplog.records if "calibration row" in r.getMessage())
    assert warning.startswith("skipped 1 stored calibration row(s) in sqlite:") and "cannot be read: row 3 (" in warning
    done = CliRunner().invoke(cli.app, ["roofline", "--db", source.url.removeprefix("sqlite:///")])
    assert done.exit_code == 0, done.output


def test_an_edited_calibration_is_refused_on_reimport(source, tmp_path):
    target = Store(str(tmp_path / "target.db"))
    data = export_bundle(source)
    import_bundle(target, parse_bundle(json.dumps(data)))
    data["calibrations"][0]["value"] = PEAK * 2
    data["results"][0]["created_at"] = "2026-01-01T00:05:00+00:00"  # a new trial: not added either
    with pytest.raises(UsageError, match=r"1 of 4 calibrations refused, nothing imported: calibrations\[0\]: "
                                         r"matmul fp32 of run cal1 .* other content \(value: 10000000000\.0 stored, "
                                         r"20000000000\.0 in the bundle\)"):
        import_bundle(target, parse_bundle(json.dumps(data)))
    assert counts(target) == (2, 1, 4)


def test_over_long_calibration_text_is_stored_clipped_and_reimports_as_the_same(source, tmp_path):
    data = export_bundle(source)
    for entry in data["calibrations"]:
        entry["device_name"] = "D" * 1000
    data["calibrations"][1]["detail"] = {"reason": "R" * 5000}
    target = Store(str(tmp_path / "target.db"))
    done = import_bundle(target, parse_bundle(json.dumps(data)))
    assert done.notes == [f"calibrations[{i}]: text over its limit stored clipped" for i in range(4)]
    stored = list_calibrations(target)
    assert stored[0]["device_name"].endswith("[truncated: 1,000 characters]")
    assert stored[1]["detail"]["reason"].endswith("[truncated: 5,000 characters]")
    again = import_bundle(target, parse_bundle(json.dumps(data)))
    assert (again.added_calibrations, again.skipped_calibrations) == (0, 4)


def test_export_says_what_it_wrote_with_the_file_named_literally(source, tmp_path):
    """A path is data: `[bold]` in it is printed, not read as markup, and the line is not wrapped."""
    from typer.testing import CliRunner

    from rigbench import cli

    path = tmp_path / ("[bold]x" * 12 + ".json")
    done = CliRunner().invoke(cli.app, ["results", "export", "--format", "bundle", "--db", source.url, "-o", str(path)])
    assert done.exit_code == 0, done.output
    assert f"wrote 1 results and {len(rows(source))} calibration measurements to {path}\n" in done.output


def test_an_imported_calibration_of_another_machine_or_an_older_one_does_not_replace_ours(source, tmp_path):
    """The calibrated MFU of this machine's trials fell from 10.3% to 0.7% when a bundle from
    another host brought a calibration of the same device name: the last row stored won. Now a
    trial's calibration is its machine's, and the newest by measurement time."""
    from rigbench.store.calibrations import device_calibrations

    other = Store(str(tmp_path / "other.db"))
    other.add_run("far1", "2026-02-01T00:00:00+00:00", "rigbench calibrate -d cpu", {**MACHINE, "hostname": "far"})
    add_calibration(other, "far1", "2026-02-01T00:00:05+00:00", {**calibration(), "measurements": [
        {"kind": "matmul", "precision": "fp32", "unit": "FLOP/s", "status": "ok", "value": 5e12, "detail": {}}]})
    # and an older calibration of this machine, measured before `source`'s, stored after it
    other.add_run("old1", "2025-12-01T00:00:00+00:00", "rigbench calibrate -d cpu", MACHINE)
    add_calibration(other, "old1", "2025-12-01T00:00:05+00:00", {**calibration(), "measurements": [
        {"kind": "matmul", "precision": "fp32", "unit": "FLOP/s", "status": "ok", "value": 3e9, "detail": {}}]})
    path = write(tmp_path, api.export_bundle(other.url))
    done = CliRunner().invoke(cli.app, ["results", "import", str(path), "--db", source.url])
    assert done.exit_code == 0, done.output
    found = device_calibrations(source, source.list())
    assert found[DEVICE]["matmul_flops"] == {"fp32": PEAK} and found[DEVICE]["created_at"] == "2026-01-01T01:00:05+00:00"


def test_compare_names_a_calibrate_run_as_one_with_no_trials(source):
    """`compare CALIBRATE_RUN RUN` said there was no such run; `score CALIBRATE_RUN` and `compare
    --published --run CALIBRATE_RUN` that no results were stored for it, and `score --reference
    CALIBRATE_RUN` that it was no stored run, though `results runs` lists it."""
    said = "run 'cal1' is a `rigbench calibrate` run, with no trials (`rigbench roofline` reads its peaks)"
    for args, prefix in ((["compare", "cal1", "run1"], "A: "), (["score", "cal1"], ""),
                         (["score", "run1", "--reference", "cal1"], "--reference: "),
                         (["compare", "--published", "--run", "cal1"], "")):
        done = CliRunner().invoke(cli.app, [*args, "--db", source.url])
        assert done.exit_code == 2, args
        assert f"error: {prefix}{said}" in " ".join(done.output.split()), args
