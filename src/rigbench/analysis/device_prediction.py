"""What the spec sheets predict when the same trial runs on two different devices (`rigbench
compare A B` across machines or GPUs): the ratio of the trial's roofline ceilings on the two.

The ceiling of a trial on a device is min(peak FLOP/s at its precision, memory bandwidth x the
trial's estimated FLOP/byte) from the spec sheets (analysis/roofline.py), so a memory-bound
trial is predicted to follow the bandwidths and a compute-bound one the peaks. The prediction
says what the devices allow, not what the trial will do: a trial that reaches only a small part
of its ceiling is limited by something the roofline does not model (kernel launches, the host
CPU, the framework), and then the ratio of ceilings does not apply. Measured on an H100 against
an H200 (docs/results/gpu-h200.md): the networks at 23-35% of their ceilings followed it within
5% (predicted x1.00, measured x0.95-1.03), lstm at 18-20% within 10% (x1.07, x0.96); those at 1-7%
did not (predicted x1.15-1.43, measured x0.73-1.15). NEAR_CEILING draws the line in the gap
between 7% and 18%: one comparison's evidence, to revisit as more pairs of devices are measured.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from rigbench.analysis.roofline import result_roofline
from rigbench.spec import Result

#: The share of its ceiling a trial must reach on both devices for the ratio of ceilings to be
#: read as a prediction of its speed (see the module docstring for the evidence).
NEAR_CEILING = 0.15


@dataclass(frozen=True)
class Prediction:
    """The spec sheets' B/A for one pair of trials, and how near each trial came to its ceiling."""

    ratio: float                 # B's ceiling / A's ceiling
    device_a: str                # the spec sheets' names
    device_b: str
    bound_a: str                 # "memory-bound" | "compute-bound"
    bound_b: str
    reached_a: float | None      # achieved FLOP/s / ceiling (None without a FLOP count)
    reached_b: float | None

    @property
    def applies(self) -> bool:
        """Both trials came near enough their ceilings for the ratio of ceilings to predict
        their speeds (NEAR_CEILING)."""
        return all(r is not None and r >= NEAR_CEILING for r in (self.reached_a, self.reached_b))

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "applies": self.applies}

    def note(self) -> str:
        """One line for the pair's notes: the prediction, and whether it applies."""
        bounds = self.bound_a if self.bound_a == self.bound_b else f"{self.bound_a} -> {self.bound_b}"
        reached = ", ".join(f"{side} at {value:.0%}" for side, value in (("A", self.reached_a),
                                                                              ("B", self.reached_b))
                            if value is not None)
        text = f"spec sheets predict B/A x{self.ratio:.2f} ({bounds}; {reached} of the ceiling)"
        if self.applies:
            return text
        return (text + f": under {NEAR_CEILING:.0%} the trial is limited by launches, the host or the framework, "
                "not by the device's roof, so the prediction does not apply")


def predict(a: Result, b: Result, samples_a: float | None = None, samples_b: float | None = None) -> Prediction | None:
    """The spec sheets' prediction for trials `a` and `b` of one configuration on different
    devices, or None where either device or the trial's FLOP/byte lacks a ceiling. `samples_*`:
    each side's figure (the mean of its repeats) in place of the trial's own samples/s."""
    roof_a = result_roofline(a, None, samples_per_s=samples_a).spec
    roof_b = result_roofline(b, None, samples_per_s=samples_b).spec
    if (roof_a is None or roof_b is None or not roof_a.ceiling_flops or not roof_b.ceiling_flops
            or roof_a.bound is None or roof_b.bound is None):
        return None
    return Prediction(roof_b.ceiling_flops / roof_a.ceiling_flops, roof_a.name, roof_b.name, roof_a.bound,
                      roof_b.bound, roof_a.of_ceiling, roof_b.of_ceiling)
