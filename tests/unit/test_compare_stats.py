"""Mann-Whitney U against hand-computed cases and scipy; the significance rule and the
pairing of `rigbench compare` (equal configurations only; the rest listed unpaired, issue 23
item 13) on synthetic samples with known answers."""

import math

import numpy as np
import pytest

from rigbench.analysis.compare import Pair, adjust_for_pairs, compare_results
from rigbench.analysis.significance import ratio_ci, significance
from rigbench.analysis.stats import mann_whitney_u, welch_p
from rigbench.spec import Result, TrialSpec

SOFTWARE = {"torch": "2.13.0", "cuda": None, "cudnn": None, "mkldnn": True, "num_threads": 2}


def test_u_and_exact_p_by_hand():
    # complete separation: no value of a beats a value of b, U = 0. Of the C(6,3) = 20 equally
    # likely rankings one gives U = 0 and one U = 9: two-sided p = 2/20.
    assert mann_whitney_u([1, 2, 3], [4, 5, 6]) == (0.0, pytest.approx(0.1))
    assert mann_whitney_u([4, 5, 6], [1, 2, 3]) == (9.0, pytest.approx(0.1))
    # a = [1, 5], b = [2, 3, 4]: 5 beats three values, 1 none -> U = 3 = n1*n2/2, the centre: p = 1
    assert mann_whitney_u([1, 5], [2, 3, 4]) == (3.0, pytest.approx(1.0))


def test_normal_approximation_with_ties_by_hand():
    # a = [1, 2, 2], b = [2, 3, 4]. Ranks of 1 2 2 2 3 4: 1, 3, 3, 3, 5, 6 -> R_a = 7, U = 7 - 6 = 1.
    # Ties (one group of 3) force the approximation: var = 9/12 * (7 - (27 - 3)/(6*5)) = 4.65,
    # z = (|1 - 4.5| - 0.5) / sqrt(4.65) = 1.39121, p = erfc(z / sqrt 2) = 0.164160
    u, p = mann_whitney_u([1, 2, 2], [2, 3, 4])
    assert u == 1.0
    assert p == pytest.approx(math.erfc(3 / math.sqrt(4.65) / math.sqrt(2)))
    assert p == pytest.approx(0.164160, abs=1e-6)


def test_all_equal_values_give_p_one():
    assert mann_whitney_u([0.1] * 30, [0.1] * 30) == (450.0, 1.0)


@pytest.mark.parametrize("n1,n2,shift,rounding", [(5, 7, 0.8, None), (12, 20, 0.3, None),
                                                   (40, 50, 0.4, None), (60, 45, 0.3, 1)])
def test_agrees_with_scipy(n1, n2, shift, rounding):
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(n1 * 100 + n2)
    a, b = rng.normal(size=n1), rng.normal(shift, size=n2)
    if rounding is not None:  # creates ties
        a, b = np.round(a, rounding), np.round(b, rounding)
    exact = max(n1, n2) <= 20 and len(np.unique(np.r_[a, b])) == n1 + n2
    ref = scipy_stats.mannwhitneyu(a, b, alternative="two-sided", method="exact" if exact else "asymptotic")
    u, p = mann_whitney_u(a, b)
    assert u == pytest.approx(float(ref.statistic))
    assert p == pytest.approx(float(ref.pvalue), rel=1e-9)


def _times(rng, median_s, n=200, spread=0.03):
    return list(median_s * (1 + spread * rng.standard_normal(n)))


def test_identical_distributions_are_no_change():
    rng = np.random.default_rng(1)
    sig = significance(_times(rng, 0.1), _times(rng, 0.1))
    assert sig["verdict"] == "no change"
    assert sig["p_value"] > 0.05
    low, high = sig["ratio_ci"]
    assert low < 1 < high


def test_a_20_percent_shift_is_significant_with_the_right_sign():
    rng = np.random.default_rng(2)
    before = _times(rng, 0.12)
    after = _times(rng, 0.10)  # steps 1/6 shorter: 20% more samples/s
    faster = significance(before, after)
    assert faster["verdict"] == "faster"
    assert faster["ratio"] == pytest.approx(1.2, rel=0.02)
    assert faster["p_value"] < 1e-10
    assert faster["ratio_ci"][0] > 1.15 and faster["ratio_ci"][1] < 1.25
    slower = significance(after, before)
    assert slower["verdict"] == "slower"
    assert slower["ratio"] == pytest.approx(1 / 1.2, rel=0.02)


