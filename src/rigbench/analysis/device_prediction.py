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

Both devices are read at ONE intensity, the pair's: the two trials are one configuration, which
moves the same bytes wherever it runs. Each trial stores its own estimate (`bytes_per_sample`),
made by the rigbench of its day, and estimates change: results stored before the estimate
counted the precision hold bf16/fp16 traffic at fp32 bytes. The H100's bf16 resnet (b128) stored
17.4 FLOP/byte, the H200's 34.4, and each device at its own figure gave a B/A of 2.84 where the
sheets allow x1.43 at most (bandwidths 4.8 against 3.35 TB/s, the same peaks). Where the two
differ, the estimate of the later revision serves both (`bytes_estimate_revision`, stored with
each estimate since revision 2; none stored: an earlier one), at equal revisions the newer
trial's (created_at; B's on a tie); where one side has none the other's, and the note says so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from rigbench.analysis.roofline import result_roofline
from rigbench.spec import Result
from rigbench.timestamps import parse_iso

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
    intensity: float | None = None           # the pair's FLOP/byte, at which both ceilings are read
    estimate_from: str = "both"              # whose bytes estimate: "both" (equal), "A" or "B"
    stored_intensity_a: float | None = None  # each trial's FLOP/byte from its own stored estimate
    stored_intensity_b: float | None = None
    other_revision: int | None = None        # the revision of the estimate not used (None: before revisions)
    revisions_differ: bool = False

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
        text += self._estimate_note()
        if self.applies:
            return text
        return (text + f": under {NEAR_CEILING:.0%} the trial is limited by launches, the host or the framework, "
                "not by the device's roof, so the prediction does not apply")


    def _estimate_note(self) -> str:
        """Where the two trials' stored bytes estimates differ: at whose estimate both were read."""
        if self.estimate_from == "both" or self.intensity is None:
            return ""
        other = "A" if self.estimate_from == "B" else "B"
        stored = self.stored_intensity_a if other == "A" else self.stored_intensity_b
        earlier = (f"revision {self.other_revision}" if self.other_revision is not None else
                   "one from before revisions were stored, fp32 bytes")
        why = (f"{other} stored none" if stored is None else
               f"the later estimate; {other}'s stored one, {stored:.3g}, is an earlier estimate's ({earlier})"
               if self.revisions_differ else
               f"the newer trial's; {other}'s stored estimate differs, {stored:.3g}: made otherwise, e.g. by an "
               "older rigbench")
        return f"; both read at {self.intensity:.3g} FLOP/byte, {self.estimate_from}'s estimate ({why})"


def shared_estimate(a: Result, b: Result) -> tuple[float | None, str]:
    """The pair's bytes per sample and whose it is: "both" where the stored estimates agree (or
    neither has one), else the later estimate revision's, at equal revisions the newer trial's
    ("A" or "B"; B on a tie), or the only one."""
    bytes_a, bytes_b = a.metrics.bytes_per_sample, b.metrics.bytes_per_sample
    if bytes_a == bytes_b:
        return bytes_a, "both"
    if bytes_a is None or bytes_b is None:
        return (bytes_b, "B") if bytes_a is None else (bytes_a, "A")
    revision_a, revision_b = (r.metrics.bytes_estimate_revision or 0 for r in (a, b))
    if revision_a != revision_b:
        return (bytes_a, "A") if revision_a > revision_b else (bytes_b, "B")
    when_a, when_b = parse_iso(a.created_at), parse_iso(b.created_at)  # when each estimate was made
    newer_a = when_a is not None and when_b is not None and when_a > when_b
    return (bytes_a, "A") if newer_a else (bytes_b, "B")


def _at(r: Result, bytes_per_sample: float | None) -> Result:
    """`r` with the pair's bytes estimate in place of its own."""
    if r.metrics.bytes_per_sample == bytes_per_sample:
        return r
    return r.model_copy(update={"metrics": r.metrics.model_copy(update={"bytes_per_sample": bytes_per_sample})})


def predict(a: Result, b: Result, samples_a: float | None = None, samples_b: float | None = None) -> Prediction | None:
    """The spec sheets' prediction for trials `a` and `b` of one configuration on different
    devices, both at the pair's intensity (shared_estimate), or None where either device or the
    FLOP/byte lacks a ceiling. `samples_*`: each side's figure (the mean of its repeats) in place
    of the trial's own samples/s."""
    moved, whose = shared_estimate(a, b)
    full_a = result_roofline(_at(a, moved), None, samples_per_s=samples_a)
    roof_a, roof_b = full_a.spec, result_roofline(_at(b, moved), None, samples_per_s=samples_b).spec
    if (roof_a is None or roof_b is None or not roof_a.ceiling_flops or not roof_b.ceiling_flops
            or roof_a.bound is None or roof_b.bound is None):
        return None
    stored_a, stored_b = (result_roofline(r, None).intensity for r in (a, b))
    other = a if whose == "B" else b
    return Prediction(roof_b.ceiling_flops / roof_a.ceiling_flops, roof_a.name, roof_b.name, roof_a.bound,
                      roof_b.bound, roof_a.of_ceiling, roof_b.of_ceiling, full_a.intensity, whose,
                      stored_a, stored_b, other.metrics.bytes_estimate_revision,
                      a.metrics.bytes_estimate_revision != b.metrics.bytes_estimate_revision)
