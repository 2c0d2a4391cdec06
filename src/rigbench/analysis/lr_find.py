"""The learning rate to suggest from a range test's curve (`rigbench lr-find`). Pure, no I/O.

The rule is fastai's "minimum" suggestion (fastai/callback/schedule.py, `minimum`; Howard &
Gugger, "Deep Learning for Coders with fastai and PyTorch", 2020, ch. 5): take the learning
rate at which the smoothed loss is lowest and divide it by 10. At the minimum the loss has
already stopped improving because the rate is too large; one decade lower the loss is still
falling steadily, so training there is fast and stable. The exponential moving average also
lags the raw loss by ~1/smoothing steps, which moves the minimum to a larger rate than the
true turning point; the factor of 10 absorbs that lag.

The second figure, the steepest descent (fastai's `steep`: the rate where the smoothed loss
falls fastest against log(lr)), is reported alongside but not suggested: it differentiates a
noisy curve and lies close to the instability. On `digits` with the mlp (docs/STRATEGY.md) it
was 0.076 at batches 32 and 64; five epochs at that rate reached 94% held-out accuracy at
batch 64 but swung between 82% and 93% at batch 32, where min/10 (0.0145) reached 94% steadily.

Robustness, as fastai's `lr_find` does: the first tenth of the planned steps is skipped (the
average of a few losses is still noise), the curve is cut at the first non-finite value, and
the steepest descent is searched only before the minimum. A curve that never diverged still
gives a suggestion, with a note that its minimum may lie beyond end_lr.

A clear fall first (`clear_fall`): the minimum of a flat curve is only where its noise happened
to dip, and a tenth of that rate means nothing (`lr-find mlp --dataset digits --start-lr 1e-6
--end-lr 1e-5 --steps 8` moved its smoothed loss 0.04%, yet min/10 "suggested" 3.7e-07). So the
smoothed loss must fall from its first usable point to its minimum by at least MIN_FALL_NOISE x
the raw losses' step-to-step noise (their successive differences' median absolute value, read
as a normal deviation: robust to a spike and to the curve's own trend) and by at least
MIN_RELATIVE_FALL of its start (for a curve too smooth for its noise to say anything). On pure
noise (simulated, with the runner's moving average) the fall exceeds 2 x the noise in under 5%
of 6- to 12-step curves and under 1% of 40- to 100-step ones; real digits curves fell 34 to 86 x it
(9 to 16%), and the flat 8-step one 0.4 x (docs/STRATEGY.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

#: The suggestion is the lr at the minimum smoothed loss divided by this (fastai's `minimum`).
MIN_DIVISOR = 10.0
#: Points needed after skipping the start to suggest anything.
MIN_POINTS = 5

#: A suggestion needs the smoothed loss to fall by this many times the raw losses' step noise...
MIN_FALL_NOISE = 2.0
#: ...and by this fraction of its first usable value (module docstring: a clear fall first).
MIN_RELATIVE_FALL = 0.01
#: A normal deviation's median absolute successive difference is this many times the deviation
#: (sqrt(2) x the 0.6745 of the median absolute deviation).
_MEDIAN_STEP_PER_SIGMA = 0.6745 * math.sqrt(2)

RULE = "the lr at the minimum smoothed loss divided by 10 (fastai's 'minimum' rule)"


@dataclass(frozen=True)
class Suggestion:
    """What a range-test curve suggests, with the figures behind it."""

    lr: float | None  # the suggestion; None when the curve cannot support one (see notes)
    rule: str
    lr_at_min: float | None  # lr at the minimum smoothed loss
    min_loss: float | None  # that minimum
    lr_steepest: float | None  # lr of the steepest descent before the minimum (reported only)
    steps: int  # points in the curve
    skipped: int  # leading points left out
    stop: str  # why the test ended
    notes: list[str] = field(default_factory=list)


def stop_reason(curve: Sequence[Sequence[float]], planned_steps: int, diverge_factor: float) -> str:
    """Why the test ended: it reached end_lr, the smoothed loss passed diverge_factor x its
    minimum, or the next loss was not finite (the runner keeps only finite points)."""
    if len(curve) >= planned_steps:
        return "reached end_lr"
    if curve:
        smoothed = [p[2] for p in curve]
        if smoothed[-1] > diverge_factor * min(smoothed):
            return (f"smoothed loss {smoothed[-1]:.4g} exceeded {diverge_factor:g} x its minimum "
                    f"{min(smoothed):.4g} at step {len(curve)} of {planned_steps}")
    return f"the loss became NaN or infinite at step {len(curve) + 1} of {planned_steps}"


def suggest_lr(curve: Sequence[Sequence[float]], planned_steps: int | None = None,
               diverge_factor: float = 4.0) -> Suggestion:
    """Apply the rule to `curve` ([lr, loss, smoothed loss] per step, lr increasing).

    `planned_steps` (default: len(curve)) sets how many leading points are skipped (a tenth)
    and tells a curve that stopped early from one that reached end_lr.
    """
    planned = planned_steps or len(curve)
    points, raw = [], []
    for lr, loss, smoothed in curve:
        if not (math.isfinite(lr) and math.isfinite(smoothed)):
            break  # as fastai: everything after the first NaN is dropped
        points.append((float(lr), float(smoothed)))
        raw.append(float(loss))
    skip = max(1, planned // 10)
    stop = stop_reason(curve, planned, diverge_factor)
    empty = Suggestion(None, RULE, None, None, None, len(curve), skip, stop)
    used = points[skip:]
    if len(used) < MIN_POINTS:
        empty.notes.append(f"only {len(used)} usable points after skipping the first {skip}: "
                           f"run more --steps or lower --start-lr")
        return empty
    i_min = min(range(len(used)), key=lambda i: used[i][1])
    lr_min, loss_min = used[i_min]
    if i_min == 0:
        empty.notes.append(f"the smoothed loss never fell below its value at lr {used[0][0]:.3g}: "
                           f"lower --start-lr")
        return Suggestion(None, RULE, lr_min, loss_min, None, len(curve), skip, stop, empty.notes)
    unclear = clear_fall(used[0], (lr_min, loss_min), raw[:skip + i_min + 1], stop, points[-1][0])
    if unclear:
        return Suggestion(None, RULE, lr_min, loss_min, None, len(curve), skip, stop, [unclear])
    notes = []
    if stop == "reached end_lr":
        notes.append("the loss did not diverge before end_lr: its minimum may lie beyond it "
                     "(a larger --end-lr would show), so the suggestion is conservative")
    return Suggestion(lr_min / MIN_DIVISOR, RULE, lr_min, loss_min, steepest(used[:i_min + 1]),
                      len(curve), skip, stop, notes)


def clear_fall(start: tuple[float, float], lowest: tuple[float, float], raw: Sequence[float], stop: str,
               last_lr: float) -> str | None:
    """None when the smoothed loss falls clearly from `start` to `lowest` ((lr, smoothed loss)
    each), judged against the noise of the `raw` losses up to the minimum (module docstring);
    else why not, in one line, with the range to try instead."""
    from rigbench.analysis.stats import median  # numpy: here, not for every table that shows a range test

    fall = start[1] - lowest[1]
    steps = [abs(b - a) for a, b in pairwise(raw)]
    noise = median(steps) / _MEDIAN_STEP_PER_SIGMA if steps else 0.0
    relative = fall / abs(start[1]) if start[1] else math.inf
    short = ([f"{MIN_FALL_NOISE:g} x the raw losses' step-to-step noise ({noise:.2g})"] if fall < MIN_FALL_NOISE * noise
             else []) + ([f"{MIN_RELATIVE_FALL:.0%} of its start"] if relative < MIN_RELATIVE_FALL else [])
    if not short:
        return None
    if stop == "reached end_lr":
        instead = (f"rates up to {last_lr:.3g} barely move it: try a range reaching higher rates "
                   "(a larger --end-lr, e.g. the default 10)")
    else:
        instead = (f"it diverged at lr {last_lr:.3g} before falling clearly: try a range starting "
                   "lower (a smaller --start-lr) with more --steps")
    return (f"no clear fall: the smoothed loss fell {fall:.3g} ({relative:.2%}) from {start[1]:.5g} at lr "
            f"{start[0]:.3g} to its minimum {lowest[1]:.5g} at lr {lowest[0]:.3g}, less than "
            f"{' and '.join(short)}; {instead}")


def steepest(points: Sequence[tuple[float, float]]) -> float | None:
    """The lr where the loss falls fastest against log(lr): the left point of the most
    negative slope between neighbours (fastai's `steep`); None without a falling pair."""
    best_slope, best_lr = 0.0, None
    for (lr0, y0), (lr1, y1) in pairwise(points):
        if lr1 <= lr0:
            continue
        slope = (y1 - y0) / (math.log(lr1) - math.log(lr0))
        if slope < best_slope:
            best_slope, best_lr = slope, lr0
    return best_lr


def compact_curve(curve: Sequence[Sequence[float]], rows: int = 8,
                  keep_lrs: Sequence[float] = ()) -> list[tuple[float, float]]:
    """A few (lr, smoothed loss) rows spread evenly over the curve (first and last point
    included), plus the points whose lr is in `keep_lrs` (e.g. the minimum)."""
    if not curve:
        return []
    n = len(curve)
    picks = {round(i * (n - 1) / max(rows - 1, 1)) for i in range(min(rows, n))}
    picks |= {i for i, point in enumerate(curve) if point[0] in keep_lrs}
    return [(float(curve[i][0]), float(curve[i][2])) for i in sorted(picks)]


def scale_lr(lr: float, from_batch: int, to_batch: int) -> float:
    """The linear-scaling rule (Goyal et al. 2017, "Accurate, Large Minibatch SGD", section
    2.1): when the minibatch size is multiplied by k, multiply the learning rate by k."""
    return lr * to_batch / from_batch


def lr_schedule(start_lr: float, end_lr: float, steps: int) -> list[float]:
    """The range test's exponential ramp, the same in every framework: `steps` rates from start_lr to end_lr, both included."""
    ratio = end_lr / start_lr
    return [start_lr * ratio ** (i / (steps - 1)) for i in range(steps)]