def test_the_ratio_interval_draws_correlated_steps_in_blocks():
    """Correlated steps tell less than as many independent ones: drawn one by one, the ratio's
    interval held 1.0 for 82% of simulated A/A pairs of 60 AR(1) steps (benchmarks/
    stats_calibration.py --only ratio); in blocks it is wider than for the same steps shuffled."""
    rng = np.random.default_rng(11)
    logs = [0.0]
    for _ in range(59):
        logs.append(0.8 * logs[-1] + rng.normal(0.0, 0.06))
    a = [0.1 * math.exp(x) for x in logs]
    b = list(np.random.default_rng(12).permutation(a))  # the same steps, their order lost
    correlated, shuffled = ratio_ci(a, a[::-1]), ratio_ci(b, b[::-1])
    assert math.log(correlated[1] / correlated[0]) > 1.5 * math.log(shuffled[1] / shuffled[0])


def test_ratio_ci():
    # constant step times: every resample has the same medians, the interval is the point
    assert ratio_ci([0.1] * 5, [0.05] * 5) == (pytest.approx(2.0), pytest.approx(2.0))
    rng = np.random.default_rng(7)
    a, b = _times(rng, 0.1, n=50), _times(rng, 0.08, n=50)
    low, high = ratio_ci(a, b)
    assert low < np.median(a) / np.median(b) < high
    assert ratio_ci(a, b) == (low, high)  # fixed seed: the same samples give the same interval


def make(times, batch=32, device="cpu", precision="fp32", status="ok", software=None, rid=1,
         run_id="a", device_name="AMD EPYC", threads=None):
    spec = TrialSpec(workload="mlp", device=device, batch_size=batch, precision=precision, threads=threads)
    return Result(id=rid, run_id=run_id, created_at="2026-01-01T00:00:00+00:00", spec=spec, status=status,
                  device_name=device_name, software=software or SOFTWARE,
                  step_times_s=times if status == "ok" else [])


def test_compare_results_pairs_and_judges():
    rng = np.random.default_rng(3)
    a = [make(_times(rng, 0.12), rid=1), make(_times(rng, 0.05), batch=8, rid=2)]
    b = [make(_times(rng, 0.10), rid=3, run_id="b"), make(_times(rng, 0.05), batch=8, rid=4, run_id="b")]
    pairs = {p.key: p for p in compare_results(a, b, same_machine=True).pairs}
    assert pairs["mlp torch cpu b32 fp32"].verdict == "faster"
    assert pairs["mlp torch cpu b8 fp32"].verdict == "no change"


def test_different_versions_are_incomparable_unless_asked():
    rng = np.random.default_rng(4)
    a = [make(_times(rng, 0.12))]
    b = [make(_times(rng, 0.10), software={**SOFTWARE, "torch": "2.4.0"}, run_id="b")]
    (pair,) = compare_results(a, b, same_machine=True).pairs
    assert pair.verdict == "incomparable"
    assert "software differs: torch 2.13.0 -> 2.4.0" in pair.reason
    assert pair.ratio is None
    (pair,) = compare_results(a, b, same_machine=True, across_versions=True).pairs
    assert pair.verdict == "faster"
    assert pair.notes == ["versions differ: torch 2.13.0 -> 2.4.0"]


def test_trials_timed_differently_are_incomparable_and_say_how():
    """A JAX trial from before the host timer's windows (no "timer" stored: a wait after every
    step) against one after: the speed-up would be the timer's (docs/results/gpu-h200-timers.md)."""
    rng = np.random.default_rng(6)
    windowed = {**SOFTWARE, "timer": "host clock, a wait for the device per 0.1 s window of steps"}
    a = [make(_times(rng, 0.12))]
    b = [make(_times(rng, 0.10), software=windowed, run_id="b")]
    (pair,) = compare_results(a, b, same_machine=True).pairs
    assert pair.verdict == "incomparable"
    assert "software differs: timer (none) -> host clock, a wait for the device per 0.1 s window" in pair.reason


