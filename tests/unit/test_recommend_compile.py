"""The recommendation's compile line (analysis/recommend_compile.py) on synthetic Results with
hand-computed answers: trial() gives every speed a 95% CI of +-5%."""

import pytest

from rigbench.analysis import recommend as rules
from rigbench.analysis.recommend_compile import decide_compile
from tests.unit.test_recommend_logic import trial


def _pair(speed, first_step_s=10.1, batch=64, device="cuda:0", **compiled):
    eager = trial(batch, 100.0, device=device, metrics={"first_step_s": 0.1})
    return [eager, trial(batch, speed, device=device, compile=True, metrics={"first_step_s": first_step_s}, **compiled)]


def test_compile_is_on_where_it_is_faster_beyond_noise_and_says_when_it_pays_back():
    results = _pair(150.0)
    line = decide_compile(results, "cuda:0", 64, 60_000)
    assert line.value is True and line.numbers["speedup"] == pytest.approx(1.5)
    # 10 s more first step / (1/100 - 1/150 s per sample) = 3,000 samples
    assert line.numbers["payback_samples"] == pytest.approx(3000.0)
    assert line.text == ("compile: on, 1.50x eager at b64; its compilation is paid back after 3,000 samples "
                         "(0.05 epochs of 60,000)")
    assert (line.numbers["trial"], line.numbers["eager_trial"]) == (results[1].id, results[0].id)


def test_compile_is_off_within_noise_when_slower_or_when_it_failed():
    within = decide_compile(_pair(102.0), "cuda:0", 64, 60_000)  # [96.9, 107.1] overlaps [95, 105]
    assert within.value is False and within.text == "compile: off, 1.02x eager, within noise at b64"
    assert "payback_samples" not in within.numbers
    slower = decide_compile(_pair(50.0), "cuda:0", 64, 60_000)
    assert slower.value is False and slower.text == "compile: off, 0.50x eager, slower at b64"
    failed = decide_compile(_pair(None, status="crash", error="Traceback ...\nInductorError: no C++ compiler"),
                            "cuda:0", 64, 60_000)
    assert failed.value is False
    assert failed.text == "compile: off, torch.compile crash at b64 (InductorError: no C++ compiler)"


def test_the_nearest_measured_batch_stands_in_and_other_devices_do_not_count():
    results = _pair(150.0, batch=32) + _pair(90.0, batch=256)
    line = decide_compile(results, "cuda:0", 64, 60_000)
    assert line.numbers["batch_size"] == 32 and "at b32 (the measured batch nearest to b64)" in line.text
    assert decide_compile(results, "cpu", 64, 60_000) is None  # measured on another device only
    assert decide_compile([trial(64, 100.0, device="cuda:0")], "cuda:0", 64, 60_000) is None  # never compiled


def test_the_recommendation_has_a_compile_line_only_where_compile_was_measured():
    eager_only = [trial(64, 100.0)]
    assert "compile" not in [line.decision for line in rules.recommend(eager_only, ["cpu"], {}, "sgd", 60_000)]
    decisions = [line.decision for line in rules.recommend(_pair(150.0, device="cpu"), ["cpu"], {}, "sgd", 60_000)]
    assert decisions.index("compile") == decisions.index("threads") + 1


def test_a_baseline_run_first_and_last_widens_what_counts_as_noise():
    """`rigbench scaling` runs eager first and last: 80 and 125 samples/s (geometric mean 100,
    interval 76..131.25). Compiled at 112 (106.4..117.6) is apart from the first eager trial's CI
    alone (76..84) but within the two's drift: off. At 150 it is on, paid back at the mean eager
    speed: 10 s more first step / (1/100 - 1/150) = 3,000 samples."""
    def trials(speed):
        return [trial(64, 80.0, metrics={"first_step_s": 0.1}),
                trial(64, speed, compile=True, metrics={"first_step_s": 10.1}),
                trial(64, 125.0, metrics={"first_step_s": 0.1})]

    within = decide_compile(trials(112.0), "cpu", 64, 60_000)
    assert within.value is False and within.text == "compile: off, 1.12x eager, within noise at b64"
    alone = decide_compile(trials(112.0)[:2], "cpu", 64, 60_000)
    assert alone.value is True  # what a single eager trial would have said
    on = decide_compile(trials(150.0), "cpu", 64, 60_000)
    assert on.value is True and on.numbers["payback_samples"] == pytest.approx(3000.0)


def test_of_several_modes_the_fastest_that_pays_is_named():
    """reduce-overhead beside the default mode at one batch: the line takes the fastest mode
    that beats eager beyond noise and names it; where none does, the fastest measured, named;
    a mode that failed does not hide one that ran."""
    eager = trial(64, 100.0, device="cuda:0", metrics={"first_step_s": 0.1})

    def mode(name, speed, **more):
        return trial(64, speed, device="cuda:0", compile=name, metrics={"first_step_s": 10.1}, **more)
    graphs = decide_compile([eager, mode("default", 120.0), mode("reduce-overhead", 150.0)], "cuda:0", 64, 60_000)
    assert graphs.value is True and graphs.numbers["mode"] == "reduce-overhead"
    assert graphs.text.startswith("compile: on (reduce-overhead), 1.50x eager at b64; its compilation is paid back "
                                  "after 3,000 samples")
    plain = decide_compile([eager, mode("default", 150.0), mode("reduce-overhead", 120.0)], "cuda:0", 64, 60_000)
    assert plain.numbers["mode"] == "default" and plain.text.startswith("compile: on, 1.50x eager at b64")
    neither = decide_compile([eager, mode("default", 90.0), mode("max-autotune", 101.0)], "cuda:0", 64, 60_000)
    assert neither.value is False and neither.text == "compile: off, max-autotune 1.01x eager, within noise at b64"
    failed = decide_compile([eager, mode("reduce-overhead", None, status="crash", error="CUDA graphs: oops"),
                             mode("default", 130.0)], "cuda:0", 64, 60_000)
    assert failed.numbers["mode"] == "default" and failed.value is True
    only_failed = decide_compile([eager, mode("reduce-overhead", None, status="oom")], "cuda:0", 64, 60_000)
    assert only_failed.text == "compile: off, torch.compile reduce-overhead oom at b64"
