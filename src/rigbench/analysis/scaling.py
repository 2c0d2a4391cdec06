"""Speed-ups of thread counts, precisions, torch.compile and channels-last over the fp32
eager default (`rigbench scaling`). Pure functions over stored Results, no I/O.

The baseline of a group (the same configuration but for the knobs: workload, options,
framework, device, batch size, lr, world size...; TrialSpec.config_key) is the speed trial in
fp32, eager (no compile), contiguous layout, with the framework's own thread count. A variant changes exactly one of those knobs; trials that change more than one, and
anything but full-protocol speed trials (analysis/trials.py: no probes, training or lr-find
trials), are not part of the table. Failed variants stay in it with their
status and error (an `unsupported` precision is an answer, not a gap).

Repeats: a configuration measured more than once in its newest run (the baseline always is:
`rigbench scaling` runs it first and last, experiments/scaling.py) is one row: its samples/s
is the mean of its trials', and its interval spans from the lowest to the highest bound of
their 95% CIs. A thread count equal to the one the baseline ran with is the baseline's
configuration again: its row stays, and the baseline row counts its trials too. So the
baseline's interval holds the machine's drift over the run as well as each trial's own noise,
and a variant inside it is "within noise" even where the CIs of two single trials would have
called it apart (on the 2-core dev VM, four identical cnn trials of one run read 1,667 to 1,997
samples/s, each with a CI of about +-3%).

Thread counts 1, 2, 4, 8 are the columns desktop_cpu_t1..t8 (and server_cpu_t1..t32) of
Shi et al. 2016, Table 7 ("Benchmarking State-of-the-Art Deep Learning Software Tools").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rigbench.analysis.energy import samples_per_joule
from rigbench.analysis.stats import geometric_mean, mean
from rigbench.analysis.trials import has_speed, is_full_protocol, newest_run_trials, run_order, speed
from rigbench.compile_modes import COMPILE_MODES, compile_label
from rigbench.spec import PRECISIONS, Result, TrialSpec

#: The knobs a variant may change, in table order (configuration fields of TrialSpec).
KNOBS: tuple[str, ...] = ("threads", "precision", "compile", "channels_last")
#: The baseline's values: TrialSpec's defaults (fp32, eager, contiguous, the framework's threads).
_BASE_VALUES: dict[str, Any] = {k: TrialSpec.model_fields[k].default for k in KNOBS}


@dataclass
class ScalingRow:
    """One line of the table: the baseline or one variant, with its speed-up."""

    workload: str
    device: str
    batch_size: int
    knob: str  # "baseline" or one of KNOBS
    value: Any  # the knob's value (threads count, precision name, compile mode, True)
    label: str  # e.g. "threads=1", "bf16", "compile", "compile reduce-overhead"
    status: str
    error: str | None
    trial_id: int | None  # the newest of its trials
    threads: int | None  # threads the trial ran with, as the framework reported
    samples_per_s: float | None  # the mean over its successful trials
    samples_per_s_ci: tuple[float, float] | None  # one trial's 95% CI; lowest to highest bound of several
    speedup: float | None  # samples/s over the baseline's
    within_noise: bool | None  # the two intervals overlap: no clear difference
    shi2016_column: str | None = None  # threads rows: the matching column of Shi et al.'s Table 7
    energy_per_sample_j: float | None = None  # measured, where the machine can tell
    trial_ids: list[int] = field(default_factory=list)  # every trial of the row, in run order
    samples_per_s_trials: list[float] = field(default_factory=list)  # each successful trial's, in run order
    # a threads variant at the count the baseline ran with (threads=2 where the framework's own
    # count is 2): a repeat of the baseline in all but name, whose trials the baseline row counts
    repeats_baseline: bool = False

    @property
    def spread(self) -> float | None:
        """Fastest over slowest of the row's trials, minus 1 (0.2: 20% apart); None for one."""
        speeds = self.samples_per_s_trials
        return max(speeds) / min(speeds) - 1 if len(speeds) > 1 and min(speeds) > 0 else None

    @property
    def samples_per_j(self) -> float | None:
        """Samples per joule, derived from energy_per_sample_j (never stored)."""
        return samples_per_joule(self.energy_per_sample_j)

    def row(self) -> dict[str, Any]:
        """The JSON form (`rigbench scaling --json`), with samples_per_j derived."""
        out = dict(self.__dict__)
        out["samples_per_s_ci"] = list(self.samples_per_s_ci) if self.samples_per_s_ci else None
        out["samples_per_j"] = self.samples_per_j
        out["spread"] = self.spread
        return out


def _group(r: Result) -> tuple:
    """The configuration without the knobs (TrialSpec.config_key): a baseline and its variants."""
    return r.spec.config_key(ignore=KNOBS)


def changed_knobs(r: Result) -> list[str]:
    """The knobs in which `r`'s spec differs from the fp32 eager default."""
    return [k for k in KNOBS if getattr(r.spec, k) != _BASE_VALUES[k]]


def _label(knob: str, value: Any) -> str:
    if knob == "baseline":
        return "fp32 eager, default threads"
    if knob == "threads":
        return f"threads={value}"
    if knob == "precision":
        return str(value)
    return "channels-last" if knob == "channels_last" else compile_label(value)


