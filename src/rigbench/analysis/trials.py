"""Which stored trials are speed figures: the one rule that score, compare, recommend and
scaling use.

A full-protocol speed trial is a trial of kind "speed": the timing protocol ran to its stop
rule (warm-up, then at least `min_steps` timed steps and `min_seconds` of timing). `--quick`
trials count: they run the same protocol with shorter windows (at least 3 steps and 0.5 s),
and their wider confidence intervals say how much less they know. Max-batch probes (kind
"probe", 2 timed steps and no minimum time, often under a memory cap) never count; nor do
training runs and learning-rate range tests.
"""

from __future__ import annotations

from rigbench.spec import MeasureOptions, Result


def is_full_protocol(r: Result) -> bool:
    """A speed trial of the timing protocol, --quick included; not a probe, training run or
    range test (module docstring)."""
    return r.spec.kind == "speed"


def is_quick_protocol(r: Result) -> bool:
    """A speed trial timed with a shorter window than the default protocol (`--quick`, or
    fewer steps or seconds asked for): its figure is real but knows less."""
    default, measure = MeasureOptions(), r.spec.measure
    return r.spec.kind == "speed" and (measure.min_steps < default.min_steps
                                       or measure.min_seconds < default.min_seconds)


def workload_label(r: Result) -> str:
    """NAME or NAME:key=value,... (as `rigbench run` takes it and the report names it)."""
    opts = ",".join(f"{k}={v}" for k, v in sorted(r.spec.workload_options.items()))
    return f"{r.spec.workload}:{opts}" if opts else r.spec.workload


def network_label(r: Result) -> str:
    """`workload_label`, with "(revision N)" when the trial measured another revision of the
    network than this rigbench's (an older network under the same name: never mixed with it)."""
    from rigbench.workloads import WORKLOADS

    workload = WORKLOADS.get(r.spec.workload)
    current = workload.revision if workload is not None else r.spec.workload_revision
    label = workload_label(r)
    return label if r.spec.workload_revision == current else f"{label} (revision {r.spec.workload_revision})"