def test_gpu_library_versions_do_not_matter_on_the_cpu():
    rng = np.random.default_rng(5)
    a = [make(_times(rng, 0.1))]
    b = [make(_times(rng, 0.1), software={**SOFTWARE, "cuda": "12.4", "num_threads": 16}, run_id="b")]
    (pair,) = compare_results(a, b, same_machine=True).pairs
    assert pair.verdict == "no change"
    gpu_a = [make(_times(rng, 0.1), device="cuda:0")]
    gpu_b = [make(_times(rng, 0.1), device="cuda:0", software={**SOFTWARE, "cuda": "12.4"}, run_id="b")]
    (pair,) = compare_results(gpu_a, gpu_b, same_machine=True).pairs
    assert pair.verdict == "incomparable" and "cuda (none) -> 12.4" in pair.reason


def test_only_equal_configurations_pair_and_the_rest_is_listed_with_its_differences():
    """Issue 23 item 13: a bf16 b16 trial was lined up with an fp32 b16 one (a row of
    "unrelated settings"); now only equal configuration keys pair, and each leftover names the
    closest trial of its workload on the other side and how it differs."""
    t = [0.1, 0.11, 0.12, 0.1]
    a = [make(t, batch=32, rid=1), make(t, batch=16, precision="bf16", rid=2),
         make(t, batch=64, rid=3), make(t, batch=128, rid=4, device="cuda:0")]
    b = [make(t, batch=64, rid=5, run_id="b"), make(t, batch=16, rid=6, run_id="b"),
         make(t, batch=128, status="oom", rid=7, run_id="b", device="cuda:0")]
    found = compare_results(a, b, same_machine=True)
    assert sorted((p.verdict, p.key, p.reason) for p in found.pairs) == [
        ("incomparable", "mlp torch cuda:0 b128 fp32", "status ok in A, oom in B"),  # equal keys, one failed
        ("no change", "mlp torch cpu b64 fp32", ""),
    ]
    for p in found.pairs:
        assert p.a.result.spec.config_key() == p.b.result.spec.config_key()
    assert [(u.result.id, u.closest.id, u.differences) for u in found.only_a] == [
        (1, 6, ["batch 32 vs 16"]),  # b16 and b64 are as near: the newest
        (2, 6, ["precision bf16 vs fp32"]),
    ]
    assert [(u.result.id, u.closest.id, u.differences) for u in found.only_b] == [(6, 2, ["precision fp32 vs bf16"])]
    assert found.only_b[0].as_dict() == {"id": 6, "run_id": "b", "trial": "mlp torch cpu b16 fp32",
                                         "closest_id": 2, "differences": ["precision fp32 vs bf16"]}


def test_a_trial_without_its_workload_on_the_other_side_has_no_closest():
    t = [0.1, 0.11, 0.12, 0.1]
    other = make(t, run_id="b")
    other.spec = other.spec.model_copy(update={"workload": "cnn"})
    found = compare_results([make(t)], [other], same_machine=True)
    assert found.pairs == []
    assert [(u.closest, u.differences) for u in found.only_a + found.only_b] == [(None, []), (None, [])]


def test_unpaired_lines_are_bounded_and_name_the_difference():
    from rigbench.reports.compare_tables import unpaired_lines

    t = [0.1, 0.11, 0.12, 0.1]
    a = [make(t, batch=b, rid=b) for b in range(1, 14)]
    found = compare_results(a, [make(t, batch=64, rid=100, run_id="b")], same_machine=True)
    lines = unpaired_lines(found.only_a, found.only_b, limit=10)
    assert lines[0] == "Only in A, no trial of the same configuration in B (13):"
    assert lines[1] == "  #1 mlp torch cpu b1 fp32: closest in B: #100, batch 1 vs 64"
    assert len(lines) == 1 + 10 + 1 + 1 + 1  # 10 of A, the count of the rest, B's heading and its one trial
    assert lines[11] == "  ... and 3 more (--json lists every one)"
    assert lines[-1] == "  #100 mlp torch cpu b64 fp32: closest in A: #13, batch 64 vs 13"


