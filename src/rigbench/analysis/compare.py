"""Compare two sets of results (two runs, two filters, two machines) trial by trial.

Pairing: two results pair only when their configurations are equal (TrialSpec.config_key:
workload + options + revision, framework, device, batch size, precision, threads, lr, compile,
channels_last, world size, ...). On one machine the device is matched by id (`cuda:1` with
`cuda:1`); across machines by kind (cpu with cpu, any GPU with any GPU) when each side has at
most one device of that kind, else by id. A trial with no equal configuration on the other
side is never lined up with a different one: it is listed as unpaired, with the closest trial
of the same workload on the other side and the fields in which they differ (e.g. `batch 32 vs
64`), so that what could not be compared is said.

Comparability: a pair whose software differs (Result.software: torch, CUDA, cuDNN... versions;
GPU libraries are ignored for CPU trials) is marked incomparable with the reason, unless
`across_versions` is set, in which case it is compared and flagged "versions differ".
A side whose trial did not end ok is incomparable too.

Significance (docs/COMPARING.md): a change is reported only when both hold:
1. Mann-Whitney U on the raw step times, two-sided, p < alpha (0.05);
2. the 95% intervals of the two median step times (stats.median_ci: order statistics, widened
   for correlated steps) do not overlap, and each side has at least 6 measurements.
Otherwise: "no significant change". The ratio is B's samples/s over A's, with a 95%
bootstrap CI (each side resampled on its own, in blocks where its steps are correlated).

Repeats: a side with a configuration measured more than once in its newest run (`rigbench run
--repeat N`) has every trial of it. Where both sides have at least two successful trials, the
pair is judged on trials instead, since a trial's CI covers the noise between its steps but not
between trials (docs/METHODOLOGY.md): each trial's samples/s is one value, each side's figure
is their geometric mean with a 95% t interval, and B/A is the ratio of the geometric means with
the 95% Welch interval of the difference of mean log samples/s; a change is reported when that
interval leaves out 1.

Several pairs: their p values (Mann-Whitney U's, or Welch's on trials) are adjusted together
(Benjamini-Hochberg, adjust_for_pairs), and a change stands only while its adjusted p is under
alpha too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from rigbench.analysis.contention import is_busy, share_span
from rigbench.analysis.device_prediction import Prediction, predict
from rigbench.analysis.host_bound import host_bound_note
from rigbench.analysis.significance import ALPHA, significance, trial_significance
from rigbench.analysis.stats import MEDIAN_CI_MIN, benjamini_hochberg, geometric_mean, median, median_ci, t_interval
from rigbench.analysis.trials import global_batch, is_full_protocol, newest_run_trials
from rigbench.spec import Result

#: software keys that describe the configuration, not a version (compared elsewhere or not at all)
_NOT_VERSIONS = {"num_threads"}
#: GPU libraries: irrelevant to a CPU trial
_GPU_LIBRARIES = {"cuda", "cudnn", "hip", "rocm", "nccl"}


@dataclass
class Side:
    """One side of a pair: the result and its step-time statistics."""

    result: Result                             # the newest trial (the one judged, without repeats)
    samples_per_s: float | None = None
    ci: tuple[float, float] | None = None     # samples/s, 95% (from the median step time's, stats.median_ci)
    trials: list[Result] = field(default_factory=list)  # with repeats: every successful trial


@dataclass
class Pair:
    """Two lined-up results and the verdict on them."""

    key: str                                   # human label of what was compared
    a: Side | None
    b: Side | None
    verdict: str                               # faster | slower | no change | incomparable
    reason: str = ""                           # why incomparable, or what to keep in mind
    ratio: float | None = None                 # B samples/s / A samples/s
    ratio_ci: tuple[float, float] | None = None
    p_value: float | None = None               # Mann-Whitney U's on steps, Welch's on trials
    p_adjusted: float | None = None            # for every pair tested together (adjust_for_pairs)
    u: float | None = None
    notes: list[str] = field(default_factory=list)
    #: on two different devices: what the spec sheets predict for B/A (device_prediction.py)
    predicted: Prediction | None = None

    def as_dict(self) -> dict[str, Any]:
        def side(s: Side | None) -> dict[str, Any] | None:
            if s is None:
                return None
            r = s.result
            return {"id": r.id, "run_id": r.run_id, "device": r.spec.device, "device_name": r.device_name,
                    "status": r.status, "samples_per_s": s.samples_per_s,
                    "samples_per_s_ci": list(s.ci) if s.ci else None, "steps": len(r.step_times_s),
                    "software": r.software, "trials": [t.id for t in s.trials] or [r.id],
                    "samples_per_s_trials": [_speed(t) for t in s.trials]}
        return {"trial": self.key, "verdict": self.verdict, "reason": self.reason,
                "ratio": self.ratio, "ratio_ci": list(self.ratio_ci) if self.ratio_ci else None,
                "p_value": self.p_value, "p_adjusted": self.p_adjusted, "u": self.u, "notes": self.notes,
                "predicted": self.predicted.as_dict() if self.predicted else None,
                "a": side(self.a), "b": side(self.b)}


def _device_class(device: str) -> str:
    return "cpu" if device == "cpu" else "gpu"


def _by_kind(results: Sequence[Result]) -> bool:
    """True when each device class appears with at most one device id on this side."""
    ids: dict[str, set[str]] = {}
    for r in results:
        ids.setdefault(_device_class(r.spec.device), set()).add(r.spec.device)
    return all(len(v) == 1 for v in ids.values())


#: Configuration fields under the words a difference names them by (others by their field name).
FIELD_WORDS: dict[str, str] = {"batch_size": "batch", "workload_revision": "network revision",
                               "world_size": "processes", "workload_options": "options",
                               "data_parallel": "data-parallel wrapper"}


@dataclass(frozen=True)
class Pairing:
    """How trials pair: by the configuration key (TrialSpec.config_key), the device by kind when
    `by_kind`, without the fields in `split` (those the two sides were chosen by, e.g. `device`
    for `--where-a device=cpu --where-b device=cuda:0`: each side has one value of it)."""

    by_kind: bool = False
    split: frozenset[str] = frozenset()

    def key(self, r: Result) -> tuple:
        device = _device_class(r.spec.device) if self.by_kind else r.spec.device
        fields = r.spec.config_key(ignore=("device", *self.split))
        return fields if "device" in self.split else (("device", device), *fields)


@dataclass
class Unpaired:
    """A trial with no equal configuration on the other side, and the closest one there (same
    workload, fewest differing fields), with how they differ."""

    result: Result
    closest: Result | None = None
    differences: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.result.id, "run_id": self.result.run_id, "trial": self.result.spec.label(),
                "closest_id": None if self.closest is None else self.closest.id,
                "differences": self.differences}


@dataclass
class Comparison:
    """The pairs of equal configurations, and the trials of each side left unpaired."""

    pairs: list[Pair]
    only_a: list[Unpaired]
    only_b: list[Unpaired]


def differences(a: Result, b: Result, pairing: Pairing = Pairing()) -> list[str]:
    """`batch 32 vs 64`-style words for every configuration field in which `a` and `b` differ."""
    def shown(value: Any) -> str:
        return "default" if value is None else str(value)

    pairs = [(name, va, vb) for (name, va), (_, vb) in zip(pairing.key(a), pairing.key(b), strict=True) if va != vb]
    if any(name == "world_size" for name, _, _ in pairs):  # more than one rank implies the wrapper
        pairs = [pair for pair in pairs if pair[0] != "data_parallel"]
    return [f"{FIELD_WORDS.get(name, name)} {shown(va)} vs {shown(vb)}" for name, va, vb in pairs]


def _unpaired(r: Result, others: Sequence[Result], pairing: Pairing) -> Unpaired:
    """`r` with the closest trial of its workload among `others` (fewest differences, then the
    nearest batch, then the newest), or none."""
    same = [o for o in others if o.spec.workload == r.spec.workload]
    if not same:
        return Unpaired(r)
    closest = min(same, key=lambda o: (len(differences(r, o, pairing)),
                                       abs(math.log(o.spec.batch_size / r.spec.batch_size)), -(o.id or 0)))
    return Unpaired(r, closest, differences(r, closest, pairing))


def _label(r: Result, device: str | None = None) -> str:
    spec = r.spec if device is None else r.spec.model_copy(update={"device": device})
    return spec.label()


def version_differences(a: Result, b: Result) -> list[str]:
    """`torch 2.4.0 -> 2.13.0`-style lines for every version that differs between two results
    (between two frameworks, of the libraries both have); `(none)` where one side has none (e.g.
    `timer`, stored since the host timer's windows)."""
    keys = sorted((set(a.software) | set(b.software)) - _NOT_VERSIONS)
    if a.spec.framework != b.spec.framework:  # each side's own framework libraries are expected
        keys = [k for k in keys if k in a.software and k in b.software]
    if a.spec.device == "cpu" and b.spec.device == "cpu":
        keys = [k for k in keys if k not in _GPU_LIBRARIES]
    def shown(value: Any) -> Any:
        return "(none)" if value is None else value

    return [f"{k} {shown(a.software.get(k))} -> {shown(b.software.get(k))}" for k in keys
            if a.software.get(k) != b.software.get(k)]


def _speed(r: Result) -> float:
    """samples/s of a trial with step times: its global batch (every rank's: the trial's own
    samples/s) / median step time (one figure per window where steps were timed together:
    Result.timing_samples)."""
    return global_batch(r) / median(r.timing_samples())


def _side(trials: Sequence[Result]) -> Side:
    """A side from a configuration's trials (oldest first): judged on trials where at least two
    succeeded (module docstring: the geometric mean and its t interval), else on the newest."""
    ok = [t for t in trials if t.status == "ok" and t.step_times_s]
    if len(ok) >= 2:
        low, high = t_interval([math.log(_speed(t)) for t in ok])
        return Side(ok[-1], geometric_mean([_speed(t) for t in ok]), (math.exp(low), math.exp(high)), ok)
    r = trials[-1]
    if r.status != "ok" or len(r.step_times_s) == 0:
        return Side(r)
    low, high = median_ci(r.timing_samples())
    batch = global_batch(r)
    return Side(r, _speed(r), (batch / high, batch / low))


def adjust_for_pairs(pairs: Sequence[Pair], alpha: float = ALPHA) -> None:
    """Where several pairs were tested, a change stands only while its p adjusted for them all
    (stats.benjamini_hochberg) is under `alpha`, and one undone says why (module docstring)."""
    tested = [p for p in pairs if p.p_value is not None]
    if len(tested) < 2:
        return
    for pair, adjusted in zip(tested, benjamini_hochberg([p.p_value for p in tested if p.p_value is not None])):
        pair.p_adjusted = adjusted
        if pair.verdict in ("faster", "slower") and adjusted >= alpha:
            pair.verdict = "no change"
            pair.reason = (f"p = {pair.p_value:.2g} alone, {adjusted:.2g} adjusted for the {len(tested)} pairs "
                           f"tested together (Benjamini-Hochberg): over {alpha:g}; more trials a side "
                           "(`run --repeat 5`) resolve a real change")


def compare_results(a: Sequence[Result], b: Sequence[Result], same_machine: bool,
                    across_versions: bool = False, alpha: float = ALPHA,
                    split: Collection[str] = ()) -> Comparison:
    """Pair the results of `a` and `b` (with raw step times: Store.get) of equal configuration
    and judge each pair; the rest of each side is listed unpaired. `split`: the configuration
    fields the sides were chosen by (one value each), left out of the pairing (Pairing).

    Only full-protocol speed trials take part (analysis/trials.py): max-batch probes time too
    few steps, training and lr-find runs have no comparable step times.
    When a side has several results with the same key, those of the newest run that has it
    are used: all of them where that run repeated it (module docstring), else the one.
    """
    a = [r for r in a if is_full_protocol(r)]
    b = [r for r in b if is_full_protocol(r)]
    pairing = Pairing(not same_machine and _by_kind(a) and _by_kind(b), frozenset(split))
    newest_a = newest_run_trials(a, pairing.key)
    newest_b = newest_run_trials(b, pairing.key)
    pairs = [_judge(ta, newest_b[key], pairing, across_versions, alpha)
             for key, ta in newest_a.items() if key in newest_b]
    adjust_for_pairs(pairs, alpha)
    for pair, key in zip(pairs, [k for k in newest_a if k in newest_b], strict=True):
        pair.notes += [note for name, side, newest in (("A", a, newest_a[key]), ("B", b, newest_b[key]))
                       if (note := _hidden_devices(name, side, newest, pairing.key, key))]
    left_a = [t[-1] for k, t in newest_a.items() if k not in newest_b]
    left_b = [t[-1] for k, t in newest_b.items() if k not in newest_a]
    return Comparison(pairs, [_unpaired(r, [t[-1] for t in newest_b.values()], pairing) for r in left_a],
                      [_unpaired(r, [t[-1] for t in newest_a.values()], pairing) for r in left_b])


def _hidden_devices(name: str, side: Sequence[Result], compared: Sequence[Result],
                    key: Callable[[Result], Any], value: Any) -> str | None:
    """The note for a side that holds this configuration on other device models than the trials
    compared (the newest run's), or None: `--where-a device=cuda:0` over an H100's and an H200's
    imported runs keeps one GPU's trials and would hide the other's."""
    kept = {r.device_name for r in compared}
    others = sorted({r.device_name or "?" for r in side if r.device_name not in kept and key(r) == value})
    if not others:
        return None
    return (f"{name} also holds this configuration on {', '.join(others)} (other runs): only the newest run's, on "
            f"{', '.join(sorted(n or '?' for n in kept))}, is compared; narrow {name} to one device (a run id, or --where-{name.lower()} device_name=MODEL)")


def _busy_text(side: str, trials: Sequence[Result]) -> list[str]:
    """`other processes used 51% of the CPU in A #5`, or `77-80% ... in A #5, #6, #7` for a
    side's busy repeats (analysis/contention.py): one clause a side, where a clause a trial
    repeated the sentence six times for two runs of `--repeat 3`."""
    busy = [t for t in trials if is_busy(t.metrics)]
    if not busy:
        return []
    span = share_span([t.metrics.others_cpu_pct_mean or 0.0 for t in busy])
    return [f"other processes used {span} of the CPU in {side} {', '.join(f'#{t.id}' for t in busy)}"]


def _judge(trials_a: list[Result], trials_b: list[Result], pairing: Pairing, across_versions: bool,
           alpha: float) -> Pair:
    side_a, side_b = _side(trials_a), _side(trials_b)
    one_sided = bool(side_a.trials) != bool(side_b.trials)
    if one_sided:  # repeats on one side only: the newest trial against the other side's one
        side_a, side_b = _side([side_a.result]), _side([side_b.result])
    ra, rb = side_a.result, side_b.result
    device = _device_class(ra.spec.device) if pairing.by_kind else None
    pair = Pair(_label(ra, device), side_a, side_b, "incomparable")
    if pairing.split:
        pair.notes.append("A vs B: " + ", ".join(differences(ra, rb)))
    if one_sided:
        counts = f"{len(trials_a)} trial{'s' * (len(trials_a) != 1)} in A, {len(trials_b)} in B"
        pair.notes.append(f"{counts}: the newest of each compared, "
                          "as judging on trials takes at least two a side")
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
        pair.predicted = predict(ra, rb, side_a.samples_per_s, side_b.samples_per_s)
        if pair.predicted is not None:
            pair.notes.append(pair.predicted.note())
    if ra.threads != rb.threads:
        pair.notes.append(f"threads used: {ra.threads} -> {rb.threads}")
    busy = _busy_text("A", side_a.trials or [ra]) + _busy_text("B", side_b.trials or [rb])
    if busy:
        pair.notes.append("busy machine: " + "; ".join(busy) + " (a difference may be that load, not the "
                          "configuration)")
    host = host_bound_note(side_a.trials or [ra], side_b.trials or [rb])
    if host:
        pair.notes.append(host)
    if side_a.trials and side_b.trials:
        judged = trial_significance([_speed(t) for t in side_a.trials], [_speed(t) for t in side_b.trials])
        pair.verdict, pair.ratio, pair.ratio_ci = judged["verdict"], judged["ratio"], judged["ratio_ci"]
        pair.p_value = judged["p_value"]
        pair.notes.append(f"judged on trials: {len(side_a.trials)} in A, {len(side_b.trials)} in B")
        return pair
    a_samples, b_samples = ra.timing_samples(), rb.timing_samples()
    sig = significance(a_samples, b_samples, alpha)
    pair.verdict, pair.ratio, pair.ratio_ci = sig["verdict"], sig["ratio"], sig["ratio_ci"]
    pair.p_value, pair.u = sig["p_value"], sig["u"]
    n1, n2 = len(a_samples), len(b_samples)
    smallest_p = 2 / math.comb(n1 + n2, n1)  # exact test, complete separation
    if sig["verdict"] == "no change" and sig["p_value"] < alpha and min(n1, n2) < MEDIAN_CI_MIN:
        counted, hint = (("windows of steps", "time longer (e.g. --seconds 5: a window is about 0.1 s)")
                         if ra.step_windows or rb.step_windows else ("steps", "time more steps (e.g. --steps 10)"))
        pair.reason = (f"too few {counted} ({n1} and {n2}) for a 95% interval of each median (it takes "
                       f"{MEDIAN_CI_MIN} a side); {hint}")
    elif sig["verdict"] == "no change" and sig["p_value"] < alpha:
        pair.reason = "p < alpha but the median CIs overlap"
    elif sig["verdict"] == "no change" and smallest_p >= alpha and (ra.step_windows or rb.step_windows):
        pair.reason = (f"too few windows of steps ({n1} and {n2}; steps timed together count once) to ever "
                       f"reach p < {alpha}: the smallest possible p is {smallest_p:.2g}; time longer "
                       "(e.g. --seconds 5: a window is about 0.1 s)")
    elif sig["verdict"] == "no change" and smallest_p >= alpha:
        pair.reason = (f"too few steps ({n1} and {n2}) to ever reach p < {alpha}: the smallest "
                       f"possible p is {smallest_p:.2g}; time more steps (e.g. --steps 10)")
    return pair
