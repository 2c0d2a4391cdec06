"""One number for a machine: the geometric mean of its speed-ups over a reference machine.

The suite is a pinned, versioned list (SUITES; SUITE_VERSION is used): workloads at their
default options and a fixed batch size, and otherwise TrialSpec's
default configuration (fp32, torch, the framework's threads, the workload's lr, no compile, no
channels-last, one process, full-protocol speed trials only: analysis/trials.py; never
max-batch probes). For each workload found on both machines (per device
class: cpu with cpu, gpu with gpu) a side's figure is the newest run that measured it: the geometric
mean samples/s (batch / median step time) of that run's repeats (`run --repeat N`; one trial
without), as the report and `compare` take a configuration (analysis/trials.RunSpeed). The speed-up is our figure over
the reference's, at the same batch. The score is the geometric mean of those speed-ups; 1.0
means as fast as the reference.

Its 95% CI: where every workload has at least two trials on each side (`run --repeat N` on both
machines), the Welch interval over trials (repeats_interval: each trial's log samples/s one
value, as compare judges repeats), since a trial's samples/s already carries the noise between
its steps and the spread between trials is what one trial cannot show. Otherwise a two-stage
percentile bootstrap, 2,000 times with a fixed seed (bootstrap_interval): on each side the
repeats are resampled, then each drawn repeat's raw step times, in blocks of consecutive steps
where they are correlated (_resampled_speed; ours and the reference's independently); with one
trial a side this is the step-level bootstrap alone. With 2-3 trials a side the bootstrap drew
too few distinct repeats to show their spread: 89-92% of simulated scores of a machine against
itself held 1.0 where trials differ in level (docs/METHODOLOGY.md). Workloads missing on either
side are left out and named; the score is then over the common subset only.

What the CI does not cover is said, not widened by a guess (Score.notes): with one trial a
side it is the noise between the steps of each trial only, while whole runs on one machine
differ by more (the H100's cnn read 50,401 and 61,374 samples/s in one session) and so do two
hosts of one kind (two leases of the same H200 kind scored 0.981 and 1.24-1.28 against the
H100, docs/results/gpu-h200-frameworks.md). The notes also name the workloads whose GPU waited
for the host (analysis/host_bound.py) on either side: their speed-ups compare the hosts' CPUs,
clocks and drivers, not the GPUs (6 of the H200 suite's 8).

Reference machines are results bundles (store/bundle.py) shipped in
data/reference_machines/NAME.json, or any bundle file, or a stored run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np

from rigbench.analysis.contention import is_busy, share_span
from rigbench.analysis.host_bound import host_bound_state
from rigbench.analysis.stats import geometric_mean, mean_difference_interval, median, resampled_medians
from rigbench.analysis.trials import is_full_protocol, is_quick_protocol, newest_run_trials
from rigbench.spec import Result, TrialSpec
from rigbench.workloads import WORKLOADS, resolved_options

RESAMPLES = 2000
SEED = 0


#: The score's suites, pinned by version: (workload, batch, network revision) at the workload's
#: default options. A released version never changes, because a score means something only
#: against a reference measured over the same suite; a new workload, option, batch or network
#: revision (Workload.revision) makes a new version. 2026.1 is the eight reference networks at
#: their reference batches, as `rigbench run` ran them in v0.1; 2026.2 the same with catsdogs
#: rebuilt to seed 001's notebook (revision 2). A result counts for a suite only when it
#: measured the suite's revision (TrialSpec.workload_revision; stored results from before
#: revisions are revision 1), so an old catsdogs is never set against a new one.
SUITES: dict[str, tuple[tuple[str, int, int], ...]] = {
    "2026.1": (("mlp", 64, 1), ("autoencoder", 64, 1), ("cnn", 128, 1), ("rcnn", 32, 1), ("lstm", 128, 1),
               ("dcgan", 64, 1), ("resnet", 128, 1), ("catsdogs", 16, 1)),
    "2026.2": (("mlp", 64, 1), ("autoencoder", 64, 1), ("cnn", 128, 1), ("rcnn", 32, 1), ("lstm", 128, 1),
               ("dcgan", 64, 1), ("resnet", 128, 1), ("catsdogs", 16, 2)),
}
#: The suite `rigbench score` uses.
SUITE_VERSION = "2026.2"


def default_suite(version: str = SUITE_VERSION) -> list[tuple[str, int]]:
    """(workload, batch) of the pinned suite `version` (default: the current one)."""
    return [(name, batch) for name, batch, _ in SUITES[version]]


def suite_revisions(version: str = SUITE_VERSION) -> dict[str, int]:
    """workload -> the network revision that the pinned suite `version` measures."""
    return {name: revision for name, _, revision in SUITES[version]}


def device_class(r: Result) -> str:
    return "cpu" if r.spec.device == "cpu" else "gpu"


def _in_suite(r: Result, batch: int, revision: int) -> bool:
    """An ok trial of the suite's network revision with the configuration `rigbench run` gives
    the workload by default (TrialSpec's defaults at the reference batch: fp32, torch, default
    threads and lr, no compile...), on any device; options count as default when they resolve
    to the workload's defaults."""
    workload = WORKLOADS.get(r.spec.workload)
    if workload is None or r.status != "ok" or not is_full_protocol(r):
        return False
    return not _settings_apart(r, batch, revision)


