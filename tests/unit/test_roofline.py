"""Roofline and MFU arithmetic against hand-computed numbers, the stored calibration they
use, and what `rigbench roofline`, `results show` and the report make of them."""

import json

import pytest
from typer.testing import CliRunner

from rigbench import api, cli
from rigbench.analysis import roofline as rl
from rigbench.reports.charts import gather
from rigbench.store import Store
from rigbench.store.calibrations import add_calibration, latest_calibration
from tests.unit.test_report_data import make_result

# A trial: 1 GFLOP per sample at 100 samples/s, batch 10, 20 MB of forward+backward traffic
# per sample at that batch, 1M parameters trained with SGD (momentum).
TRIAL = dict(framework="torch", precision="fp32", batch_size=10, samples_per_s=100.0, flops_per_sample=1e9,
             bytes_per_sample=2e7, params=1_000_000, optimizer="sgd")
# achieved = 1e9 * 100 = 1e11 FLOP/s; step FLOPs = 1e10
# step bytes = 2e7 * 10 + 1e6 params * 4 B * 5 (SGD) = 2e8 + 2e7 = 2.2e8
# intensity = 1e10 / 2.2e8 = 45.4545... FLOP/byte
INTENSITY = 1e10 / 2.2e8
CALIBRATION = {"created_at": "2026-01-02T00:00:00+00:00", "matmul_flops": {"fp32": 2e11},
               "memory_bandwidth_bytes_s": 5e9, "unsupported": {"tf32": "not on cpu"}}


def test_mfu_intensity_and_bounds_by_hand():
    roof = rl.trial_roofline(**TRIAL, spec_name="Some GPU", spec_peak=1e12, spec_bandwidth=1e10,
                             calibration=CALIBRATION)
    assert roof.achieved_flops == pytest.approx(1e11)
    assert roof.step_flops == pytest.approx(1e10)
    assert roof.step_bytes == pytest.approx(2.2e8)
    assert roof.intensity == pytest.approx(45.4545454545)
    # spec sheet: 45.45 FLOP/B x 10 GB/s = 454.5 GFLOP/s < 1 TFLOP/s peak -> memory-bound
    assert roof.spec.bound == "memory-bound"
    assert roof.spec.ceiling_flops == pytest.approx(4.545454545e11)
    assert roof.spec.mfu == pytest.approx(0.1)  # 1e11 / 1e12
    assert roof.spec.of_ceiling == pytest.approx(0.22)  # 1e11 / 4.5454e11
    # calibrated: 45.45 x 5 GB/s = 227 GFLOP/s > 200 GFLOP/s peak -> compute-bound at the peak
    assert roof.calibrated.bound == "compute-bound"
    assert roof.calibrated.ceiling_flops == pytest.approx(2e11)
    assert roof.calibrated.mfu == pytest.approx(0.5)
    assert roof.calibrated.of_ceiling == pytest.approx(0.5)
    assert roof.notes == [] and roof.warnings == []


def test_adam_moves_more_optimizer_bytes_than_sgd():
    assert rl.optimizer_bytes(1_000_000, "sgd") == 20_000_000  # 4 B x 5
    assert rl.optimizer_bytes(1_000_000, "adam") == 28_000_000  # 4 B x 7
    assert rl.step_bytes(2e7, 10, 1_000_000, "adam") == pytest.approx(2.28e8)
    assert rl.optimizer_bytes(10, "lbfgs") is None  # unknown optimiser: no guess


def test_ridge_point_counts_as_compute_bound():
    assert rl.bound(10.0, 1e11, 1e10) == (1e11, "compute-bound")
    assert rl.bound(9.0, 1e11, 1e10) == (pytest.approx(9e10), "memory-bound")
    assert rl.bound(9.0, None, 1e10) == (None, None)
    assert rl.bound(None, 1e11, 1e10) == (None, None)


def test_unknown_hardware_falls_back_to_the_calibration():
    roof = rl.trial_roofline(**TRIAL, calibration=CALIBRATION)
    assert roof.spec is None
    assert roof.calibrated.mfu == pytest.approx(0.5)
    assert roof.notes == ["device not in the spec sheets"]


def test_no_spec_and_no_calibration_gives_none_never_a_guess():
    roof = rl.trial_roofline(**TRIAL)
    assert roof.achieved_flops == pytest.approx(1e11)
    assert roof.spec is None and roof.calibrated is None
    assert roof.notes == ["device not in the spec sheets", "device not calibrated: run `rigbench calibrate`"]


