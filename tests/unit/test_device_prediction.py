"""The spec sheets' B/A for one trial on two devices (analysis/device_prediction.py), and
`rigbench compare A B` showing it: the ratio of the trial's roofline ceilings, applied only
where the trial came near its ceiling on both (the H100 against H200 finding,
docs/results/gpu-h200.md)."""

from __future__ import annotations

import numpy as np
import pytest
from rich.console import Console

from rigbench.analysis.compare import compare_results
from rigbench.analysis.device_prediction import NEAR_CEILING, predict
from rigbench.reports.compare_tables import pairs_table
from rigbench.spec import Metrics, Result, TrialSpec

H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
SOFTWARE = {"torch": "2.11.0", "cuda": "13.0"}
PARAMS = 1_000_000  # mlp trains with SGD + momentum: 5 x 4 B x 1e6 = 20 MB of optimiser traffic a step


def trial(device_name: str, samples_per_s: float, flops_per_sample: float, bytes_per_sample: float | None,
          rid: int = 1, run_id: str = "a", precision: str = "fp32",
          created_at: str = "2026-01-01T00:00:00+00:00") -> Result:
    spec = TrialSpec(workload="mlp", device="cuda:0", batch_size=64, precision=precision)
    rng = np.random.default_rng(rid)
    step = 64 / samples_per_s
    return Result(id=rid, run_id=run_id, created_at=created_at, spec=spec, status="ok",
                  device_name=device_name, software=SOFTWARE,
                  step_times_s=list(step * (1 + 0.01 * rng.standard_normal(100))),
                  metrics=Metrics(samples_per_s=samples_per_s, flops_per_sample=flops_per_sample,
                                  bytes_per_sample=bytes_per_sample, params=PARAMS, steps_measured=100))


# 1e7 FLOP and 1 MB a sample: 6.4e8 FLOP over 64e6 + 20e6 bytes a step = 7.62 FLOP/byte, below
# both ridge points (66.9 TFLOP/s over 3.35 and 4.8 TB/s): memory-bound on both cards
MEMORY = {"flops_per_sample": 1e7, "bytes_per_sample": 1e6}
# 1e9 FLOP and 10 kB a sample: 6.4e10 FLOP over 20.64e6 bytes = 3,101 FLOP/byte: compute-bound
COMPUTE = {"flops_per_sample": 1e9, "bytes_per_sample": 1e4}


def test_a_memory_bound_trial_is_predicted_to_follow_the_bandwidths_but_not_far_below_its_ceiling():
    # ceiling on the H100: 7.62 x 3.35e12 = 25.5 TFLOP/s; 76,600 samples/s x 1e7 FLOP = 3% of it
    a, b = trial(H100, 76_600, **MEMORY), trial(H200, 80_000, **MEMORY, rid=2)
    p = predict(a, b)
    assert p is not None and p.ratio == pytest.approx(4800 / 3350)  # the spec sheets' bandwidths
    assert (p.bound_a, p.bound_b) == ("memory-bound", "memory-bound")
    assert p.reached_a == pytest.approx(76_600 * 1e7 / (6.4e8 / 84e6 * 3350e9))
    assert not p.applies and "does not apply" in p.note()
    # the same trial near its ceiling (60% of it on both cards): the prediction stands
    near = predict(trial(H100, 1_530_000, **MEMORY), trial(H200, 2_190_000, **MEMORY, rid=2))
    assert near is not None and near.applies and near.note().endswith("of the ceiling)")


def test_a_compute_bound_trial_on_two_cards_of_the_same_compute_is_predicted_equal():
    # 30% of the fp32 peak (66.9 TFLOP/s on both sheets): 20,070 samples/s x 1e9 FLOP
    p = predict(trial(H100, 20_070, **COMPUTE), trial(H200, 20_500, **COMPUTE, rid=2))
    assert p is not None and p.ratio == pytest.approx(1.0) and p.bound_a == "compute-bound"
    assert p.reached_a == pytest.approx(0.30, abs=0.001) and p.reached_a >= NEAR_CEILING and p.applies


def test_no_prediction_without_a_sheet_or_a_byte_estimate():
    assert predict(trial("Some GPU nobody sells", 1000, **MEMORY), trial(H200, 1000, **MEMORY)) is None
    no_bytes = {"flops_per_sample": 1e7, "bytes_per_sample": None}
    assert predict(trial(H100, 1000, **no_bytes), trial(H200, 1000, **no_bytes)) is None


