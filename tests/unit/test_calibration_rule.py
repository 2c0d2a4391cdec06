"""The calibration's peak rule (analysis/matmul_peak.py) on synthetic per-size timings: the peak is
the median at the largest size that fits, never the best size; --quick and the full run
climb to the same sizes; `rigbench calibrate` prints the size curve."""

import pytest

from rigbench.analysis import matmul_peak as peak
from rigbench.cli.calibrate import size_curves


def entry(n, flops_per_s):
    return {"n": n, "flops_per_s": flops_per_s}


def synthetic(rates, first_call=None):
    """A measure(n, limit_s) that reads each size's median rate from `rates` (and its first
    timed call's seconds from `first_call`, default the median time), recording the calls."""
    calls = []

    def measure(n, limit_s):
        calls.append(n)
        single = (first_call or {}).get(n, 2 * n**3 / rates[n])
        if limit_s is not None and single > limit_s:
            raise peak.TooSlow(n, single, limit_s)
        return entry(n, rates[n])
    return measure, calls


def test_the_peak_is_the_largest_size_not_the_fastest():
    # the round the issue saw: n=256 read 149 GFLOP/s (cache, noise), n=2048 65 GFLOP/s
    curve = [entry(256, 149e9), entry(512, 90e9), entry(1024, 70e9), entry(2048, 65e9)]
    assert peak.peak_size(curve)["n"] == 2048
    assert peak.peak_size(list(reversed(curve)))["flops_per_s"] == 65e9  # by size, not by order
    with pytest.raises(ValueError):
        peak.peak_size([])


def test_a_size_predicted_far_over_the_time_budget_is_not_tried():
    # 2 * 2048^3 = 17.2 GFLOP: 1.7 s at 10 GFLOP/s is timed once (up to 4 x 1 s);
    # 17 s at 1 GFLOP/s is not
    assert peak.too_slow(entry(1024, 10e9), 2048, 1.0) is None
    why = peak.too_slow(entry(1024, 1e9), 2048, 1.0)
    assert why == "n=2048 skipped: one matmul would take about 17 s (limit 1 s)"


def test_climb_stops_at_the_budget_and_keeps_the_curve():
    # a busy CPU: small sizes read low (per-call stalls), the plateau is ~100 GFLOP/s;
    # 4096 takes 2 * 4096^3 / 100e9 = 1.4 s > 1 s: timed once, then dropped
    measure, calls = synthetic({256: 1e9, 512: 5e9, 1024: 95e9, 2048: 100e9, 4096: 100e9})
    curve, stopped = peak.climb((256, 512, 1024, 2048, 4096), measure, 1.0)
    assert calls == [256, 512, 1024, 2048, 4096]
    assert [s["n"] for s in curve] == [256, 512, 1024, 2048]
    assert stopped == "n=4096 skipped: one matmul took 1.4 s (limit 1 s)"
    assert peak.peak_size(curve)["flops_per_s"] == 100e9


def test_a_stalled_small_size_does_not_stop_the_climb():
    # n=512 read 1.6 GFLOP/s (each call waited on a thread hand-off): the n^3 law predicts
    # 1.3 s for n=1024, which really takes 0.25 s, so it is timed and kept; the first size
    # is measured whatever it takes
    measure, calls = synthetic({512: 1.6e9, 1024: 8.6e9, 2048: 20e9}, first_call={512: 5.0})
    curve, stopped = peak.climb((512, 1024, 2048), measure, 1.0)
    assert [s["n"] for s in curve] == [512, 1024, 2048] and stopped is None


def test_climb_ends_at_an_error_past_the_first_size_and_raises_at_the_first():
    def out_of_memory_above_1024(n, limit_s):
        if n > 1024:
            raise RuntimeError("CUDA out of memory\nmore")
        return entry(n, 1e12)
    curve, stopped = peak.climb((1024, 2048, 4096), out_of_memory_above_1024, 1.0)
    assert [s["n"] for s in curve] == [1024] and stopped == "n=2048: CUDA out of memory"
    with pytest.raises(RuntimeError):
        peak.climb((2048,), out_of_memory_above_1024, 1.0)


@pytest.mark.parametrize("kind", ["cpu", "accelerator"])
def test_quick_and_full_share_the_rule_and_the_largest_sizes(kind):
    quick, full = peak.matmul_plan(kind, quick=True), peak.matmul_plan(kind, quick=False)
    assert quick.max_single_s == full.max_single_s and quick.sizes[-1] == full.sizes[-1]
    assert set(quick.sizes) <= set(full.sizes) and len(quick.sizes) < len(full.sizes)
    assert quick.repeats < full.repeats and quick.repeat_s < full.repeat_s
    # every size is twice the last: the n^3 prediction looks one step ahead
    for plan in (quick, full):
        assert all(b == 2 * a for a, b in zip(plan.sizes, plan.sizes[1:]))


def test_quick_reaches_the_cpu_plateau_sizes():
    # a 2-core CPU plateaus at n=1024-2048; --quick used to stop at 512 and read 6x low
    assert {1024, 2048} <= set(peak.matmul_plan("cpu", quick=True).sizes)
    assert peak.matmul_plan("accelerator", quick=True).sizes[-1] >= 8192


@pytest.mark.parametrize("rates", [
    {256: 1e9, 512: 5e9, 1024: 95e9, 2048: 100e9, 4096: 100e9},  # small CPU: stops before 4096
    {256: 50e9, 512: 400e9, 1024: 1e12, 2048: 1.5e12, 4096: 1.6e12},  # many cores: all sizes
    {256: 0.3e9, 512: 0.4e9, 1024: 0.4e9, 2048: 0.4e9, 4096: 0.4e9},  # bf16 without hardware
])
def test_quick_and_full_pick_the_same_peak_size(rates):
    picked = {}
    for quick in (True, False):
        plan = peak.matmul_plan("cpu", quick)
        measure, _ = synthetic(rates)
        curve, _ = peak.climb(plan.sizes, measure, plan.max_single_s)
        picked[quick] = peak.peak_size(curve)
    assert picked[True] == picked[False]


def test_calibrate_prints_the_size_curve():
    calibration = {"measurements": [
        {"kind": "matmul", "precision": "fp32", "status": "ok", "value": 1e11, "unit": "FLOP/s",
         "detail": {"peak_n": 2048, "repeats": 5, "stopped": "n=4096 skipped: x",
                    "sizes": [entry(1024, 0.95e11), entry(2048, 1e11)]}},
        {"kind": "matmul", "precision": "bf16", "status": "unsupported", "value": None,
         "unit": "FLOP/s", "detail": {"reason": "no"}},
        {"kind": "memory_bandwidth", "precision": None, "status": "ok", "value": 1e10,
         "unit": "B/s", "detail": {}}]}
    assert size_curves(calibration) == [
        "matmul fp32 by size (TFLOP/s, median of 5): n=1024 0.095, n=2048 0.1; "
        "peak from n=2048, the largest that fitted (n=4096 skipped: x)"]