def test_missing_pieces_leave_their_figures_empty():
    no_bytes = rl.trial_roofline(**{**TRIAL, "bytes_per_sample": None}, spec_name="G",
                                 spec_peak=1e12, spec_bandwidth=1e10)
    assert no_bytes.intensity is None and no_bytes.spec.bound is None and no_bytes.spec.ceiling_flops is None
    assert no_bytes.spec.mfu == pytest.approx(0.1)  # MFU needs no traffic estimate
    assert any("memory-traffic" in n for n in no_bytes.notes)
    tf32 = rl.trial_roofline(**{**TRIAL, "precision": "tf32"}, spec_name="G", spec_peak=None,
                             spec_bandwidth=1e10, calibration=CALIBRATION)
    assert tf32.spec.mfu is None and tf32.calibrated.mfu is None
    assert "the spec sheet has no tf32 peak" in tf32.notes
    assert "no calibrated tf32 peak (not on cpu)" in tf32.notes
    no_speed = rl.trial_roofline(**{**TRIAL, "samples_per_s": None}, calibration=CALIBRATION)
    assert no_speed.achieved_flops is None and no_speed.calibrated.mfu is None


def test_a_trial_above_its_estimated_memory_roof_gets_a_note_and_no_bound():
    """No trial outruns bandwidth x intensity, so one that did disproves its bytes estimate: no
    "memory-bound" and no ceiling from that estimate, a note, and the fact as a field."""
    # spec sheet: 45.45 FLOP/B x 1 GB/s = 45.5 GFLOP/s, below the 100 GFLOP/s achieved (220%)
    roof = rl.trial_roofline(**TRIAL, spec_name="Some GPU", spec_peak=1e12, spec_bandwidth=1e9,
                             calibration=CALIBRATION, trial="trial 7")
    assert roof.above_memory_roof and roof.spec.above_memory_roof
    assert roof.spec.bound is None and roof.spec.ceiling_flops is None and roof.spec.of_ceiling is None
    assert roof.spec.memory_roof == pytest.approx(INTENSITY * 1e9) and roof.spec.of_memory_roof == pytest.approx(2.2)
    assert roof.spec.missing == () and roof.spec.mfu == pytest.approx(0.1)  # MFU needs no traffic estimate
    assert not roof.calibrated.above_memory_roof and roof.calibrated.bound == "compute-bound"  # 227 > 100 GFLOP/s
    assert roof.notes == ["trial 7 ran above its estimated memory roof (220% of the spec sheet's 0.0455 TFLOP/s): "
                          "the bytes estimate is too high for it, so its real FLOP/byte is above 45.5 (at least "
                          "100 by the spec sheet's bandwidth) and its bound is unknown"]
    # above the calibrated roof only: a measured bandwidth may itself be low, and the note says so
    slow = rl.trial_roofline(**TRIAL, calibration={**CALIBRATION, "memory_bandwidth_bytes_s": 1e9})
    assert slow.above_memory_roof and slow.calibrated.bound is None
    assert slow.notes[-1].startswith("the trial ran above its estimated memory roof (220% of the calibrated ")
    assert slow.notes[-1].endswith("(or the calibrated bandwidth is too low: rerun `rigbench calibrate` without --quick)")


def test_a_trial_at_or_below_its_memory_roof_gets_no_above_roof_note():
    # 1 GB of traffic per step for 10 GFLOP: 10 FLOP/byte x 10 GB/s = 100 GFLOP/s = achieved
    at_roof = rl.trial_roofline(**{**TRIAL, "bytes_per_sample": 1e8, "params": 0}, spec_name="G",
                                spec_peak=1e12, spec_bandwidth=1e10)
    assert at_roof.intensity == pytest.approx(10.0)
    assert not at_roof.above_memory_roof and at_roof.spec.bound == "memory-bound"
    assert at_roof.spec.of_ceiling == pytest.approx(1.0)
    assert at_roof.notes == ["device not calibrated: run `rigbench calibrate`"]  # and no above-roof note
    below = rl.trial_roofline(**TRIAL, spec_name="Some GPU", spec_peak=1e12, spec_bandwidth=1e10)
    assert not below.above_memory_roof and not below.spec.above_memory_roof
    assert not any("memory roof" in note for note in below.notes)
    unknown = rl.trial_roofline(**{**TRIAL, "bytes_per_sample": None}, spec_name="G", spec_peak=1e12,
                                spec_bandwidth=1e3)  # no intensity: nothing to be above
    assert not unknown.above_memory_roof and unknown.spec.memory_roof is None


