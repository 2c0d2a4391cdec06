"""Compare two sets of results (two runs, two filters, two machines) trial by trial.

Pairing: results are lined up on their configuration (TrialSpec.config_key: workload +
options, framework, device, batch size, precision, threads, lr, compile, channels_last, ...).
On one machine the device is matched by id (`cuda:1` with `cuda:1`); across machines by kind
(cpu with cpu, any GPU with any GPU) when each side has at most one device of that kind, else
by id.

Comparability: a pair whose software differs (Result.software: torch, CUDA, cuDNN... versions;
GPU libraries are ignored for CPU trials) is marked incomparable with the reason, unless
`across_versions` is set, in which case it is compared and flagged "versions differ".
Results left over on both sides with the same configuration but for batch, precision, threads,
lr or the workload's network revision (NEAR_FIELDS) are paired as incomparable with the
differences as the reason. A side whose trial did not end ok is incomparable too.

Significance (docs/COMPARING.md): a change is reported only when both hold:
1. Mann-Whitney U on the raw step times, two-sided, p < alpha (0.05);
2. the 95% bootstrap confidence intervals of the two median step times do not overlap.
Otherwise: "no significant change". The ratio is B's samples/s over A's, with a 95%
bootstrap CI (each side resampled independently, ratio of medians, fixed seed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rigbench.analysis.stats import bootstrap_ci, mann_whitney_u, median
from rigbench.analysis.trials import is_full_protocol
from rigbench.spec import Result

ALPHA = 0.05
RESAMPLES = 2000
SEED = 0

#: software keys that describe the configuration, not a version (compared elsewhere or not at all)
_NOT_VERSIONS = {"num_threads"}
#: GPU libraries: irrelevant to a CPU trial
_GPU_LIBRARIES = {"cuda", "cudnn", "hip", "rocm", "nccl"}


@dataclass
class Side:
    """One side of a pair: the result and its step-time statistics."""

    result: Result
    samples_per_s: float | None = None
    ci: tuple[float, float] | None = None     # samples/s, 95% (from the median step time's CI)


@dataclass
class Pair:
    """Two lined-up results and the verdict on them."""

    key: str                                   # human label of what was compared
    a: Side | None
    b: Side | None
    verdict: str                               # faster | slower | no change | incomparable | only in A | only in B
    reason: str = ""                           # why incomparable, or what to keep in mind
    ratio: float | None = None                 # B samples/s / A samples/s
    ratio_ci: tuple[float, float] | None = None
    p_value: float | None = None
    u: float | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        def side(s: Side | None) -> dict[str, Any] | None:
            if s is None:
                return None
            r = s.result
            return {"id": r.id, "run_id": r.run_id, "device": r.spec.device, "device_name": r.device_name,
                    "status": r.status, "samples_per_s": s.samples_per_s,
                    "samples_per_s_ci": list(s.ci) if s.ci else None, "steps": len(r.step_times_s),
                    "software": r.software}
        return {"trial": self.key, "verdict": self.verdict, "reason": self.reason,
                "ratio": self.ratio, "ratio_ci": list(self.ratio_ci) if self.ratio_ci else None,
                "p_value": self.p_value, "u": self.u, "notes": self.notes,
                "a": side(self.a), "b": side(self.b)}


def _device_class(device: str) -> str:
    return "cpu" if device == "cpu" else "gpu"


def _by_kind(results: Sequence[Result]) -> bool:
    """True when each device class appears with at most one device id on this side."""
    ids: dict[str, set[str]] = {}
    for r in results:
        ids.setdefault(_device_class(r.spec.device), set()).add(r.spec.device)
    return all(len(v) == 1 for v in ids.values())


#: Configuration fields in which two trials may differ and still be lined up as a near pair
#: (reported as incomparable, with the differences), with the words that name them.
#: A different workload revision is a different network under the same name: never compared,
#: but lined up so that the reason is said.
NEAR_FIELDS: dict[str, str] = {"batch_size": "batch", "precision": "precision", "threads": "threads",
                               "lr": "lr", "workload_revision": "network revision"}


def _device_key(r: Result, by_kind: bool) -> tuple:
    return (_device_class(r.spec.device) if by_kind else r.spec.device,)


def _base_key(r: Result, by_kind: bool) -> tuple:
    """Same configuration but for the near fields (TrialSpec.config_key; device by kind)."""
    return _device_key(r, by_kind) + r.spec.config_key(ignore=("device", *NEAR_FIELDS))


def _full_key(r: Result, by_kind: bool) -> tuple:
    """Same configuration (TrialSpec.config_key; the device matched by kind when `by_kind`)."""
    return _device_key(r, by_kind) + r.spec.config_key(ignore=("device",))


def _label(r: Result, device: str | None = None) -> str:
    spec = r.spec if device is None else r.spec.model_copy(update={"device": device})
    return spec.label()


def version_differences(a: Result, b: Result) -> list[str]:
    """`torch 2.4.0 -> 2.13.0`-style lines for every version that differs between two results."""
    keys = sorted((set(a.software) | set(b.software)) - _NOT_VERSIONS)
    if a.spec.device == "cpu" and b.spec.device == "cpu":
        keys = [k for k in keys if k not in _GPU_LIBRARIES]
    return [f"{k} {a.software.get(k)} -> {b.software.get(k)}" for k in keys
            if a.software.get(k) != b.software.get(k)]


def _config_differences(a: Result, b: Result) -> list[str]:
    """`batch 64 vs 128`-style lines for the near fields in which `a` and `b` differ."""
    out = []
    for name, words in NEAR_FIELDS.items():
        va, vb = getattr(a.spec, name), getattr(b.spec, name)
        if va != vb:
            out.append(f"{words} {'default' if va is None else va} vs {'default' if vb is None else vb}")
    return out


def _side(r: Result) -> Side:
    if r.status != "ok" or len(r.step_times_s) == 0:
        return Side(r)
    low, high = bootstrap_ci(r.step_times_s, resamples=RESAMPLES, seed=SEED)
    batch = r.spec.batch_size
    return Side(r, batch / median(r.step_times_s), (batch / high, batch / low))


def ratio_ci(a_times: Sequence[float], b_times: Sequence[float], confidence: float = 0.95,
             resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float]:
    """Bootstrap CI of median(a) / median(b) (= B's samples/s over A's at equal batch): each
    sample resampled with replacement on its own, percentile interval, fixed seed."""
    a, b = np.asarray(a_times, dtype=float), np.asarray(b_times, dtype=float)
    rng = np.random.default_rng(seed)
    med_a = np.median(a[rng.integers(0, a.size, size=(resamples, a.size))], axis=1)
    med_b = np.median(b[rng.integers(0, b.size, size=(resamples, b.size))], axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(med_a / med_b, [tail, 100 - tail])
    return float(low), float(high)


def significance(a_times: Sequence[float], b_times: Sequence[float], alpha: float = ALPHA) -> dict[str, Any]:
    """The comparison of two step-time samples (A before, B after): ratio = B's speed over
    A's (median A / median B), its bootstrap CI, U and p, and the verdict: `faster`/`slower`
    when p < alpha and the two medians' 95% bootstrap CIs do not overlap, else `no change`."""
    u, p = mann_whitney_u(a_times, b_times)
    ratio = median(a_times) / median(b_times)
    a_low, a_high = bootstrap_ci(a_times, resamples=RESAMPLES, seed=SEED)
    b_low, b_high = bootstrap_ci(b_times, resamples=RESAMPLES, seed=SEED)
    apart = a_high < b_low or b_high < a_low
    if p < alpha and apart:
        verdict = "faster" if ratio > 1 else "slower"
    else:
        verdict = "no change"
    return {"u": u, "p_value": p, "ratio": ratio, "ratio_ci": ratio_ci(a_times, b_times),
            "cis_overlap": not apart, "verdict": verdict}


