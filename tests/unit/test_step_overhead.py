"""The step-overhead line (analysis/step_overhead.py): a least-squares line through the step
times by batch, its fixed part less the parameters' traffic, and what the recommendation does
with an overhead-bound step. Checked against figures worked out by hand and against the real
H100 trials in docs/results/gpu-h100.bundle.json."""

from pathlib import Path

import pytest

from rigbench.analysis import recommend as rules
from rigbench.analysis.step_overhead import (
    decide_overhead,
    duration,
    fit_step_time,
    memory_bandwidths,
    parameter_bytes,
)
from rigbench.experiments.execute import start_run
from rigbench.experiments.recommend import recommend
from rigbench.spec import MeasureOptions, Metrics, Result, TrialSpec
from rigbench.store import Store
from rigbench.store.bundle import load_bundle

BUNDLE = Path(__file__).resolve().parents[2] / "docs" / "results" / "gpu-h100.bundle.json"


def speeds_of(fixed_s: float, per_sample_s: float, batches=(32, 128, 512)) -> dict[int, float]:
    return {b: b / (fixed_s + per_sample_s * b) for b in batches}


def test_the_line_through_exact_step_times_is_found_again():
    fit = fit_step_time(speeds_of(2e-3, 1e-6))
    assert fit is not None and fit.batches == (32, 128, 512)
    assert fit.fixed_s == pytest.approx(2e-3) and fit.per_sample_s == pytest.approx(1e-6)
    assert fit.worst_residual == pytest.approx(0.0, abs=1e-9) and fit.step_s(1000) == pytest.approx(3e-3)
    assert fit_step_time({32: 100.0, 128: 300.0}) is None  # two points always lie on a line


def test_parameter_bytes_are_three_passes_plus_the_optimiser_update():
    # SGD with momentum: 3 passes (forward read, backward read, gradient write) + 5 in the update
    assert parameter_bytes(1_000, "sgd") == 1_000 * 4 * (3 + 5)
    assert parameter_bytes(1_000, "adam") == 1_000 * 4 * (3 + 7)
    assert parameter_bytes(None, "sgd") is None and parameter_bytes(1_000, "lbfgs") is None
    assert duration(2.09e-3) == "2.09 ms" and duration(4.5e-4) == "450 µs"


def h100(workload):
    return [r for r in load_bundle(BUNDLE).results if r.spec.workload == workload]


def test_cnn_on_the_h100_is_overhead_bound_and_resnet_is_not():
    """Step times from the bundle: cnn 2.151, 2.086, 2.318 ms and resnet 9.065, 8.913, 22.94 ms at
    b32, b128, b512. By hand, the least-squares line through resnet's is 6.68 ms + 31.1 µs a
    sample, so 6.68 / 22.94 = 29% of the b512 step is fixed; cnn's is 2.09 ms + 0.42 µs, 90%."""
    cnn = rules.step_overhead_line(h100("cnn"), "cuda:0", 512, "sgd", 3.35e12, compile_measured=False)
    assert cnn is not None and cnn.value == "overhead-bound"
    assert cnn.numbers["fixed_s"] == pytest.approx(2.09e-3, rel=0.01)
    assert cnn.numbers["overhead_share"] == pytest.approx(0.90, abs=0.01)
    # 122,570 parameters x 4 B x 8 passes at 3.35 TB/s: 1.17 µs of it is the parameters' traffic
    assert cnn.numbers["parameter_floor_s"] == pytest.approx(122_570 * 32 / 3.35e12)
    assert cnn.text.endswith("the step is overhead-bound; `rigbench scaling cnn -d cuda:0` measures what "
                             "torch.compile and its reduce-overhead mode (CUDA graphs) does to it")
    resnet = rules.step_overhead_line(h100("resnet"), "cuda:0", 512, "sgd", 3.35e12, compile_measured=False)
    assert resnet is not None and resnet.value == "work-bound"
    assert resnet.numbers["fixed_s"] == pytest.approx(6.68e-3, rel=0.01)
    assert resnet.numbers["per_sample_s"] == pytest.approx(31.1e-6, rel=0.01)
    assert resnet.numbers["overhead_share"] == pytest.approx(0.29, abs=0.01)
    assert "worst point off by 20%" in resnet.text  # flat from b32 to b128, then rising: a rough line


