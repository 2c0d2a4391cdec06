"""The lr-find suggestion rule on synthetic curves whose answer is known by construction."""

import math

import pytest

from rigbench.analysis.lr_find import compact_curve, scale_lr, stop_reason, suggest_lr


def lrs(n=100, start=1e-6, end=10.0):
    return [start * (end / start) ** (i / (n - 1)) for i in range(n)]


def curve_of(smoothed, n=100):
    """[lr, loss, smoothed] rows on the exponential ramp of an n-step test."""
    return [[lr, s, s] for lr, s in zip(lrs(n), smoothed)]


def valley():
    """Flat at 2.3 up to step 50, falling 0.02 a step to a minimum of 1.78 at step 70 (one
    big drop of 0.3 from step 62 to 63), then rising 1.0 a step until it passes 4 x 1.78."""
    y = [2.3] * 51
    for i in range(51, 71):
        y.append(y[-1] - (0.3 if i == 63 else 0.02))
    while y[-1] <= 4 * min(y):
        y.append(y[-1] + 1.0)
    return y


def test_minimum_over_ten_with_the_steepest_descent_reported():
    y = valley()
    assert min(y) == y[70]
    s = suggest_lr(curve_of(y), planned_steps=100)
    assert s.lr_at_min == pytest.approx(lrs()[70])
    assert s.lr == pytest.approx(lrs()[70] / 10)
    assert s.min_loss == pytest.approx(y[70])
    assert s.lr_steepest == pytest.approx(lrs()[62])  # the left point of the 0.3 drop
    assert s.skipped == 10 and s.steps == len(y)
    assert "exceeded 4 x" in s.stop and f"step {len(y)} of 100" in s.stop
    assert s.notes == []


def test_noise_among_the_first_points_is_skipped():
    y = valley()
    y[3] = 0.01  # a freak low loss at the start, inside the skipped tenth
    assert suggest_lr(curve_of(y), planned_steps=100).lr == pytest.approx(lrs()[70] / 10)
    y[12] = 0.01  # the same after the skipped part is the minimum
    assert suggest_lr(curve_of(y), planned_steps=100).lr == pytest.approx(lrs()[12] / 10)


def test_a_curve_that_never_diverges_still_suggests_and_says_so():
    y = [2.3 - 0.01 * i for i in range(100)]
    s = suggest_lr(curve_of(y), planned_steps=100)
    assert s.stop == "reached end_lr"
    assert s.lr == pytest.approx(10.0 / 10)  # the minimum is the last point, lr 10
    assert any("did not diverge" in note for note in s.notes)


def test_everything_after_a_nan_is_ignored():
    y = [2.3 - 0.01 * i for i in range(100)]
    y[60] = math.nan
    y[61:] = [0.0] * 39  # lower than anything before, but after the NaN
    s = suggest_lr(curve_of(y), planned_steps=100)
    assert s.lr_at_min == pytest.approx(lrs()[59])


def test_too_few_points_give_no_suggestion():
    s = suggest_lr(curve_of([2.3, 2.2, 2.1, 2.0, 1.9, 1.8, 1.7, 1.6]), planned_steps=100)
    assert s.lr is None and "usable points" in s.notes[0]


def test_a_loss_that_never_falls_gives_no_suggestion():
    s = suggest_lr(curve_of([2.3 + 0.05 * i for i in range(30)]), planned_steps=100)
    assert s.lr is None and "lower --start-lr" in s.notes[0]


def test_stop_reasons():
    assert stop_reason(curve_of([2.0] * 100), 100, 4.0) == "reached end_lr"
    assert "exceeded 4 x its minimum 1" in stop_reason(curve_of([2.0, 1.0, 5.0]), 100, 4.0)
    # shorter than planned without passing the factor: the next loss was not finite
    assert stop_reason(curve_of([2.0, 1.0, 3.0]), 100, 4.0) == "the loss became NaN or infinite at step 4 of 100"


def test_linear_scaling_rule():
    assert scale_lr(0.01, 64, 256) == pytest.approx(0.04)
    assert scale_lr(0.1, 128, 32) == pytest.approx(0.025)


def test_compact_curve_keeps_both_ends_and_the_minimum():
    y = valley()
    rows = compact_curve(curve_of(y), rows=5, keep_lrs=[lrs()[70]])
    xs = [lr for lr, _ in rows]
    assert xs[0] == lrs()[0] and xs[-1] == lrs()[len(y) - 1] and lrs()[70] in xs
    assert xs == sorted(xs) and len(rows) == 6


def ramp_of(losses, start=1e-6, end=1e-5):
    """[lr, loss, smoothed] rows as the runner writes them: the bias-corrected moving average
    (weight 0.05) of `losses` on the exponential ramp from start to end."""
    rows, average = [], 0.0
    for i, (lr, loss) in enumerate(zip(lrs(len(losses), start, end), losses), start=1):
        average = 0.95 * average + 0.05 * loss
        rows.append([lr, loss, average / (1 - 0.95 ** i)])
    return rows


#: The raw losses of `lr-find mlp --dataset digits --start-lr 1e-6 --end-lr 1e-5 --steps 8` (2-core
#: dev VM): the smoothed loss fell 0.001 (0.04%) to a minimum at 3.73e-06, which min/10 turned
#: into a 'suggestion' of 3.73e-07. Their step-to-step noise is 0.0029.
FLAT_DIGITS_LOSSES = [2.311, 2.3093, 2.3113, 2.3054, 2.3089, 2.3135, 2.3061, 2.3088]


def test_a_flat_noisy_curve_gives_no_suggestion_and_says_what_range_to_try():
    s = suggest_lr(ramp_of(FLAT_DIGITS_LOSSES), planned_steps=8)
    assert s.lr is None and s.lr_at_min == pytest.approx(lrs(8, 1e-6, 1e-5)[4])
    (note,) = s.notes
    assert note.startswith("no clear fall: the smoothed loss fell 0.00103 (0.04%)")
    assert "2 x the raw losses' step-to-step noise (0.0029) and 1% of its start" in note
    assert note.endswith("rates up to 1e-05 barely move it: try a range reaching higher rates "
                         "(a larger --end-lr, e.g. the default 10)")


def test_a_fall_within_the_noise_before_diverging_gives_no_suggestion():
    """Losses alternating +-0.1 around a line from 2.3 down 0.004 a step (step noise 0.2 / 0.954
    = 0.21) before blowing up: the smoothed loss falls 0.045, 2% of its start, but far less than
    2 x the noise."""
    losses = [2.3 + (0.1 if i % 2 else -0.1) - 0.004 * i for i in range(30)] + [9.0, 30.0, 90.0]
    s = suggest_lr(ramp_of(losses, 1e-4, 10.0), planned_steps=40)
    assert s.lr is None and "exceeded 4 x" in s.stop
    assert "step-to-step noise (0.21)" in s.notes[0] and "1% of its start" not in s.notes[0]
    assert "a smaller --start-lr" in s.notes[0]
    # the same fall with quiet losses is clear: the rule is relative to the noise
    quiet = [2.3 - 0.004 * i for i in range(30)] + [9.0, 30.0, 90.0]
    assert suggest_lr(ramp_of(quiet, 1e-4, 10.0), planned_steps=40).lr is not None