def compare_results(a: Sequence[Result], b: Sequence[Result], same_machine: bool,
                    across_versions: bool = False, alpha: float = ALPHA) -> list[Pair]:
    """Line up `a` and `b` (with raw step times: Store.get) and judge each pair.

    Only full-protocol speed trials take part (analysis/trials.py): max-batch probes time too
    few steps, training and lr-find runs have no comparable step times.
    When a side has several results with the same key, the newest (highest id) is used.
    """
    a = [r for r in a if is_full_protocol(r)]
    b = [r for r in b if is_full_protocol(r)]
    by_kind = not same_machine and _by_kind(a) and _by_kind(b)
    newest_a = {_full_key(r, by_kind): r for r in sorted(a, key=lambda r: r.id or 0)}
    newest_b = {_full_key(r, by_kind): r for r in sorted(b, key=lambda r: r.id or 0)}
    pairs: list[Pair] = []
    for key, ra in newest_a.items():
        rb = newest_b.get(key)
        if rb is not None:
            pairs.append(_judge(ra, rb, by_kind, across_versions, alpha))
    left_a = [r for k, r in newest_a.items() if k not in newest_b]
    left_b = [r for k, r in newest_b.items() if k not in newest_a]
    # The same configuration but for the near fields (batch, precision, threads, lr): pair
    # them as incomparable, the closest first (fewest differences, then nearest batch).
    candidates = sorted(
        (len(_config_differences(ra, rb)), abs(math.log(ra.spec.batch_size / rb.spec.batch_size)), i, j)
        for i, ra in enumerate(left_a) for j, rb in enumerate(left_b)
        if _base_key(ra, by_kind) == _base_key(rb, by_kind))
    used_a: set[int] = set()
    used_b: set[int] = set()
    for _, _, i, j in candidates:
        if i not in used_a and j not in used_b:
            used_a.add(i)
            used_b.add(j)
            pairs.append(Pair(_label(left_a[i]), _side(left_a[i]), _side(left_b[j]), "incomparable",
                              "; ".join(_config_differences(left_a[i], left_b[j]))))
    left_a = [r for i, r in enumerate(left_a) if i not in used_a]
    left_b = [r for j, r in enumerate(left_b) if j not in used_b]
    pairs += [Pair(_label(r), _side(r), None, "only in A") for r in left_a]
    pairs += [Pair(_label(r), None, _side(r), "only in B") for r in left_b]
    return pairs