def test_the_parameters_traffic_is_not_counted_as_overhead():
    """mlp on the dev VM's CPU: a 10.0M-parameter step moves 321 MB for its parameters whatever the
    batch, 12.6 ms at the calibrated 25.4 GB/s; here the fixed part is 20 ms of a 30 ms step."""
    speeds = speeds_of(20e-3, 10e-3 / 64, batches=(16, 64, 256))
    unknown = decide_overhead(speeds, 64, "cpu", "mlp", None, None, compile_measured=False)
    known = decide_overhead(speeds, 64, "cpu", "mlp", parameter_bytes(10_020_874, "sgd"), 25.4e9,
                            compile_measured=False)
    assert unknown is not None and known is not None
    assert unknown.value == "overhead-bound" and "no memory bandwidth: `rigbench calibrate`" in unknown.text
    assert "`rigbench scaling mlp -d cpu` measures what torch.compile does to it" in unknown.text
    assert known.numbers["parameter_floor_s"] == pytest.approx(320.7e6 / 25.4e9, rel=1e-3)
    assert known.value == "work-bound" and "321 MB at 25.4 GB/s" in known.text
    assert known.numbers["overhead_share"] == pytest.approx((20e-3 - 320.7e6 / 25.4e9) / 30e-3, rel=1e-3)


def test_an_overhead_bound_step_with_compile_measured_points_at_the_compile_line():
    line = decide_overhead(speeds_of(2e-3, 1e-7), 512, "cuda:0", "cnn", None, None, compile_measured=True)
    assert line is not None and line.text.endswith("; the compile line says what compiling the step did to it")
    jax = decide_overhead(speeds_of(2e-3, 1e-7), 512, "cuda:0", "cnn", None, None, False, framework="jax")
    assert jax is not None and jax.text.endswith("the step is overhead-bound")  # every JAX step is compiled
    # a negative intercept on a line that fits (4, 20, 84 ms: -1.33 ms + 333 µs a sample) leaves nothing fixed
    steep = decide_overhead({16: 16 / 4e-3, 64: 64 / 20e-3, 256: 256 / 84e-3}, 64, "cpu", "mlp", None, None, False)
    assert steep is not None and steep.numbers["overhead_s"] == 0.0 and steep.value == "work-bound"


def test_bandwidth_is_the_calibrated_figure_else_the_spec_sheets():
    cnn = h100("cnn")
    assert memory_bandwidths(cnn, {})["cuda:0"] == pytest.approx(3.35e12)  # H100 SXM5's sheet
    name = cnn[-1].device_name
    assert memory_bandwidths(cnn, {name: {"memory_bandwidth_bytes_s": 2.97e12}})["cuda:0"] == 2.97e12
    cpu = [r for r in cnn if r.spec.device == "cpu"]
    assert cpu and memory_bandwidths(cpu, {}) == {"cpu": None}  # a CPU the sheets lack


def _stored_speeds(db: str, speeds: dict[int, float]) -> None:
    """fp32 eager speed trials of mlp on the CPU at each batch, in a run of this machine (recommend
    reads this machine's results only)."""
    store = Store(db)
    run_id = start_run(store, "test")
    for batch, speed in speeds.items():
        spec = TrialSpec(workload="mlp", device="cpu", batch_size=batch, measure=MeasureOptions())
        store.add_result(Result(run_id=run_id, created_at="2026-11-26T00:00:00+00:00", spec=spec, status="ok",
                                metrics=Metrics(samples_per_s=speed, samples_per_s_ci=(speed * 0.99, speed * 1.01),
                                                steps_measured=10)))


def test_recommend_measures_compile_where_the_step_is_overhead_bound(tmp_path):
    """Three stored batches whose step is 20 ms whatever the batch: the recommendation asks for
    torch.compile at the chosen batch (listed as missing with --no-run), with the reason."""
    db = str(tmp_path / "r.db")
    _stored_speeds(db, {batch: batch / (20e-3 + 1e-5 * batch) for batch in (16, 32, 64)})
    outcome = recommend("mlp", devices=["cpu"], batch_sizes=[16, 32, 64], run_missing=False, db=db)
    lines = {line.decision: line for line in outcome.lines}
    assert lines["batch_size"].value == 64 and lines["step_overhead"].value == "overhead-bound"
    # 20 ms of the 20.64 ms step at b64 is fixed: 97%
    assert "torch.compile default on cpu at b64 (per-step overhead is 97% of the step and compile was not " \
           "measured)" in outcome.missing, outcome.missing


def test_roofline_names_the_overhead_bound_workloads_of_a_database(tmp_path):
    """`rigbench roofline` calls cnn on the H100 memory-bound by its estimated traffic; the note
    says what the speeds across batches show: 90% of its b512 step is per-step overhead. resnet
    and catsdogs (work-bound) and the one-batch workloads get no note."""
    from rigbench import api

    db = str(tmp_path / "h100.db")
    api.import_bundle(str(BUNDLE), db)
    notes = api.overhead_bound_notes([r for r, _ in api.roofline(db=db)], db=db)
    assert len(notes) == 1 and notes[0].startswith("cnn torch cuda:0 (NVIDIA H100 80GB HBM3): step overhead: ")
    assert "(90% of the step)" in notes[0]
    resnet = [r for r, _ in api.roofline(db=db, where=["workload=resnet"])]
    assert api.overhead_bound_notes(resnet, db=db) == []


