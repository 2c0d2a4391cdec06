"""What a Result must be before it is stored, whoever made it: this machine's runner
(runner/assemble.build_result) or another machine's bundle (store/bundle.py). Its spec is
already bound by numlimits (TrialSpec); these are the rules of the figures.

- Every figure is finite: JSON has no inf or NaN, so a stored one would come back as null, a
  number that silently went missing. The raw tracker samples and the software versions are
  records, not figures, and are left as they are.
- A throughput, when there is one, is more than 0, and so is every timed step.
- An `ok` trial of a kind that measures a throughput (speed, probe, train) has one: an `ok`
  without it would rank as a measured configuration with nothing measured. An lr range test
  steps at changing rates and has none.
"""

from __future__ import annotations

import math
from typing import Any

from rigbench.spec import Result

#: Result fields that are records rather than figures (see the module doc).
_RECORDS = {"spec", "tracker_samples", "software"}


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
    bad_step = next((i for i, t in enumerate(result.step_times_s) if math.isfinite(t) and not t > 0), None)
    if bad_step is not None:
        problems.append(f"step_times_s[{bad_step}]: a step time must be more than 0, got {result.step_times_s[bad_step]:g}")
    return problems


def non_finite_figure(result: Result) -> str | None:
    """The path of `result`'s first figure that is inf or NaN (e.g. `metrics.samples_per_s`),
    or None. Reading a stored row skips one (store/lenient.py): rigbench never writes one."""
    return _first_non_finite(result.model_dump(exclude=_RECORDS))


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