def _judge(ra: Result, rb: Result, by_kind: bool, across_versions: bool, alpha: float) -> Pair:
    device = _device_class(ra.spec.device) if by_kind else None
    pair = Pair(_label(ra, device), _side(ra), _side(rb), "incomparable")
    if ra.status != "ok" or rb.status != "ok":
        pair.reason = f"status {ra.status} in A, {rb.status} in B"
        return pair
    if not ra.step_times_s or not rb.step_times_s:
        pair.reason = "no raw step times on one side (load results with Store.get)"
        return pair
    versions = version_differences(ra, rb)
    if versions and not across_versions:
        pair.reason = "software differs: " + ", ".join(versions)
        return pair
    if versions:
        pair.notes.append("versions differ: " + ", ".join(versions))
    if ra.device_name != rb.device_name:
        pair.notes.append(f"devices: {ra.device_name} -> {rb.device_name}")
    if ra.threads != rb.threads:
        pair.notes.append(f"threads used: {ra.threads} -> {rb.threads}")
    sig = significance(ra.step_times_s, rb.step_times_s, alpha)
    pair.verdict, pair.ratio, pair.ratio_ci = sig["verdict"], sig["ratio"], sig["ratio_ci"]
    pair.p_value, pair.u = sig["p_value"], sig["u"]
    n1, n2 = len(ra.step_times_s), len(rb.step_times_s)
    smallest_p = 2 / math.comb(n1 + n2, n1)  # exact test, complete separation
    if sig["verdict"] == "no change" and sig["p_value"] < alpha:
        pair.reason = "p < alpha but the median CIs overlap"
    elif sig["verdict"] == "no change" and smallest_p >= alpha:
        pair.reason = (f"too few steps ({n1} and {n2}) to ever reach p < {alpha}: the smallest "
                       f"possible p is {smallest_p:.2g}; time more steps (e.g. --steps 10)")
    return pair