def shi2016_column(threads: int) -> str | None:
    """The column of Shi et al. 2016's Table 7 measured with this many threads, if any."""
    desktop = f"desktop_cpu_t{threads}" if threads in (1, 2, 4, 8) else None
    server = f"server_cpu_t{threads}" if threads in (1, 2, 4, 8, 16, 32) else None
    return " / ".join(c for c in (desktop, server) if c) or None


def speed_band(trials: Sequence[Result]) -> tuple[float, float] | None:
    """The widest 95% interval of samples/s over a configuration's successful trials (its
    repeats); None where one lacks an interval."""
    cis = [r.metrics.samples_per_s_ci for r in trials]
    return (min(c[0] for c in cis if c), max(c[1] for c in cis if c)) if trials and all(cis) else None


def overlap(a: tuple[float, float] | None, b: tuple[float, float] | None) -> bool | None:
    """Whether two intervals overlap (no clear difference); None where either is missing."""
    if not a or not b:
        return None
    return a[0] <= b[1] and b[0] <= a[1]


def _order(row: ScalingRow) -> tuple:
    rank = ("baseline", *KNOBS).index(row.knob)
    if row.knob == "threads":
        return rank, row.value, 0
    if row.knob == "precision":
        return rank, PRECISIONS.index(row.value), 0
    if row.knob == "compile":
        return rank, COMPILE_MODES.index(row.value), 0
    return rank, 0, 0


def _key(r: Result) -> tuple | None:
    """(group, knob, value): a trial's row in the table; None for a trial of none."""
    knobs = changed_knobs(r)
    if not is_full_protocol(r) or len(knobs) > 1:
        return None
    return (_group(r), knobs[0], getattr(r.spec, knobs[0])) if knobs else (_group(r), "baseline", None)


def pooled_trials(results: Sequence[Result]) -> dict[tuple, list[Result]]:
    """The trials of every row, keyed (group, knob, value) in order of first appearance: each
    configuration's from its newest run, the baseline's with those of a thread count equal to
    its own (module docstring: repeats). The one count of a configuration's trials: the table
    and the recommendation's lines (analysis/recommend.baseline_by_batch) read it alike."""
    newest = newest_run_trials(results, _key)
    for (group, knob, _), trials in list(newest.items()):
        # a thread count equal to the baseline's own is its configuration again: one more
        # measurement of it, so of the noise between identical trials
        repeats = newest.get((group, "threads", _shown(trials).threads), []) if knob == "baseline" else []
        if repeats:
            newest[(group, knob, None)] = sorted(trials + repeats, key=run_order)
    return newest


def _shown(trials: Sequence[Result]) -> Result:
    """The trial whose status, error and threads a row shows: the newest that succeeded, if any."""
    ok = [r for r in trials if has_speed(r)]
    return ok[-1] if ok else trials[-1]


def scaling_table(results: Sequence[Result]) -> list[ScalingRow]:
    """Baseline and variant rows for every group that has a baseline trial, in table order
    (groups in order of first appearance). A configuration measured in several runs is taken
    from the newest of them, with all its trials of that run (module docstring: repeats)."""
    pooled = pooled_trials(results)
    rows: list[ScalingRow] = []
    for group in dict.fromkeys(key[0] for key in pooled):
        base_trials = pooled.get((group, "baseline", None))
        if base_trials is None:
            continue
        base = _row("baseline", None, base_trials)
        members = [(k, v, trials) for (g, k, v), trials in pooled.items() if g == group and k != "baseline"]
        rows += [base, *sorted((_row(k, v, trials, base) for k, v, trials in members), key=_order)]
    return rows


def _row(knob: str, value: Any, trials: list[Result], base: ScalingRow | None = None) -> ScalingRow:
    """One row from a configuration's trials; a variant's speed-up over `base`."""
    ok = [r for r in trials if has_speed(r)]
    shown = _shown(trials)
    speeds = [speed(r) for r in ok]
    band = speed_band(ok)
    energies = [e for r in ok if (e := r.metrics.energy_per_sample_j) is not None]
    samples_per_s = geometric_mean(speeds) if speeds else None  # as RunSpeed takes repeats
    speedup, within_noise = (1.0 if speeds else None), None  # the baseline's own row
    if base is not None:
        speedup = samples_per_s / base.samples_per_s if samples_per_s and base.samples_per_s else None
        within_noise = overlap(band, base.samples_per_s_ci) if speedup is not None else None
    return ScalingRow(
        workload=shown.spec.workload, device=shown.spec.device, batch_size=shown.spec.batch_size, knob=knob,
        value=value, label=_label(knob, value), status=shown.status, error=shown.error, trial_id=shown.id,
        threads=shown.threads, samples_per_s=samples_per_s, samples_per_s_ci=band,
        speedup=speedup, within_noise=within_noise,
        shi2016_column=shi2016_column(value) if knob == "threads" else None,
        energy_per_sample_j=mean(energies) if energies else None,
        trial_ids=[r.id for r in trials if r.id is not None], samples_per_s_trials=speeds,
        repeats_baseline=knob == "threads" and base is not None and base.threads == value,
    )
