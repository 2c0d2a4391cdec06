"""One number for a machine: the geometric mean of its speed-ups over a reference machine.

The suite is a pinned, versioned list (SUITES; SUITE_VERSION is used): workloads at their
default options and a fixed batch size, and otherwise TrialSpec's
default configuration (fp32, torch, the framework's threads, the workload's lr, no compile, no
channels-last, one process, full-protocol speed trials only: analysis/trials.py; never
max-batch probes). For each workload found on both machines (per device
class: cpu with cpu, gpu with gpu) the speed-up is our samples/s over the reference's, i.e.
median(reference step times) / median(our step times) at the same batch. The score is the
geometric mean of those speed-ups; 1.0 means as fast as the reference.

Its 95% CI is a percentile bootstrap: each workload's raw step times are resampled (ours and
the reference's independently), every speed-up and the geometric mean recomputed, 2,000
times with a fixed seed. Workloads missing on either side are left out and named; the score
is then over the common subset only.

Reference machines are results bundles (store/bundle.py) shipped in
data/reference_machines/NAME.json, or any bundle file, or a stored run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np

from rigbench.analysis.stats import median
from rigbench.analysis.trials import is_full_protocol, is_quick_protocol
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
    s = r.spec
    workload = WORKLOADS.get(s.workload)
    if workload is None or r.status != "ok" or not is_full_protocol(r):
        return False
    default = TrialSpec.model_validate({"workload": s.workload, "batch_size": batch,
                                        "workload_revision": revision})
    ignore = ("device", "workload_options")
    return (s.config_key(ignore=ignore) == default.config_key(ignore=ignore)
            and resolved_options(workload, s.workload_options) == resolved_options(workload, {}))


def suite_results(results: Iterable[Result], cls: str, version: str = SUITE_VERSION) -> dict[str, Result]:
    """The newest result of suite `version` per workload on devices of class `cls` ("cpu" or
    "gpu"); one timed with the default protocol wins over a newer `--quick` one."""
    batches, revisions = dict(default_suite(version)), suite_revisions(version)
    chosen: dict[str, Result] = {}
    for r in sorted(results, key=lambda r: (not is_quick_protocol(r), r.id or 0)):
        name = r.spec.workload
        if device_class(r) == cls and name in batches and _in_suite(r, batches[name], revisions[name]):
            chosen[name] = r
    return chosen


@dataclass
class ScoreItem:
    workload: str
    batch_size: int
    ours: Result
    reference: Result
    speedup: float              # our samples/s / the reference's

    @property
    def quick(self) -> bool:
        """Either side was timed with the shorter `--quick` protocol (a wider CI says so too)."""
        return is_quick_protocol(self.ours) or is_quick_protocol(self.reference)

    def as_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "batch_size": self.batch_size, "speedup": self.speedup,
                "quick": self.quick,
                "ours": {"id": self.ours.id, "device_name": self.ours.device_name,
                         "samples_per_s": self.ours.spec.batch_size / median(self.ours.step_times_s)},
                "reference": {"id": self.reference.id, "device_name": self.reference.device_name,
                              "samples_per_s": self.reference.spec.batch_size / median(self.reference.step_times_s)}}


@dataclass
class Score:
    device_class: str
    value: float                 # geometric mean of the speed-ups
    ci: tuple[float, float]
    items: list[ScoreItem]
    missing_ours: list[str] = field(default_factory=list)       # suite workloads we have not run
    missing_reference: list[str] = field(default_factory=list)  # ... the reference lacks
    suite: str = SUITE_VERSION

    def as_dict(self) -> dict[str, Any]:
        return {"device_class": self.device_class, "suite": self.suite, "score": self.value, "ci": list(self.ci),
                "workloads": [i.as_dict() for i in self.items],
                "missing_here": self.missing_ours, "missing_in_reference": self.missing_reference}


def geometric_mean(values: Sequence[float]) -> float:
    if not values or any(v <= 0 for v in values):
        raise ValueError("geometric mean needs positive values")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def compute_score(ours: dict[str, Result], reference: dict[str, Result], cls: str,
                  resamples: int = RESAMPLES, seed: int = SEED, version: str = SUITE_VERSION) -> Score | None:
    """The score of suite `version` over the workloads both sides have (with raw step times);
    None if none. `ours` and `reference` are `suite_results` of the same version."""
    suite = [name for name, _ in default_suite(version)]
    common = [w for w in suite if w in ours and w in reference
              and ours[w].step_times_s and reference[w].step_times_s]
    missing_ours = [w for w in suite if w not in ours]
    missing_ref = [w for w in suite if w in ours and w not in reference]
    if not common:
        return None
    items = [ScoreItem(w, ours[w].spec.batch_size, ours[w], reference[w],
                       median(reference[w].step_times_s) / median(ours[w].step_times_s)) for w in common]
    value = geometric_mean([i.speedup for i in items])
    rng = np.random.default_rng(seed)
    log_sum = np.zeros(resamples)
    for item in items:
        mine = np.asarray(item.ours.step_times_s, dtype=float)
        theirs = np.asarray(item.reference.step_times_s, dtype=float)
        med_mine = np.median(mine[rng.integers(0, mine.size, size=(resamples, mine.size))], axis=1)
        med_theirs = np.median(theirs[rng.integers(0, theirs.size, size=(resamples, theirs.size))], axis=1)
        log_sum += np.log(med_theirs / med_mine)
    low, high = np.percentile(np.exp(log_sum / len(items)), [2.5, 97.5])
    return Score(cls, value, (float(low), float(high)), items, missing_ours, missing_ref, version)


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