def _settings_apart(r: Result, batch: int, revision: int) -> list[str]:
    """The settings in which `r` differs from the suite's configuration of its workload (the
    `rigbench run` defaults at `batch`), as 'threads 1', 'batch_size 32', 'options depth=56'."""
    s = r.spec
    default = TrialSpec.model_validate({"workload": s.workload, "batch_size": batch,
                                        "workload_revision": revision})
    ignore = ("device", "workload_options")
    mine, suite = dict(s.config_key(ignore=ignore)), dict(default.config_key(ignore=ignore))
    apart = [f"{name} {_shown(mine[name])}" for name in mine if mine[name] != suite[name]]
    workload = WORKLOADS.get(s.workload)
    if workload is not None and resolved_options(workload, s.workload_options) != resolved_options(workload, {}):
        apart.append("options " + ",".join(f"{k}={v}" for k, v in sorted(s.workload_options.items())))
    return apart


def _shown(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def left_out_for_settings(results: Iterable[Result], cls: str | None = None,
                          version: str = SUITE_VERSION) -> list[tuple[Result, list[str]]]:
    """The ok speed trials of suite workloads (on class `cls`, default any) that the suite leaves
    out for their settings (`--threads 1`, another batch, bf16, ...), each with those settings:
    what `rigbench score` names when nothing of a run is in the suite."""
    batches, revisions = dict(default_suite(version)), suite_revisions(version)
    return [(r, apart) for r in results
            if r.spec.workload in batches and r.status == "ok" and is_full_protocol(r)
            and (cls is None or device_class(r) == cls)
            and (apart := _settings_apart(r, batches[r.spec.workload], revisions[r.spec.workload]))]


def suite_results(results: Iterable[Result], cls: str, version: str = SUITE_VERSION) -> dict[str, tuple[Result, ...]]:
    """Per workload of suite `version` on devices of class `cls` ("cpu" or "gpu"), the trials of
    the newest run that measured it, in the order they ran: its repeats, on the newest trial's
    device and protocol. A run timed with the default protocol wins over a newer `--quick` one."""
    batches, revisions = dict(default_suite(version)), suite_revisions(version)
    found = [r for r in results if device_class(r) == cls and r.spec.workload in batches
             and _in_suite(r, batches[r.spec.workload], revisions[r.spec.workload])]
    timed_in_full = {r.spec.workload for r in found if not is_quick_protocol(r)}
    kept = [r for r in found if r.spec.workload not in timed_in_full or not is_quick_protocol(r)]
    return {name: tuple(r for r in trials if r.spec.device == trials[-1].spec.device)
            for name, trials in newest_run_trials(kept, lambda r: r.spec.workload).items()}


def trial_speed(r: Result) -> float:
    """samples/s from the raw step times: batch / median step time (one process: the suite's;
    one figure per window where steps were timed together, Result.timing_samples)."""
    return r.spec.batch_size / median(r.timing_samples())


@dataclass
class ScoreItem:
    workload: str
    batch_size: int
    ours: tuple[Result, ...]       # the newest run's repeats, in the order they ran
    reference: tuple[Result, ...]
    speedup: float                 # our mean samples/s / the reference's

    @property
    def quick(self) -> bool:
        """Either side was timed with the shorter `--quick` protocol (a wider CI says so too)."""
        return any(is_quick_protocol(r) for r in (*self.ours, *self.reference))

    @staticmethod
    def side(trials: Sequence[Result]) -> dict[str, Any]:
        """One side as JSON: the newest trial's id and device, every trial's id, the mean samples/s."""
        return {"id": trials[-1].id, "trials": [r.id for r in trials], "device_name": trials[-1].device_name,
                "samples_per_s": mean_speed(trials)}

    @property
    def host_bound(self) -> dict[str, bool | None]:
        """Per side, whether its trials' speed was the host's (analysis/host_bound.host_bound_state:
        None where the side stored no GPU busy or CPU time per step)."""
        return {"ours": host_bound_state(self.ours), "reference": host_bound_state(self.reference)}

    @property
    def busy(self) -> dict[str, bool]:
        """Per side, whether other processes took a share of the CPU while one of its trials was
        timed (analysis/contention.is_busy): that side's speed is its machine's under load."""
        return {side: any(is_busy(r.metrics) for r in getattr(self, side)) for side in ("ours", "reference")}

    def as_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "batch_size": self.batch_size, "speedup": self.speedup,
                "quick": self.quick, "host_bound": self.host_bound, "busy": self.busy, "ours": self.side(self.ours),
                "reference": self.side(self.reference)}


