"""Speed-ups of thread counts, precisions, torch.compile and channels-last over the fp32
eager default (`rigbench scaling`). Pure functions over stored Results, no I/O.

The baseline of a group (the same configuration but for the knobs: workload, options,
framework, device, batch size, lr, world size...; TrialSpec.config_key) is the speed trial in
fp32, eager (no compile), contiguous layout, with the framework's own thread count. A variant changes exactly one of those knobs; trials that change more than one, and
anything but full-protocol speed trials (analysis/trials.py: no probes, training or lr-find
trials), are not part of the table. Failed variants stay in it with their
status and error (an `unsupported` precision is an answer, not a gap).

Thread counts 1, 2, 4, 8 are the columns desktop_cpu_t1..t8 (and server_cpu_t1..t32) of
Shi et al. 2016, Table 7 ("Benchmarking State-of-the-Art Deep Learning Software Tools").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rigbench.analysis.energy import samples_per_joule
from rigbench.analysis.trials import is_full_protocol
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
    value: Any  # the knob's value (threads count, precision name, True)
    label: str  # e.g. "threads=1", "bf16", "compile"
    status: str
    error: str | None
    trial_id: int | None
    threads: int | None  # threads the trial ran with, as the framework reported
    samples_per_s: float | None
    samples_per_s_ci: tuple[float, float] | None
    speedup: float | None  # samples/s over the baseline's
    within_noise: bool | None  # the two 95% CIs overlap: no clear difference
    shi2016_column: str | None = None  # threads rows: the matching column of Shi et al.'s Table 7
    energy_per_sample_j: float | None = None  # measured, where the machine can tell

    @property
    def samples_per_j(self) -> float | None:
        """Samples per joule, derived from energy_per_sample_j (never stored)."""
        return samples_per_joule(self.energy_per_sample_j)

    def row(self) -> dict[str, Any]:
        """The JSON form (`rigbench scaling --json`), with samples_per_j derived."""
        out = dict(self.__dict__)
        out["samples_per_s_ci"] = list(self.samples_per_s_ci) if self.samples_per_s_ci else None
        out["samples_per_j"] = self.samples_per_j
        return out


def _group(r: Result) -> tuple:
    """The configuration without the knobs (TrialSpec.config_key): a baseline and its variants."""
    return r.spec.config_key(ignore=KNOBS)


def changed_knobs(r: Result) -> list[str]:
    """The knobs in which `r`'s spec differs from the fp32 eager default."""
    return [k for k in KNOBS if getattr(r.spec, k) != _BASE_VALUES[k]]


def speed(r: Result) -> float:
    """samples/s of a result, 0 when it has none (callers ask it only of results whose
    samples/s they have checked)."""
    return r.metrics.samples_per_s or 0.0


def _label(knob: str, value: Any) -> str:
    if knob == "baseline":
        return "fp32 eager, default threads"
    if knob == "threads":
        return f"threads={value}"
    if knob == "precision":
        return str(value)
    return "channels-last" if knob == "channels_last" else "compile"


def shi2016_column(threads: int) -> str | None:
    """The column of Shi et al. 2016's Table 7 measured with this many threads, if any."""
    desktop = f"desktop_cpu_t{threads}" if threads in (1, 2, 4, 8) else None
    server = f"server_cpu_t{threads}" if threads in (1, 2, 4, 8, 16, 32) else None
    return " / ".join(c for c in (desktop, server) if c) or None


def _overlap(a: tuple[float, float] | None, b: tuple[float, float] | None) -> bool | None:
    if not a or not b:
        return None
    return a[0] <= b[1] and b[0] <= a[1]


def _order(row: ScalingRow) -> tuple:
    rank = ("baseline", *KNOBS).index(row.knob)
    if row.knob == "threads":
        return rank, row.value, 0
    if row.knob == "precision":
        return rank, PRECISIONS.index(row.value), 0
    return rank, 0, 0


def scaling_table(results: Sequence[Result]) -> list[ScalingRow]:
    """Baseline and variant rows for every group that has a baseline trial, in table order
    (groups in order of first appearance). The newest trial wins where a configuration was
    measured more than once."""
    latest: dict[tuple, Result] = {}
    for r in sorted((r for r in results if is_full_protocol(r)), key=lambda r: (r.id or 0, r.created_at)):
        knobs = changed_knobs(r)
        if len(knobs) <= 1:
            knob = knobs[0] if knobs else "baseline"
            latest[(_group(r), knob, getattr(r.spec, knob) if knobs else None)] = r
    rows: list[ScalingRow] = []
    groups = list(dict.fromkeys(key[0] for key in latest))
    for group in groups:
        base = latest.get((group, "baseline", None))
        if base is None:
            continue
        members = [(k, v, r) for (g, k, v), r in latest.items() if g == group]
        group_rows = [_row(k, v, r, base) for k, v, r in members]
        rows += sorted(group_rows, key=_order)
    return rows


def _row(knob: str, value: Any, r: Result, base: Result) -> ScalingRow:
    m, b = r.metrics, base.metrics
    ok = r.status == "ok" and m.samples_per_s and base.status == "ok" and b.samples_per_s
    speedup = speed(r) / speed(base) if ok else None
    return ScalingRow(
        workload=r.spec.workload, device=r.spec.device, batch_size=r.spec.batch_size, knob=knob,
        value=value, label=_label(knob, value), status=r.status, error=r.error, trial_id=r.id,
        threads=r.threads, samples_per_s=m.samples_per_s, samples_per_s_ci=m.samples_per_s_ci,
        speedup=speedup,
        within_noise=_overlap(m.samples_per_s_ci, b.samples_per_s_ci) if ok and knob != "baseline" else None,
        shi2016_column=shi2016_column(value) if knob == "threads" else None,
        energy_per_sample_j=m.energy_per_sample_j,
    )
