"""What a Result must be before it is stored, whoever made it: this machine's runner
(runner/assemble.build_result) or another machine's bundle (store/bundle.py). Its spec is
already bound by numlimits (TrialSpec); these are the rules of the figures.

- Every figure is finite: JSON has no inf or NaN, so a stored one would come back as null, a
  number that silently went missing. The raw tracker samples and the software versions are
  records, not figures, and are left as they are.
- A throughput, when there is one, is more than 0, and every timed step (and their median)
  takes at least MIN_STEP_S.
- An `ok` speed or probe trial's throughput is its global batch (batch x ranks) over its median
  step time, as the protocol computes it (analysis/stats.throughput_summary): an imported result
  whose samples/s was ten times its own step times' showed one figure in `results list` and
  `roofline` and another in `score` and `compare`, which work from the step times.
- An `ok` trial of a kind that measures a throughput (speed, probe, train) has one: an `ok`
  without it would rank as a measured configuration with nothing measured. An lr range test
  steps at changing rates and has none.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from rigbench.spec import Result
from rigbench.step_windows import divides

#: Result fields that are records rather than figures (see the module doc).
_RECORDS = {"spec", "tracker_samples", "software"}
#: The shortest training step: one launches at least one kernel, and no framework dispatches
#: even the smallest network's step in under a microsecond (torch's mlp on a CPU: about 2 ms).
#: Without a floor, a step of 1e-306 s was a throughput of 1e307 samples/s, 300 digits wide.
MIN_STEP_S = 1e-6
#: How far a stored throughput may differ from global batch / median step time (rounding only).
SPEED_TOLERANCE = 1e-6
#: The kinds whose throughput the timing protocol computes from their step times.
PROTOCOL_KINDS = ("speed", "probe")


def result_problems(result: Result) -> list[str]:
    """Why `result` must not be stored (one reason per broken rule, each naming its field),
    or [] when it follows the rules."""
    problems = []
    where = non_finite_figure(result)
    if where is not None:
        problems.append(f"{where}: must be a finite number")
    speed = result.metrics.samples_per_s
    if speed is not None and math.isfinite(speed) and not speed > 0:
        problems.append(f"metrics.samples_per_s: must be more than 0, got {speed:g}")
    if result.status == "ok" and result.spec.kind != "lr_find" and speed is None:
        problems.append(f"metrics.samples_per_s: missing, which an ok {result.spec.kind} trial always measures")
    bad_step = next((i for i, t in enumerate(result.step_times_s) if math.isfinite(t) and not t >= MIN_STEP_S), None)
    if bad_step is not None:
        problems.append(f"step_times_s[{bad_step}]: a step time must be at least {MIN_STEP_S:g} s, "
                        f"got {result.step_times_s[bad_step]:g}")
    windows, steps = result.step_windows, len(result.step_times_s)
    if windows and not divides(windows, steps):
        problems.append(f"step_windows: {len(windows)} windows of {sum(windows)} steps in all do not divide the "
                        f"{steps} step times into windows of at least one step")
    median_ms = result.metrics.step_time_ms_median
    if median_ms is not None and math.isfinite(median_ms) and not median_ms >= MIN_STEP_S * 1e3:
        problems.append(f"metrics.step_time_ms_median: must be at least {MIN_STEP_S * 1e3:g} ms, got {median_ms:g}")
    elif speed is not None and (expected := protocol_speed(result)) is not None \
            and not abs(speed / expected - 1) <= SPEED_TOLERANCE:
        problems.append(f"metrics.samples_per_s: {speed:g} is not the global batch over the median step time "
                        f"({expected:g})")
    return problems + _raw_step_problems(result)


def _raw_step_problems(result: Result) -> list[str]:
    """An ok speed or probe trial's figures against its own raw step times: the median is
    theirs (one figure per window where steps were timed together: Result.timing_samples), and
    the CI (a bootstrap of their median) lies between the global batch over the slowest and over
    the fastest step. An imported CI of [1, 1e308] drew error bars to 1e308."""
    steps, m = result.timing_samples(), result.metrics
    if protocol_speed(result) is None or not steps or not all(math.isfinite(t) and t > 0 for t in steps):
        return []
    problems = []
    median_ms = statistics.median(steps) * 1e3
    if m.step_time_ms_median is not None and not abs(m.step_time_ms_median / median_ms - 1) <= SPEED_TOLERANCE:
        problems.append(f"metrics.step_time_ms_median: {m.step_time_ms_median:g} is not the median of "
                        f"step_times_s ({median_ms:g})")
    if m.samples_per_s_ci is not None:
        batch = result.spec.batch_size * result.spec.world_size
        lowest, highest = batch / max(steps), batch / min(steps)
        low, high = m.samples_per_s_ci
        if not lowest * (1 - SPEED_TOLERANCE) <= low <= high <= highest * (1 + SPEED_TOLERANCE):
            problems.append(f"metrics.samples_per_s_ci: [{low:g}, {high:g}] is not within the global batch over "
                            f"the slowest and the fastest step ([{lowest:g}, {highest:g}])")
    return problems


def protocol_speed(result: Result) -> float | None:
    """What an ok speed or probe trial's samples/s must be: its global batch (batch x ranks)
    over its median step time; None where the rule does not apply or a figure is missing."""
    median_ms = result.metrics.step_time_ms_median
    if result.status != "ok" or result.spec.kind not in PROTOCOL_KINDS or not median_ms:
        return None
    return result.spec.batch_size * result.spec.world_size * 1e3 / median_ms


def non_finite_figure(result: Result) -> str | None:
    """The path of `result`'s first figure that is inf or NaN (e.g. `metrics.samples_per_s`),
    or None. Reading a stored row skips one (store/lenient.py): rigbench never writes one."""
    figures = result.model_dump(exclude=_RECORDS)
    # nearly every result has none: a check that builds no paths first (every row a command
    # reads is checked; building each figure's path was half of reading 20,000 rows)
    return None if _all_finite(figures) else _first_non_finite(figures)


def _all_finite(value: Any) -> bool:
    """Whether every float inside `value` (dicts, lists, tuples) is finite."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_all_finite(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return all(_all_finite(item) for item in value)
    return True


def _first_non_finite(value: Any, path: str = "") -> str | None:
    """The path of the first inf or NaN inside `value` (dicts, lists, tuples), or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    items: Any = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for key, item in items:
        found = _first_non_finite(item, f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None