@dataclass
class Score:
    device_class: str
    value: float                 # geometric mean of the speed-ups
    ci: tuple[float, float]
    items: list[ScoreItem]
    missing_ours: list[str] = field(default_factory=list)       # suite workloads we have not run
    missing_reference: list[str] = field(default_factory=list)  # ... the reference lacks
    suite: str = SUITE_VERSION

    def _single(self, side: str) -> list[str]:
        """The workloads that `side` ("ours", "reference") measured with one trial (no repeats)."""
        return [i.workload for i in self.items if len(getattr(i, side)) < 2]

    @property
    def ci_covers(self) -> str:
        """What spread the CI holds: "within trials" (one trial per workload on each side: the
        noise between steps alone), "repeats" (every side repeated: run-to-run spread too),
        "repeats in part" (some side of some workload has one trial)."""
        singles = len(self._single("ours")) + len(self._single("reference"))
        return "within trials" if singles == 2 * len(self.items) else "repeats" if not singles else "repeats in part"

    def notes(self) -> list[str]:
        """The lines under the score: what its CI leaves out, the host-bound workloads, and a busy
        reference (our own busy trials are named under the table as `run` names them)."""
        return [line for line in (self._ci_note(), self._host_bound_note(), self._busy_reference_note()) if line]

    def _busy_reference_note(self) -> str | None:
        """A reference timed on a busy machine ran slow, so our speed-ups over it read high:
        `--reference RUN` of a run from a shared machine was scored as if it had been quiet."""
        shares = [r.metrics.others_cpu_pct_mean or 0.0 for i in self.items for r in i.reference if is_busy(r.metrics)]
        if not shares:
            return None
        span = share_span(shares)
        named = ", ".join(i.workload for i in self.items if i.busy["reference"])
        return (f"busy in the reference: other processes used {span} of its machine's CPU while its trials of "
                f"{named} were timed: those speeds are that machine's under load, so the speed-ups over them read "
                "high; score against a reference measured on a quiet machine")

    def _ci_note(self) -> str | None:
        if self.ci_covers == "repeats":
            return None
        if self.ci_covers == "within trials":
            return ("95% CI: the noise between steps within each trial only (one trial a workload on each side), "
                    "not run-to-run or host-to-host variation; `rigbench run --repeat 3` on both machines puts "
                    "run-to-run spread in it")
        named = "; ".join(f"one trial {where}: {', '.join(found)}" for where, found in
                          (("here", self._single("ours")), ("in the reference", self._single("reference"))) if found)
        return (f"95% CI: run-to-run spread only where a side has repeats; {named}, the noise within that trial "
                "alone (`rigbench run --repeat 3` them); host-to-host variation is in no part of it")

    def _host_bound_note(self) -> str | None:
        states = {side: {i.workload: i.host_bound[side] for i in self.items} for side in ("ours", "reference")}
        where = {"ours": "here", "reference": "in the reference"}
        bound = {side: [w for w, state in found.items() if state] for side, found in states.items()}
        if not bound["ours"] and not bound["reference"]:
            return None
        said = "; ".join(f"{where[side]}: {', '.join(found)} ({len(found)} of {len(self.items)})"
                         for side, found in bound.items() if found)
        who = {"ours": "our side", "reference": "the reference"}
        unknown = [f"{who[side]} cannot say" + (
            "" if len(found) == len(self.items) else f" for {', '.join(found)}")
            for side in states if (found := [w for w, state in states[side].items() if state is None])]
        if unknown:
            said += f"; {'; '.join(unknown)} (no GPU busy or CPU time per step stored)"
        return (f"host-bound {said}: the GPU waited while the CPU launched the work, so those speed-ups are the "
                "host's (its CPU, clock, driver), not the GPU's")

    def as_dict(self) -> dict[str, Any]:
        return {"device_class": self.device_class, "suite": self.suite, "score": self.value, "ci": list(self.ci),
                "ci_covers": self.ci_covers, "workloads": [i.as_dict() for i in self.items],
                "missing_here": self.missing_ours, "missing_in_reference": self.missing_reference}