def _calibration(device_name, measurements):
    return {"device": "cpu", "device_name": device_name, "threads": 2, "quick": True,
            "software": {"torch": "x"}, "measurements": measurements}


def _matmul(precision, value, status="ok"):
    detail = {"reason": "no"} if status != "ok" else {"best_n": 256}
    return {"kind": "matmul", "precision": precision, "unit": "FLOP/s", "status": status,
            "value": value, "detail": detail}


def _bandwidth(kind, value, status="ok"):
    return {"kind": kind, "precision": None, "unit": "B/s", "status": status, "value": value,
            "detail": {} if status == "ok" else {"reason": "host memory"}}


def store_with_calibrations(tmp_path, url=None):
    """Two calibrations of "CPU X": an older full one, a newer one of bf16 only (its fp32 and
    bandwidth must survive), and one of another device; in `url` or a SQLite file."""
    store = Store(url or str(tmp_path / "c.db"))
    for run_id in ("old", "new", "other"):
        store.add_run(run_id, "2026-01-01T00:00:00+00:00", "test", {})
    add_calibration(store, "old", "2026-01-01T00:00:00+00:00", _calibration("CPU X", [
        _matmul("fp32", 1e11), _matmul("tf32", None, "unsupported"), _matmul("bf16", 1e9),
        _bandwidth("memory_bandwidth", 1e10), _bandwidth("h2d_pinned", None, "n/a")]))
    add_calibration(store, "new", "2026-01-03T00:00:00+00:00", _calibration("CPU X", [_matmul("bf16", 3e9)]))
    add_calibration(store, "other", "2026-01-04T00:00:00+00:00", _calibration("GPU Y", [_matmul("fp32", 9e12)]))
    return store


def test_latest_calibration_takes_the_newest_of_each_figure(tmp_path, db_url):
    store = store_with_calibrations(tmp_path, db_url)
    cal = latest_calibration(store, "CPU X")
    assert cal["matmul_flops"] == {"fp32": 1e11, "bf16": 3e9}
    assert cal["memory_bandwidth_bytes_s"] == 1e10
    assert cal["h2d_pinned_bytes_s"] is None and cal["d2h_pageable_bytes_s"] is None
    assert cal["unsupported"] == {"tf32": "no"}
    assert cal["created_at"] == "2026-01-03T00:00:00+00:00" and cal["run_ids"] == ["old", "new"]
    assert cal["device"] == "cpu" and cal["device_name"] == "CPU X"
    assert latest_calibration(store, "never calibrated") is None


def test_the_calibrated_peak_is_the_highest_of_each_frameworks_newest(tmp_path):
    """On the dev VM JAX calibrated an fp32 CPU peak of 0.104 TFLOP/s and TensorFlow 0.141: the
    newest whatever the framework moved every calibrated MFU ~35% with the last `calibrate
    --framework`. Now each framework's newest counts, and the highest of them is the peak, named."""
    store = Store(str(tmp_path / "frameworks.db"))
    for run_id in "abcd":
        store.add_run(run_id, "2026-01-01T00:00:00+00:00", "test", {})

    def calibrate(run_id, day, framework, fp32, software=None):
        cal = {**_calibration("CPU X", [_matmul("fp32", fp32)]), "framework": framework}
        if software:  # a row stored before calibrate recorded its framework
            cal = {**cal, "framework": None, "software": software}
        add_calibration(store, run_id, f"2026-01-0{day}T00:00:00+00:00", cal)

    calibrate("a", 1, None, 1.04e11, software={"jax": "0.10.2", "jaxlib": "0.10.2"})
    calibrate("b", 2, "tensorflow", 1.41e11)
    calibrate("c", 3, "jax", 1.10e11)  # newer, still lower: TensorFlow's peak stands
    cal = latest_calibration(store, "CPU X")
    assert cal["matmul_flops"] == {"fp32": 1.41e11}
    assert cal["measured_by"] == {"matmul_flops:fp32": "tensorflow"} and cal["run_ids"] == ["b"]
    assert cal["measured_by_all"] == {"matmul_flops:fp32": {"jax": 1.10e11, "tensorflow": 1.41e11}}
    roof = rl.trial_roofline(**TRIAL, calibration=cal)
    assert roof.calibrated.name == "tensorflow's fp32 matmul, calibrated 2026-01-02"
    assert ("calibrated fp32 peak: tensorflow's, the highest of the frameworks that measured it "
            "(tensorflow 0.141, jax 0.11 TFLOP/s)") in roof.notes
    calibrate("d", 4, "tensorflow", 0.9e11)  # TensorFlow's newest replaces its own older peak
    cal = latest_calibration(store, "CPU X")
    assert cal["matmul_flops"] == {"fp32": 1.10e11} and cal["measured_by"] == {"matmul_flops:fp32": "jax"}
    only = rl.trial_roofline(**TRIAL, calibration={**CALIBRATION, "measured_by": {"matmul_flops:fp32": "torch"}})
    assert only.calibrated.name == "torch's fp32 matmul, calibrated 2026-01-02"
    assert not any(note.startswith("calibrated fp32 peak") for note in only.notes)