def test_compare_puts_the_prediction_beside_the_measured_ratio():
    a = [trial(H100, 76_600, **MEMORY), trial(H100, 20_070, **COMPUTE, rid=3)]
    a[1].spec = a[1].spec.model_copy(update={"batch_size": 128})
    b = [trial(H200, 80_000, **MEMORY, rid=2, run_id="b"), trial(H200, 20_500, **COMPUTE, rid=4, run_id="b")]
    b[1].spec = b[1].spec.model_copy(update={"batch_size": 128})
    pairs = {p.key: p for p in compare_results(a, b, same_machine=False).pairs}
    memory, compute = pairs["mlp torch gpu b64 fp32"], pairs["mlp torch gpu b128 fp32"]
    assert memory.predicted is not None and not memory.predicted.applies
    assert memory.as_dict()["predicted"]["ratio"] == pytest.approx(4800 / 3350)
    assert any(n.startswith("spec sheets predict B/A x1.43") for n in memory.notes)
    console = Console(width=250, record=True)
    console.print(pairs_table([memory, compute]))
    text = console.export_text()
    assert "spec B/A" in text and "(1.43)" in text and " 1.00 " in text
    # the same card on both sides: nothing to predict, no column
    same = compare_results([trial(H100, 76_600, **MEMORY)], [trial(H100, 70_000, **MEMORY, rid=2, run_id="b")],
                           same_machine=False).pairs
    assert same[0].predicted is None and same[0].as_dict()["predicted"] is None
    console = Console(width=250, record=True)
    console.print(pairs_table(same))
    assert "spec B/A" not in console.export_text()


# The H100 suite's bf16 trials were stored when the estimator counted bf16 at fp32 bytes; the
# H200's later, at bf16 bytes: cnn b128 2.01 MB and 1.11 MB a sample (12.7 and 22.8 FLOP/byte
# by their own counts), and `compare` printed spec B/A 2.57 where the sheets allow x1.43 at most.
OLD, NEW = "2026-11-23T07:29:45+00:00", "2026-11-27T16:25:28+00:00"


def test_both_devices_are_predicted_at_one_intensity_the_newer_estimate():
    # A stored twice B's bytes for the same configuration: 4.32 FLOP/byte against B's 7.62
    a = trial(H100, 76_600, 1e7, 2e6, precision="bf16", created_at=OLD)
    b = trial(H200, 80_000, 1e7, 1e6, rid=2, run_id="b", precision="bf16", created_at=NEW)
    p = predict(a, b)
    assert p is not None and p.ratio == pytest.approx(4800 / 3350)  # was 4800 x 7.62 / (3350 x 4.32) = 2.53
    assert p.intensity == pytest.approx(6.4e8 / 84e6)  # B's, the newer trial's
    assert p.estimate_from == "B" and p.stored_intensity_a == pytest.approx(6.4e8 / 148e6)
    # A's share of its ceiling is read at the shared intensity too
    assert p.reached_a == pytest.approx(76_600 * 1e7 / (6.4e8 / 84e6 * 3350e9))
    assert "both read at 7.62 FLOP/byte, B's estimate (the newer trial's; A's stored estimate differs, 4.32" in p.note()
    # the newer trial on side A: A's estimate for both, whichever side it is on
    swapped = predict(b.model_copy(update={"device_name": H100}), a.model_copy(update={"device_name": H200}))
    assert swapped is not None and swapped.estimate_from == "A" and swapped.ratio == pytest.approx(4800 / 3350)
    # equal estimates: nothing to say
    same = predict(trial(H100, 76_600, **MEMORY), trial(H200, 80_000, **MEMORY, rid=2))
    assert same is not None and same.estimate_from == "both" and "estimate" not in same.note()


def test_a_side_without_an_estimate_takes_the_others():
    # the same configuration moves the same bytes: a result stored before rigbench estimated
    # traffic is predicted at the other side's estimate, and the note says whose
    p = predict(trial(H100, 76_600, 1e7, None, created_at=OLD), trial(H200, 80_000, **MEMORY, rid=2, created_at=NEW))
    assert p is not None and p.ratio == pytest.approx(4800 / 3350) and p.estimate_from == "B"
    assert p.stored_intensity_a is None and "A stored none" in p.note()


def test_the_later_estimate_revision_wins_over_the_newer_date():
    """A result stores the revision of the traffic estimate that counted its bytes (2: the
    trial's precision and fused attention); one from before revisions holds fp32 bytes for a bf16
    trial. The later revision serves the pair even where its trial is the older one, and the note
    says which estimate the other side's figure was."""
    a = trial(H100, 76_600, 1e7, 1e6, precision="bf16", created_at=OLD)
    a = a.model_copy(update={"metrics": a.metrics.model_copy(update={"bytes_estimate_revision": 2})})
    b = trial(H200, 80_000, 1e7, 2e6, rid=2, run_id="b", precision="bf16", created_at=NEW)  # newer, no revision
    p = predict(a, b)
    assert p is not None and p.estimate_from == "A" and p.intensity == pytest.approx(6.4e8 / 84e6)
    assert ("both read at 7.62 FLOP/byte, A's estimate (the later estimate; B's stored one, 4.32, is an earlier "
            "estimate's (one from before revisions were stored, fp32 bytes))") in p.note()