def mean_speed(trials: Sequence[Result]) -> float:
    """A side's figure: the geometric mean of its repeats' samples/s (RunSpeed's)."""
    return geometric_mean([trial_speed(r) for r in trials])


def resampled_speeds(trials: Sequence[Result], rng: np.random.Generator, resamples: int) -> np.ndarray:
    """`resamples` bootstrap replicates of mean_speed: draw the repeats with replacement, then
    each drawn repeat's step times with replacement (a two-stage bootstrap)."""
    picks = rng.integers(0, len(trials), size=(resamples, len(trials)))
    log_total = np.zeros(resamples)
    for slot in range(len(trials)):  # each slot draws a repeat, then fresh step times of it
        drawn = np.stack([_resampled_speed(r, rng, resamples) for r in trials])
        log_total += np.log(drawn[picks[:, slot], np.arange(resamples)])
    return np.exp(log_total / len(trials))


def _resampled_speed(r: Result, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """`resamples` replicates of one trial's samples/s, its steps drawn in blocks where they are
    correlated (stats.resampled_medians): drawn one by one, the score's CI held 1.0 for a machine
    against itself in 75% of cases with correlated steps (benchmarks/stats_calibration.py)."""
    return r.spec.batch_size / resampled_medians(r.timing_samples(), rng, resamples)


def compute_score(ours: Mapping[str, Sequence[Result]], reference: Mapping[str, Sequence[Result]], cls: str,
                  resamples: int = RESAMPLES, seed: int = SEED, version: str = SUITE_VERSION) -> Score | None:
    """The score of suite `version` over the workloads both sides have (trials with raw step
    times); None if none. `ours` and `reference` are `suite_results` of the same version."""
    suite = [name for name, _ in default_suite(version)]
    timed = {side: {w: tuple(r for r in trials if r.step_times_s) for w, trials in found.items()}
             for side, found in (("ours", ours), ("reference", reference))}
    common = [w for w in suite if timed["ours"].get(w) and timed["reference"].get(w)]
    missing_ours = [w for w in suite if w not in ours]
    missing_ref = [w for w in suite if w in ours and w not in reference]
    if not common:
        return None
    items = [ScoreItem(w, timed["ours"][w][-1].spec.batch_size, timed["ours"][w], timed["reference"][w],
                       mean_speed(timed["ours"][w]) / mean_speed(timed["reference"][w])) for w in common]
    repeated = all(min(len(i.ours), len(i.reference)) >= 2 for i in items)
    ci = repeats_interval(items) if repeated else bootstrap_interval(items, resamples, seed)
    return Score(cls, geometric_mean([i.speedup for i in items]), ci, items, missing_ours, missing_ref, version)


def repeats_interval(items: Sequence[ScoreItem]) -> tuple[float, float]:
    """The score's 95% CI where every side of every workload has repeats: the trials' log
    samples/s are the values, and the interval of the mean over workloads of (our mean less the
    reference's) is Welch's (stats.mean_difference_interval, as compare judges repeats), back on
    the ratio scale. A trial's samples/s already carries its steps' noise, so nothing is drawn."""
    def logs(trials: Sequence[Result]) -> list[float]:
        return [math.log(trial_speed(r)) for r in trials]

    _, low, high = mean_difference_interval([(logs(i.reference), logs(i.ours)) for i in items])
    return math.exp(low), math.exp(high)


def bootstrap_interval(items: Sequence[ScoreItem], resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float]:
    """The score's 95% CI where some side has one trial: a two-stage percentile bootstrap
    (resampled_speeds on each side, independently), every speed-up and their geometric mean
    recomputed. With one trial a side it holds the noise between steps alone."""
    rng = np.random.default_rng(seed)
    log_sum = np.zeros(resamples)
    for item in items:
        log_sum += np.log(resampled_speeds(item.ours, rng, resamples)
                          / resampled_speeds(item.reference, rng, resamples))
    low, high = np.percentile(np.exp(log_sum / len(items)), [2.5, 97.5])
    return float(low), float(high)


def shipped_references() -> list[str]:
    """Names of the reference machines shipped in data/reference_machines/ (NAME.json)."""
    folder = resources.files("rigbench.analysis").joinpath("data/reference_machines")
    if not folder.is_dir():
        return []
    return sorted(p.name.removesuffix(".json") for p in folder.iterdir() if p.name.endswith(".json"))


def read_shipped_reference(name: str) -> str:
    """The text of a shipped reference bundle."""
    return resources.files("rigbench.analysis").joinpath(f"data/reference_machines/{name}.json").read_text(
        encoding="utf-8")