def stored_trials(tmp_path):
    """The hand-computed trial (above) stored on the calibrated "CPU X", plus a crash."""
    store = store_with_calibrations(tmp_path)
    store.add_run("r1", "2026-01-05T00:00:00+00:00", "test", {})
    ok = make_result(workload="mlp", batch=10, speed=100.0, flops_per_sample=1e9,
                     bytes_per_sample=2e7, params=1_000_000).model_copy(update={"device_name": "CPU X", "id": None})
    store.add_result(ok)
    store.add_result(make_result(status="crash", error="boom").model_copy(update={"id": None}))
    return store, ok


def test_roofline_command_and_results_show(tmp_path, monkeypatch):
    monkeypatch.setattr(rl, "spec_sheet", lambda result: None)  # hardware not in the sheets
    store, ok = stored_trials(tmp_path)
    runner = CliRunner()
    shown = runner.invoke(cli.app, ["roofline", "--db", store.url, "--json"])
    assert shown.exit_code == 0, shown.output
    rows = json.loads(shown.stdout)
    assert len(rows) == 1  # only the ok trial
    row = rows[0]
    assert row["achieved_flops"] == pytest.approx(1e11) and row["intensity"] == pytest.approx(INTENSITY)
    # calibrated: fp32 peak 100 GFLOP/s, 10 GB/s -> memory roof 454.5 GFLOP/s: compute-bound, MFU 100%
    assert row["calibrated"]["bound"] == "compute-bound" and row["calibrated"]["mfu"] == pytest.approx(1.0)
    assert row["spec"] is None
    table = runner.invoke(cli.app, ["roofline", "--db", store.url, "--where", "workload=mlp"])
    assert table.exit_code == 0, table.output
    assert "TFLOP/s" in table.stdout and "100.0%" in table.stdout and "45.5" in table.stdout
    assert "compute-bound 0.1 (100%)" in table.stdout
    assert "compute-bound" in table.stdout and "device not in the spec sheets" in table.stdout
    assert "WARNING" not in table.output  # MFU exactly 100%: no warning
    detail = runner.invoke(cli.app, ["results", "show", str(ok.id), "--db", store.url])
    assert detail.exit_code == 0, detail.output
    for line in ("MFU (calibrated)", "100.0%", "45.5 FLOP/byte", "compute-bound, ceiling 0.1 TFLOP/s"):
        assert line in detail.stdout, line
    bad = runner.invoke(cli.app, ["roofline", "--db", store.url, "--where", "colour=red"])
    assert bad.exit_code == 2


def test_report_draws_trials_and_ceilings(tmp_path, monkeypatch):
    monkeypatch.setattr(rl, "spec_sheet", lambda result: None)
    store, _ = stored_trials(tmp_path)
    results = store.list()
    sections = gather(results, api.device_calibrations(store, results))
    [chart, predicted] = [c for s, cs in sections if s.id == "roofline" for c in cs]
    assert chart.x_scale == "log" and chart.y_scale == "log"
    assert chart.height is not None and chart.height >= 400  # issue 14: readable, not squashed
    trial, ceiling = chart.series
    assert trial.x == [pytest.approx(INTENSITY)] and trial.y == [pytest.approx(1e11)]
    # calibrated roof of CPU X fp32: ridge at 1e11 / 1e10 = 10 FLOP/byte, flat at 1e11 beyond it
    assert ceiling.dash and ceiling.name == "calibrated roof · CPU X · fp32"
    lo, ridge, hi = ceiling.x
    assert ridge == pytest.approx(10.0) and lo < ridge < hi
    assert ceiling.y == [pytest.approx(lo * 1e10), pytest.approx(1e11), pytest.approx(1e11)]
    # predicted: the calibrated ceiling at the trial's intensity (compute-bound, 1e11 FLOP/s)
    # over its 1e9 FLOPs per sample = 100 samples/s, as measured; named by network
    trial, equal = predicted.series
    assert trial.name == "mlp" and trial.x == [pytest.approx(100.0)] and trial.y == [pytest.approx(100.0)]
    assert equal.dash and equal.x == equal.y
    # results without FLOPs or traffic (older results) give no roofline section
    assert "roofline" not in [s.id for s, _ in gather([make_result()])]