def test_unmatched_precision_is_unpaired_with_the_difference():
    t = [0.1, 0.11, 0.12, 0.1]
    found = compare_results([make(t, batch=16, precision="bf16")], [make(t, batch=16, run_id="b")],
                            same_machine=True)
    assert found.pairs == [] and found.only_a[0].differences == ["precision bf16 vs fp32"]
    found = compare_results([make(t, batch=8)], [make(t, batch=8, device="cuda:0", run_id="b")], same_machine=True)
    assert found.pairs == [] and found.only_b[0].differences == ["device cuda:0 vs cpu"]


def test_across_machines_devices_match_by_kind():
    rng = np.random.default_rng(6)
    a = [make(_times(rng, 0.1), device="cuda:0", device_name="NVIDIA GeForce RTX 3060")]
    b = [make(_times(rng, 0.05), device="mps", device_name="Apple GPU (MPS)", run_id="b")]
    found = compare_results(a, b, same_machine=True)
    assert found.pairs == [] and len(found.only_a) == len(found.only_b) == 1
    (pair,) = compare_results(a, b, same_machine=False).pairs
    assert pair.verdict == "faster" and pair.ratio == pytest.approx(2.0, rel=0.05)
    assert pair.key == "mlp torch gpu b32 fp32"
    assert "devices: NVIDIA GeForce RTX 3060 -> Apple GPU (MPS)" in pair.notes


def test_sides_split_by_a_field_pair_across_it():
    """`compare RUN --where-a device=cpu --where-b device=cuda:0` (COMPARING.md): one run, one
    machine, so devices match by id, and without the split no trial could ever pair."""
    rng = np.random.default_rng(16)
    cpu = [make(_times(rng, 0.2), rid=1), make(_times(rng, 0.2), batch=8, rid=2)]
    gpu = [make(_times(rng, 0.02), device="cuda:0", device_name="NVIDIA H100", rid=3),
           make(_times(rng, 0.02), device="cuda:0", batch=16, rid=4)]
    assert compare_results(cpu, gpu, same_machine=True).pairs == []
    found = compare_results(cpu, gpu, same_machine=True, split={"device"})
    (pair,) = found.pairs
    assert pair.verdict == "faster" and pair.ratio == pytest.approx(10, rel=0.05)
    assert "A vs B: device cpu vs cuda:0" in pair.notes
    # the other fields still have to agree: b8 and b16 stay unpaired, each naming the batch
    assert [u.differences for u in found.only_a] == [["batch 8 vs 16"]]
    assert [u.differences for u in found.only_b] == [["batch 16 vs 8"]]


def test_two_frameworks_compare_on_the_libraries_both_have():
    rng = np.random.default_rng(17)
    torch_side = [make(_times(rng, 0.1), software={"python": "3.11.9", "torch": "2.13.0"})]
    jax_spec = torch_side[0].spec.model_copy(update={"framework": "jax"})
    jax_side = [make(_times(rng, 0.1), software={"python": "3.11.9", "jax": "0.10.2"}, run_id="b", rid=2)
                .model_copy(update={"spec": jax_spec})]
    (pair,) = compare_results(torch_side, jax_side, same_machine=True, split={"framework"}).pairs
    assert pair.verdict == "no change" and "A vs B: framework torch vs jax" in pair.notes
    # the table's framework cell names both, as its device cell does (`cpu/cuda:0`); it showed A's alone
    from rich.console import Console

    from rigbench.reports.compare_tables import pairs_table
    console = Console(width=200, record=True)
    console.print(pairs_table([pair]))
    assert " torch/jax " in console.export_text()
    other_python = [jax_side[0].model_copy(update={"software": {"python": "3.12.1", "jax": "0.10.2"}})]
    (pair,) = compare_results(torch_side, other_python, same_machine=True, split={"framework"}).pairs
    assert pair.verdict == "incomparable" and pair.reason == "software differs: python 3.11.9 -> 3.12.1"