def test_the_scaling_command_keeps_the_workloads_options():
    """`rigbench scaling gpt` would time the default gpt, not the tiny one the line is about."""
    results = []
    for i, batch in enumerate((1, 2, 4)):
        speed = batch / (5e-3 + 1e-4 * batch)
        spec = TrialSpec(workload="gpt", workload_options={"preset": "tiny"}, device="cpu", batch_size=batch)
        results.append(Result(id=i + 1, run_id="r", created_at="2026-11-26T00:00:00+00:00", spec=spec, status="ok",
                              metrics=Metrics(samples_per_s=speed, steps_measured=10)))
    line = rules.step_overhead_line(results, "cpu", 4, "adamw", None, compile_measured=False)
    assert line is not None and line.value == "overhead-bound"
    assert "`rigbench scaling gpt:preset=tiny -d cpu` measures what torch.compile does to it" in line.text


def test_step_times_that_do_not_fit_a_line_get_no_verdict():
    """The audit's case: 8.99, 256 and 628 ms at b16, b64, b256. The least-squares line is 29.5 ms +
    2.39 ms a sample (by hand: mean b 112, mean t 297.6 ms; slope = sum (b - 112)(t - 297.6) /
    sum (b - 112)^2 = 77,213 / 32,256 = 2.394 ms; intercept 297.6 - 2.394 x 112 = 29.5 ms), whose
    fixed part is more than the whole b16 step: no verdict, rather than '8.99 ms of the 8.99 ms step
    does not grow with the batch'."""
    audit = decide_overhead({16: 1779.7, 64: 249.8, 256: 407.9}, 16, "cpu", "cnn", None, None, False)
    assert audit is not None and audit.value is None and "overhead_share" not in audit.numbers
    assert audit.numbers["fixed_s"] == pytest.approx(29.5e-3, rel=0.01)
    assert audit.numbers["per_sample_s"] == pytest.approx(2.39e-3, rel=0.01)
    assert audit.text.startswith("step overhead: no verdict: the step times do not fit a line (the line through "
                                 "b16, b64, b256 is 29.5 ms + 2.39 ms per sample, worst point off by 654%)")
    assert audit.text.endswith("its fixed part, 29.5 ms, is more than the whole b16 step (8.99 ms)")
    # falling: 453 ms - 2.13 ms a sample from b16 to b128 (419 ms down to 180 ms)
    falling = decide_overhead({b: b / (0.453 - 0.00213 * b) for b in (16, 64, 128)}, 16, "cpu", "cnn", None, None,
                              False)
    assert falling is not None and falling.value is None
    assert "the line falls as the batch grows, from 419 ms at b16 to 180 ms at b128" in falling.text
    assert "b16, b64, b128 is 453 ms - 2.13 ms per sample" in falling.text  # not "+ -2.13 ms"
    # rising, with a small fixed part, but bent: 10, 12, 60 ms is 2.67 ms + 220 µs a sample, b64 off by 40%
    bent = decide_overhead({16: 16 / 0.010, 64: 64 / 0.012, 256: 256 / 0.060}, 64, "cpu", "mlp", None, None, False)
    assert bent is not None and bent.value is None and bent.numbers["worst_residual"] == pytest.approx(0.397, abs=1e-3)
    assert "more than 25% of its step" in bent.text
    # a flat step that leans a little the other way (2.15, 2.08, 2.07 ms) is still all overhead
    flat = decide_overhead({32: 32 / 2.15e-3, 128: 128 / 2.08e-3, 512: 512 / 2.07e-3}, 512, "cuda:0", "cnn", None,
                           None, False)
    assert flat is not None and flat.value == "overhead-bound"


def test_no_verdict_measures_no_compile_and_adds_no_roofline_note(tmp_path):
    """recommend measures torch.compile only for an overhead-bound step, and `roofline` notes only
    those: step times that fit no line (8.99, 256, 628 ms at b16, b64, b256) get neither."""
    from rigbench import api

    db = str(tmp_path / "r.db")
    _stored_speeds(db, {16: 1779.7, 64: 249.8, 256: 407.9})
    outcome = recommend("mlp", devices=["cpu"], batch_sizes=[16, 64, 256], run_missing=False, db=db)
    lines = {line.decision: line for line in outcome.lines}
    assert lines["step_overhead"].value is None and "do not fit a line" in lines["step_overhead"].text
    assert not any("torch.compile" in text for text in outcome.missing), outcome.missing
    assert api.overhead_bound_notes([r for r, _ in api.roofline(db=db)], db=db) == []