WARNING = ("MFU 200% > 100% of the calibrated fp32 peak: the calibrated peak is too low "
           "(rerun `rigbench calibrate` without --quick on an idle machine)")


def test_mfu_above_100_percent_warns_and_is_not_clipped():
    low = {**CALIBRATION, "matmul_flops": {"fp32": 5e10}}  # the trial sustained 1e11
    roof = rl.trial_roofline(**TRIAL, spec_name="Some GPU", spec_peak=1e12, spec_bandwidth=1e10, calibration=low)
    assert roof.calibrated.mfu == pytest.approx(2.0)
    assert roof.warnings == [WARNING]
    wrong_sheet = rl.trial_roofline(**TRIAL, spec_name="Some GPU", spec_peak=8e10, spec_bandwidth=1e10)
    assert wrong_sheet.warnings == ["MFU 125% > 100% of the spec fp32 peak: the spec sheet's peak "
                                    "(Some GPU) or the trial's FLOP count is wrong"]
    assert rl.mfu_warning(None, "fp32") is None


def test_a_calibration_below_the_measured_flops_warns_everywhere(tmp_path, monkeypatch):
    monkeypatch.setattr(rl, "spec_sheet", lambda result: None)
    store, ok = stored_trials(tmp_path)
    store.add_run("low", "2026-01-06T00:00:00+00:00", "test", {})  # a newer, too-low fp32 peak
    add_calibration(store, "low", "2026-01-06T00:00:00+00:00", _calibration("CPU X", [_matmul("fp32", 5e10)]))
    runner = CliRunner()
    shown = runner.invoke(cli.app, ["roofline", "--db", store.url, "--json"])
    assert json.loads(shown.stdout)[0]["warnings"] == [WARNING]
    table = runner.invoke(cli.app, ["roofline", "--db", store.url])
    assert table.exit_code == 0, table.output
    assert "200.0%" in table.stdout
    assert f"WARNING: CPU X: {WARNING}" in table.stdout and f"warning: CPU X: {WARNING}" in table.stderr
    detail = runner.invoke(cli.app, ["results", "show", str(ok.id), "--db", store.url])
    assert "WARNING" in detail.stdout and "calibrated peak is too low" in detail.stdout
    results = store.list()
    [chart] = [c for s, cs in gather(results, api.device_calibrations(store, results)) if s.id == "roofline"
               for c in cs if c.id == "roofline"]
    assert chart.title.endswith(f" · WARNING: CPU X: {WARNING}")
    assert "WARNING: MFU 200% &gt; 100%" in chart.series[0].hover[0]


def test_roofline_notes_a_trial_above_its_memory_roof_under_the_table(tmp_path, monkeypatch):
    monkeypatch.setattr(rl, "spec_sheet", lambda result: None)
    store, ok = stored_trials(tmp_path)  # 45.5 FLOP/byte, 100 GFLOP/s achieved
    store.add_run("slow", "2026-01-06T00:00:00+00:00", "test", {})  # a newer bandwidth: 1 GB/s
    add_calibration(store, "slow", "2026-01-06T00:00:00+00:00",
                    _calibration("CPU X", [_bandwidth("memory_bandwidth", 1e9)]))
    runner = CliRunner()
    table = runner.invoke(cli.app, ["roofline", "--db", store.url])
    assert table.exit_code == 0, table.output
    assert "above est. memory roof 0.0455 (220%)" in table.stdout and "memory-bound" not in table.stdout
    assert f"note: CPU X: trial {ok.id} ran above its estimated memory roof (220% of the calibrated" in table.stdout
    [row] = json.loads(runner.invoke(cli.app, ["roofline", "--db", store.url, "--json"]).stdout)
    assert row["above_memory_roof"] is True and row["calibrated"]["above_memory_roof"] is True
    assert row["calibrated"]["bound"] is None and row["calibrated"]["of_memory_roof"] == pytest.approx(2.2)
    detail = runner.invoke(cli.app, ["results", "show", str(ok.id), "--db", store.url])
    assert "above est. memory roof 0.0455 TFLOP/s (220%); bound unknown" in detail.stdout
    results = store.list()  # and the report's roofline chart says it where the point is hovered
    [chart] = [c for s, cs in gather(results, api.device_calibrations(store, results)) if s.id == "roofline"
               for c in cs if c.id == "roofline"]
    assert "above its estimated memory roof" in chart.series[0].hover[0]