def test_three_steps_each_can_never_be_significant_and_says_so():
    (pair,) = compare_results([make([0.3, 0.31, 0.32])], [make([0.1, 0.11, 0.12], run_id="b")],
                              same_machine=True).pairs
    assert pair.p_value == pytest.approx(0.1)
    assert pair.verdict == "no change"
    assert "smallest possible p is 0.1" in pair.reason


def test_every_configuration_field_takes_part_in_pairing():
    """Pairing follows TrialSpec.config_key: a trial differing in any configuration field
    (lr, world size, compile, framework) is never paired; the difference is named."""
    t = [0.1, 0.11, 0.12, 0.1]
    a = make(t)
    for update, words in (({"lr": 0.1}, "lr default vs 0.1"), ({"world_size": 2}, "processes 1 vs 2"),
                          ({"compile": "reduce-overhead"}, "compile off vs reduce-overhead"), ({"framework": "jax"}, "framework torch vs jax"),
                          ({"data_parallel": True}, "data-parallel wrapper False vs True")):
        other = make(t, run_id="b")
        other.spec = other.spec.model_copy(update=update)
        found = compare_results([a], [other], same_machine=True)
        assert found.pairs == [] and found.only_a[0].differences == [words], update


def test_two_revisions_of_a_network_are_never_compared():
    """A rebuilt network keeps its name but not its revision: old and new trials are never
    paired, however alike their step times; the difference is named."""
    rng = np.random.default_rng(7)
    old, new = make(_times(rng, 0.2)), make(_times(rng, 0.1), run_id="b")
    old.spec = old.spec.model_copy(update={"workload_revision": 1})
    new.spec = new.spec.model_copy(update={"workload_revision": 2})
    found = compare_results([old], [new], same_machine=True)
    assert found.pairs == []
    assert found.only_a[0].differences == ["network revision 1 vs 2"]


def _trial(speed, rid, run_id, batch=32, n=60, spread=0.01):
    """A trial whose steps agree within +-1% around batch / speed: a tight CI of its own."""
    rng = np.random.default_rng(rid)
    return make(list(batch / speed * (1 + spread * rng.standard_normal(n))), rid=rid, run_id=run_id)


def test_repeats_are_judged_on_trials_so_drift_between_trials_is_not_a_change():
    """Identical configurations whose trials drift (1,000 to 1,300 samples/s, as on the dev VM),
    each trial tight within itself: the newest trials alone (1,300 in A, 1,000 in B) have CIs far
    apart and would read 'slower'; over three trials a side the Welch interval holds 1."""
    a = [_trial(v, rid, "a") for rid, v in enumerate((1000.0, 1150.0, 1300.0), start=1)]
    b = [_trial(v, rid, "b") for rid, v in enumerate((1300.0, 1100.0, 1000.0), start=4)]
    assert compare_results(a[-1:], b[-1:], same_machine=True).pairs[0].verdict == "slower"
    (pair,) = compare_results(a, b, same_machine=True).pairs
    speeds_a = [32 / float(np.median(t.step_times_s)) for t in a]
    speeds_b = [32 / float(np.median(t.step_times_s)) for t in b]
    # the p column is Welch's on the trials' log samples/s; one pair: nothing to adjust
    assert pair.verdict == "no change" and pair.p_value == pytest.approx(welch_p(np.log(speeds_a), np.log(speeds_b)))
    assert pair.p_value > 0.05 and pair.p_adjusted is None
    assert pair.notes == ["judged on trials: 3 in A, 3 in B"]
    geo = [math.exp(np.mean(np.log(s))) for s in (speeds_a, speeds_b)]
    assert pair.a.samples_per_s == pytest.approx(geo[0]) and pair.b.samples_per_s == pytest.approx(geo[1])
    assert pair.ratio == pytest.approx(geo[1] / geo[0])
    assert pair.ratio_ci[0] < 1 < pair.ratio_ci[1]
    assert pair.as_dict()["a"]["trials"] == [1, 2, 3]