def test_a_fresh_jax_trial_right_after_calibrate_says_what_is_missing(tmp_path, monkeypatch):
    """Issue 23 item 15: a JAX or TensorFlow trial has no traffic estimate (only torch's adapter
    counts traffic), so it has no FLOP/byte and no bound. The roofline said "a result from
    before rigbench estimated it" of a fresh trial, and "no bandwidth" right after a calibration
    that measured the bandwidth."""
    monkeypatch.setattr(rl, "spec_sheet", lambda result: None)
    store, ok = stored_trials(tmp_path)  # CPU X: calibrated, bandwidth 10 GB/s
    for framework in ("jax", "tensorflow"):
        other = ok.model_copy(update={"spec": ok.spec.model_copy(update={"framework": framework}),
                                      "metrics": ok.metrics.model_copy(update={"bytes_per_sample": None})})
        store.add_result(other)
    shown = CliRunner().invoke(cli.app, ["roofline", "--db", store.url])
    assert shown.exit_code == 0, shown.output
    text = shown.stdout
    assert "no bandwidth" not in text and "before rigbench" not in text
    assert text.count("no FLOP/byte; peak 0.1") == 2  # the calibrated peak is known; the intensity is not
    assert "compute-bound 0.1 (100%)" in text  # the torch trial, which has an estimate, gets its bound
    assert "note: CPU X: no memory-traffic estimate for jax (rigbench estimates it for torch only)" in text
    assert "no memory-traffic estimate for tensorflow" in text
    rows = json.loads(CliRunner().invoke(cli.app, ["roofline", "--db", store.url, "--json"]).stdout)
    assert [tuple(r["calibrated"]["missing"]) for r in rows] == [(), ("FLOP/byte",), ("FLOP/byte",)]
    old_torch = rl.trial_roofline(**{**TRIAL, "bytes_per_sample": None}, calibration=CALIBRATION)
    assert "no memory-traffic estimate (a result from before rigbench estimated it)" in old_torch.notes


def test_the_frameworks_said_to_estimate_traffic_are_those_whose_adapter_does():
    import importlib

    from rigbench.frameworks import FRAMEWORKS

    estimating = {name for name, (module, _, _) in FRAMEWORKS.items()
                  if hasattr(importlib.import_module(module), "count_traffic")}  # adapters import no framework
    assert estimating == set(rl.TRAFFIC_ESTIMATED)


def test_a_reduced_precision_trial_with_an_earlier_bytes_estimate_is_said_to_read_low():
    """Trials stored before the estimate counted the precision hold fp32 bytes for bf16 (the H100
    bundle's bf16 resnet: 17.4 FLOP/byte, 34.4 now): no revision stored, a note; revision 2, none;
    an fp32 mlp's estimate did not change, none either."""
    from rigbench.spec import Metrics, Result, TrialSpec

    def stored(precision, workload="resnet", revision=None):
        return Result(id=1, run_id="r", created_at="2026-01-01T00:00:00+00:00", status="ok", device_name="NVIDIA H100",
                      spec=TrialSpec(workload=workload, device="cuda:0", batch_size=128, precision=precision),
                      metrics=Metrics(samples_per_s=1e4, flops_per_sample=1e9, bytes_per_sample=1e7, params=10**6,
                                      bytes_estimate_revision=revision))

    def says(r):
        return any(n.startswith("bytes estimated before rigbench counted") for n in rl.result_roofline(r, None).notes)

    assert says(stored("bf16")) and says(stored("fp32", "gpt"))
    assert not says(stored("bf16", revision=2)) and not says(stored("fp32", "mlp"))