def test_repeats_that_agree_within_each_side_resolve_a_change():
    a = [_trial(v, rid, "a") for rid, v in enumerate((1000.0, 1010.0, 990.0), start=1)]
    b = [_trial(v, rid, "b") for rid, v in enumerate((1200.0, 1190.0, 1215.0), start=4)]
    (pair,) = compare_results(a, b, same_machine=True).pairs
    assert pair.verdict == "faster" and pair.ratio == pytest.approx(1.2, rel=0.02)
    assert 1 < pair.ratio_ci[0] < pair.ratio < pair.ratio_ci[1]


def test_repeats_on_one_side_only_compare_the_newest_trials_and_say_so():
    a = [_trial(v, rid, "a") for rid, v in enumerate((1000.0, 1300.0), start=1)]
    b = [_trial(1000.0, 3, "b")]
    (pair,) = compare_results(a, b, same_machine=True).pairs
    assert pair.a.result.id == 2 and not pair.a.trials and pair.verdict == "slower"
    assert "2 trials in A, 1 in B: the newest of each compared" in pair.notes[0]


def test_an_older_runs_trials_are_superseded_not_pooled():
    a = [_trial(1000.0, 1, "old"), _trial(1010.0, 2, "old"), _trial(1500.0, 3, "a")]
    b = [_trial(1500.0, 4, "b")]
    (pair,) = compare_results(a, b, same_machine=True).pairs
    assert pair.a.result.id == 3 and not pair.a.trials and pair.verdict == "no change"


def test_welch_interval_against_scipy():
    from rigbench.analysis.stats import welch_interval

    scipy_stats = pytest.importorskip("scipy.stats")
    a, b = [1.0, 2.0, 3.0, 4.0], [2.0, 3.0, 4.0, 5.0, 6.0]
    diff, low, high = welch_interval(a, b)
    ref = scipy_stats.ttest_ind(b, a, equal_var=False)
    # rigbench rounds the Welch degrees of freedom down (6.98 -> 6): a slightly wider interval
    se = diff / float(ref.statistic)
    half = float(scipy_stats.t.ppf(0.975, math.floor(float(ref.df)))) * se
    assert diff == pytest.approx(1.5)
    assert low == pytest.approx(diff - half, rel=1e-3) and high == pytest.approx(diff + half, rel=1e-3)
    assert low < float(ref.confidence_interval(0.95).low) and high > float(ref.confidence_interval(0.95).high)
    with pytest.raises(ValueError, match="at least two values a side"):
        welch_interval([1.0], [2.0, 3.0])
    # Welch's p is scipy's, at 6.98 degrees of freedom (the interval's 6 make it a little wider)
    assert welch_p(a, b) == pytest.approx(float(ref.pvalue), rel=1e-9)
    assert welch_p([1.0, 1.0], [1.0, 1.0]) == 1.0 and welch_p([1.0, 1.0], [2.0, 2.0]) == 0.0


def _tested(verdict, p):
    return Pair("mlp", None, None, verdict, p_value=p)


def test_several_pairs_keep_a_change_only_while_their_adjusted_p_allows():
    """Judged at 5% each, 8 pairs of identical runs called at least one change in about 1
    compare in 5 (3 trials a side, benchmarks/stats_calibration.py --only family); the p values
    of the pairs tested together are adjusted (Benjamini-Hochberg) and a change needs that too."""
    # one change at p = 0.03 among 7 pairs at p = 0.6: adjusted 0.03 x 8 / 1 = 0.24, undone
    lone = [_tested("faster", 0.03)] + [_tested("no change", 0.6) for _ in range(7)]
    adjust_for_pairs(lone)
    assert lone[0].verdict == "no change" and lone[0].p_adjusted == pytest.approx(0.24)
    assert lone[0].reason.startswith("p = 0.03 alone, 0.24 adjusted for the 8 pairs tested together "
                                     "(Benjamini-Hochberg): over 0.05; more trials a side")
    assert [p.p_adjusted for p in lone[1:]] == [pytest.approx(0.6)] * 7
    # every pair changed at p = 0.03: the 8th smallest p times 8 / 8, each stands
    broad = [_tested("slower", 0.03) for _ in range(8)]
    adjust_for_pairs(broad)
    assert [p.verdict for p in broad] == ["slower"] * 8 and broad[0].p_adjusted == pytest.approx(0.03)
    # untested (incomparable) pairs do not count; one tested pair has nothing to adjust
    alone = [_tested("faster", 0.03), _tested("incomparable", None)]
    adjust_for_pairs(alone)
    assert alone[0].verdict == "faster" and alone[0].p_adjusted is None


def test_a_clear_change_among_several_pairs_stands():
    rng = np.random.default_rng(8)
    a = [make(_times(rng, 0.12), rid=1), make(_times(rng, 0.05), batch=8, rid=2)]
    b = [make(_times(rng, 0.10), rid=3, run_id="b"), make(_times(rng, 0.05), batch=8, rid=4, run_id="b")]
    pairs = {p.key: p for p in compare_results(a, b, same_machine=True).pairs}
    changed, same = pairs["mlp torch cpu b32 fp32"], pairs["mlp torch cpu b8 fp32"]
    assert changed.p_value < same.p_value  # adjusted: the smaller p x 2 / 1 (or the larger), the larger x 2 / 2
    assert changed.verdict == "faster" and changed.p_adjusted == pytest.approx(min(2 * changed.p_value, same.p_value))
    assert same.verdict == "no change" and same.p_adjusted == pytest.approx(same.p_value)
    assert changed.as_dict()["p_adjusted"] == changed.p_adjusted


@pytest.mark.parametrize("args", [["--where-a", "workload=resnet", "--where-b", "workload=resnet"],
                                  ["run1", "run1"], ["run1", "--where-a", "device=cpu", "--where-b", "device=cpu"]])
def test_a_side_against_itself_is_refused(tmp_path, args):
    """The same filters (or run) on both sides paired every trial with itself: all "no change"."""
    from typer.testing import CliRunner

    from rigbench import cli

    done = CliRunner().invoke(cli.app, ["compare", *args, "--db", str(tmp_path / "none.db")])
    assert done.exit_code == 2, done.output
    assert "A and B are the same trials (the same run and filters): give two runs, or filters that differ" in done.output


def test_a_side_over_two_gpu_models_says_which_it_compared():
    """`--where-a device=cuda:0` over an H100's and an H200's imported runs: one configuration,
    two GPUs; the newest run's trial is compared and the note names the GPU left out."""
    from tests.unit.test_host_bound import gpu_trial

    h100 = gpu_trial(43.4, 1.0, 10.91, rid=1, run_id="a1").model_copy(update={"device_name": "NVIDIA H100 80GB HBM3"})
    h200 = gpu_trial(82.3, 1.0, 5.95, rid=2, run_id="a2")
    cpu_side = gpu_trial(99.0, 1.0, 6.0, rid=3, run_id="b")
    [pair] = compare_results([h100, h200], [cpu_side], same_machine=False).pairs
    assert ("A also holds this configuration on NVIDIA H100 80GB HBM3 (other runs): only the newest run's, on "
            "NVIDIA H200, is compared; narrow A to one device (a run id, or --where-a device_name=MODEL)") in pair.notes
    [pair] = compare_results([h200], [cpu_side], same_machine=False).pairs
    assert not any(n.startswith("A also holds") for n in pair.notes)


def test_the_compare_command_says_the_p_values_were_adjusted(tmp_path):
    from typer.testing import CliRunner

    from rigbench import cli
    from rigbench.store import Store

    db = str(tmp_path / "c.db")
    store, rng = Store(db), np.random.default_rng(8)
    for run_id, slow in (("a", 0.12), ("b", 0.10)):
        store.add_run(run_id, "2026-01-01T00:00:00+00:00", "rigbench run", {"hostname": "here", "cpu_model": "AMD EPYC"})
        for batch, step in ((32, slow), (8, 0.05)):
            store.add_result(make(_times(rng, step), batch=batch, rid=None, run_id=run_id))
    done = CliRunner().invoke(cli.app, ["compare", "a", "b", "--db", db], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    text = " ".join(done.output.split())
    assert "The 2 pairs' p values are adjusted together (Benjamini-Hochberg): a change counts only while its " \
           "adjusted p is under 0.05 too." in text and "faster: 1" in text
