"""The largest batch that trains without running out of memory (`rigbench max-batch`).

Search: grow the batch geometrically from `start` (x2, or x4 up to x8 where the memory line
fitted to the probes so far leaves room: next_probe) until a probe ends `oom` or `max_batch`
is reached, then bisect between the largest batch that ran and the smallest that ran out
of memory, until `hi - lo <= max(1, tolerance * lo)`. Each probe is one short trial in its
own process, stored in the database as it finishes, as a trial of kind "probe": it times too
few steps to be a speed figure, so score, compare and recommend never take it for one. Each
carries what the search was asked (spec.MaxBatchSearch: start, max, tolerance), so a reader
replays the rule on the stored probes and tells a search that ended by it from one stopped
with batches left (max_batch_logic.replay).

What a probe's status means here:
- `ok`: the batch fits; `oom`: it does not (the framework's allocator failed under the limit).
- anything else (`crash`, `timeout`, `diverged`, `unsupported`) says nothing about memory:
  the search stops there and reports it, with what it had found so far. A SIGKILL from the
  kernel's OOM killer shows up as `crash`; on the CPU the probes always run under an
  RLIMIT cap so that the allocator raises (`oom`) before the kernel steps in.
- one exception, on the CPU: native code that uses an allocation without checking it crashes
  under the cap instead of raising (TensorFlow 2.21's oneDNN kernels on cnn at batch 512 under
  a 1,200 MiB cap: killed by SIGSEGV in the max-pool gradient, by SIGABRT, or "could not execute
  a primitive" from a fused matmul, in three searches; the line below put it at 1,201-1,237 MiB).
  A `crash` counts as out of memory when the memory model fitted to the probes that ran puts
  its batch over the limit: whatever the crash, that batch cannot fit. The probe stays stored
  as the crash it was, and the outcome names it. Without that evidence the search stops, as
  for any other status.

The limit: on the CPU `memory_limit_bytes` (default: DEFAULT_RAM_FRACTION of the memory
available when the search starts, a container's cgroup limit counted: hw/memory.py; Linux only,
where the cap is enforced: refused on macOS and Windows); on a GPU the device's memory.

The memory model: peak = fixed + per_sample * batch, a least-squares line through the `ok`
probes (CPU: `capped_peak_mib`, the peak of what the RLIMIT_AS cap counts: resident memory
when the cap was set plus the address space mapped since. The resident peak alone fitted
cnn under a 1 GiB cap to batch 1536, which then failed one run in six: address space that is
reserved but never touched fails a trial just the same; GPU:
NVML's per-process `gpu_mem_peak_mib`, CUDA context included, else the allocator's peak).
The line is fitted per workload *and options*: a gpt's per-sample memory grows with its context
(activations with batch x context, attention scores with batch x heads x context^2), so a
search at one context says nothing of another. For the transformers the outcome also carries
the activation memory their shape implies (workloads/transformers.activation_bytes), printed
beside the fitted figure as a check on it; the decision uses the measured line only.
On a GPU no line is fitted where a larger batch peaked lower than a smaller one (by over 1%):
there the framework sized something to the memory free (torch's cuDNN convolutions take as
much workspace as is free: catsdogs on an H200 peaked at 133,794 MiB at batch 1024 and 130,532
at 2048), so a peak measures what was free, not what a batch needs, and the recommendation is
the largest batch that ran, said so (max_batch_logic.falling_peak).
The recommended batch is the largest the line says leaves `margin` of the limit free,
never above the largest batch that ran, rounded down to a multiple of 8 when it is 8 or
more (vector units and tensor cores work in multiples of 8; rounding down only lowers memory).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from rigbench.errors import BELOW_FRAMEWORK, UsageError
from rigbench.experiments.devices import chosen_devices, devices_info
from rigbench.experiments.execute import start_run
from rigbench.experiments.max_batch_logic import (
    DEFAULT_MARGIN,
    DEFAULT_MAX_BATCH,
    DEFAULT_START,
    DEFAULT_TOLERANCE,
    LEAP,
    MIB,
    check_memory_limit,
    counted_crash,
    crash_over_limit,
    fit_memory_model,
    fitted,
    limit_batch,
    memory_metric,
    next_probe,
    nothing_ran,
    recommend,
    replay,
    round_batch,
)
from rigbench.hw.memory import available_memory, memory_cap_missing
from rigbench.runner.session import run_trials
from rigbench.spec import PRECISIONS, PROBE_STEPS, MaxBatchSearch, MeasureOptions, Result, TrialSpec
from rigbench.store import Store
from rigbench.textlimits import error_line
from rigbench.units import format_bytes
from rigbench.workloads import parse_workload_ref, resolved_options
from rigbench.workloads.transformers import activation_bytes

#: The pure logic lives in max_batch_logic and is used from here too, as before the split.
__all__ = ["DEFAULT_MARGIN", "DEFAULT_MAX_BATCH", "DEFAULT_RAM_FRACTION", "DEFAULT_START", "DEFAULT_TOLERANCE", "LEAP",
           "MIB", "VALUE_BYTES", "MaxBatchOutcome", "counted_crash", "crash_over_limit", "find_max_batch",
           "fit_memory_model", "fitted", "limit_batch", "memory_metric", "next_probe", "nothing_ran", "probe_row",
           "recommend", "replay", "round_batch"]
#: Bytes per activation value under each precision: autocast keeps activations in 16 bits.
VALUE_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2}
#: CPU default limit: this fraction of the RAM available when the search starts, so that
#: the probes leave room for everything else running on the machine.
DEFAULT_RAM_FRACTION = 0.5
log = logging.getLogger("rigbench.max_batch")


@dataclass
class MaxBatchOutcome:
    """The probes, what they found, the fitted memory model and the recommendation."""

    workload: str                 # as given, e.g. "cnn" or "resnet:depth=56"
    device: str
    precision: str
    limit_bytes: int | None       # CPU: the RLIMIT cap; GPU: device memory
    probes: list[Result]          # every probe in order; each was stored as it finished
    largest_ok: int | None
    smallest_oom: int | None      # None when the cap (max_batch) was reached first
    fixed_bytes: float | None     # memory model: peak = fixed + per_sample * batch
    per_sample_bytes: float | None
    recommended: int | None       # <= largest_ok, leaving `margin` of limit_bytes free by the model
    margin: float
    run_id: str
    limit_source: str = ""        # where the limit comes from, in words
    memory_metric: str = ""       # the Metrics field the model was fitted to
    unfit: str | None = None      # why no model though two batch sizes ran (max_batch_logic.fitted)
    reason: str = ""              # why `recommended` is what it is
    stopped: Result | None = None  # the probe that was neither ok nor oom, if any
    interrupted: bool = False
    db_url: str = ""
    max_batch: int = 0
    #: transformers: activation bytes per sample the shape implies, and of it attention scores
    expected_per_sample_bytes: float | None = None
    expected_scores_bytes: float | None = None
    #: CPU probes that crashed where the model put them over the limit: (batch, the crash's
    #: headline, the model's bytes), counted as out of memory (module docstring)
    crashes_over_limit: list[tuple[int, str, float]] = field(default_factory=list)
    #: The child's words when the limit is below what the framework takes on import (the search
    #: then stops at its first probe: no batch can fit), else None
    below_framework: str | None = None
    search: MaxBatchSearch | None = None  # what it was asked, as stored with each probe

    @property
    def unfinished(self) -> str | None:
        """Why the search ended before its own stopping rule, in words (replay); None if it did not."""
        return replay(self.probes, self.limit_bytes, self.search)[2]

    def ending(self) -> str | None:
        """How the search ended, as max-batch prints it: incomplete, with the batches left, or
        complete to its tolerance where an out-of-memory bounds it; else None."""
        if (why := self.unfinished) is not None:
            return f"incomplete: {why}"
        if self.search is None or self.largest_ok is None or self.smallest_oom is None:
            return None
        tolerance = self.search.tolerance
        return (f"complete to --tolerance {tolerance:g}: smallest oom - largest ok = {self.smallest_oom - self.largest_ok}, "
                f"within max(1, {tolerance:g} x {self.largest_ok}) = {max(1, tolerance * self.largest_ok):g}")

    @property
    def stopped_by_crash(self) -> bool:
        """The search stopped at a CPU probe that crashed, which a memory model might have
        counted as out of memory had there been one (module docstring)."""
        return self.device == "cpu" and self.stopped is not None and self.stopped.status == "crash"

    def to_dict(self) -> dict:
        """The outcome as plain JSON-able data (`rigbench max-batch --json`)."""
        return {
            "workload": self.workload, "device": self.device, "precision": self.precision,
            "limit_bytes": self.limit_bytes, "limit_source": self.limit_source,
            "probes": [probe_row(r, self.memory_metric) for r in self.probes],
            "largest_ok": self.largest_ok, "smallest_oom": self.smallest_oom,
            "max_batch": self.max_batch, "memory_metric": self.memory_metric,
            "fixed_bytes": self.fixed_bytes, "per_sample_bytes": self.per_sample_bytes, "unfit": self.unfit,
            "expected_per_sample_bytes": self.expected_per_sample_bytes,
            "expected_scores_bytes": self.expected_scores_bytes,
            "recommended": self.recommended, "margin": self.margin, "reason": self.reason,
            "stopped_by": probe_row(self.stopped, self.memory_metric) if self.stopped else None,
            "crashes_counted_as_oom": [{"batch_size": batch, "error": headline, "model_bytes": need}
                                       for batch, headline, need in self.crashes_over_limit],
            "search": self.search.model_dump() if self.search else None, "complete": self.unfinished is None,
            "unfinished": self.unfinished, "interrupted": self.interrupted,
            "run_id": self.run_id if self.probes else None,  # its run is written with the first probe
            "db": self.db_url,
        }


def probe_row(r: Result, metric: str) -> dict:
    """One probe as a short record: batch, status, peak memory, speed, id, error."""
    peak = getattr(r.metrics, metric, None) if metric else None
    return {"id": r.id, "batch_size": r.spec.batch_size, "status": r.status, "peak_mib": peak,
            "samples_per_s": r.metrics.samples_per_s, "error": r.error}


# ---- the search ---------------------------------------------------------------------------

def _limit(device: str, framework: str, memory_limit_bytes: int | None) -> tuple[int | None, str]:
    if device == "cpu":
        if why := memory_cap_missing():
            raise UsageError(f"max-batch on the CPU runs each probe under a memory cap, which cannot work here: {why}; "
                             "search a GPU (-d mps, -d cuda:0), or on Linux")
        available = available_memory()  # a container's cgroup limit, where it is lower
        if memory_limit_bytes:
            if memory_limit_bytes > available:  # the cap then never binds: the kernel's OOM killer does
                log.warning("rigbench: warning: --memory-limit %s is more than the %s of RAM available now: a probe "
                            "that outgrows the RAM is killed by the kernel (a crash, which stops the search; or "
                            "another process is), not stopped by the cap; give at most %s",
                            format_bytes(memory_limit_bytes), format_bytes(available), f"{available // 2**20}MiB")
            return memory_limit_bytes, "--memory-limit"
        source = (f"{DEFAULT_RAM_FRACTION:.0%} of the {format_bytes(available)} of RAM available "
                  f"now; set --memory-limit to change")
        return int(available * DEFAULT_RAM_FRACTION), source
    check_memory_limit(memory_limit_bytes or None, [device])
    for dev in devices_info():
        if dev["id"] == device and dev.get("memory_bytes"):
            return int(dev["memory_bytes"]), "the device's memory"
    return None, "unknown (the device does not report its memory)"


def find_max_batch(workload: str, device: str = "cpu", *, framework: str = "torch",
                   precision: str = "fp32", memory_limit_bytes: int | None = None,
                   start: int = DEFAULT_START, max_batch: int = DEFAULT_MAX_BATCH,
                   tolerance: float = DEFAULT_TOLERANCE, margin: float = DEFAULT_MARGIN, db: str | None = None,
                   on_probe: Callable[[Result], None] | None = None,
                   on_probe_start: Callable[[int, MaxBatchOutcome], None] | None = None,
                   timeout_s: float | None = None, command: str | None = None,
                   on_probe_progress: Callable[[TrialSpec, str], None] | None = None) -> MaxBatchOutcome:
    """Find the largest batch of `workload` that trains on `device` within the memory
    limit (module docstring: search, statuses, model, recommendation). Every probe is
    stored in `db` under one run; `on_probe_progress` hears the phase each probe is in. Ctrl-C
    ends the search with what was found so far (`interrupted`). Raises UsageError for bad input."""
    if precision not in PRECISIONS:
        raise UsageError(f"--precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if start < 1:
        raise UsageError(f"--start must be at least 1, got {start}")
    if max_batch < start:  # a --max below the default --start named --start, which was not given
        raise UsageError(f"--max ({max_batch}) is below --start ({start}): raise --max, or lower --start "
                         "to at most it")
    if not 0 <= tolerance < 1:
        raise UsageError(f"--tolerance must be from 0 up to (not including) 1, got {tolerance}")
    if not 0 <= margin < 1:
        raise UsageError(f"--margin must be from 0 up to (not including) 1, got {margin}")
    ref, options = parse_workload_ref(workload)
    (device,) = chosen_devices(framework, [device], default=None)
    limit, limit_source = _limit(device, framework, memory_limit_bytes)
    measure = MeasureOptions.quick(
        min_steps=PROBE_STEPS, min_seconds=0.0,
        memory_limit_bytes=limit if device == "cpu" else None,
        **({"timeout_s": timeout_s} if timeout_s else {}),
    )
    store = Store(db)
    run_id = start_run(store, command)
    search = MaxBatchSearch(start=start, max_batch=max_batch, tolerance=tolerance, leap=LEAP,  # the CPU's limit: which one
                            memory_limit=None if device != "cpu" else "given" if memory_limit_bytes else "default")
    outcome = MaxBatchOutcome(
        workload=workload, device=device, precision=precision, limit_bytes=limit, probes=[],
        largest_ok=None, smallest_oom=None, fixed_bytes=None, per_sample_bytes=None,
        recommended=None, margin=margin, run_id=run_id, limit_source=limit_source,
        db_url=store.url, max_batch=max_batch, search=search,
    )
    expected = activation_bytes(ref.name, resolved_options(ref, options), VALUE_BYTES[precision])
    if expected is not None:
        outcome.expected_per_sample_bytes, outcome.expected_scores_bytes = expected
    ok: list[int] = []
    oom: list[int] = []
    while (batch := next_probe(ok, oom, start, max_batch, tolerance, limit_batch(outcome.probes, limit),
                               search.leap)) is not None:
        spec = TrialSpec(kind="probe", workload=ref.name, workload_options=options, framework=framework,
                         device=device, batch_size=batch, precision=precision, measure=measure, search=search)
        if on_probe_start:
            on_probe_start(batch, outcome)
        told = (lambda _i, text, probe=spec: on_probe_progress(probe, text)) if on_probe_progress else None
        session = run_trials([spec], store, run_id, on_trial_progress=told)  # stores the probe the moment it ends
        outcome.interrupted = session.interrupted
        if not session.results:  # stopped before the probe ended: not stored
            break
        result = session.results[0]  # stored, though an interrupt may have come as it was
        outcome.probes.append(result)
        if on_probe:
            on_probe(result)
        if result.status == "ok":
            ok.append(batch)
        elif result.status == "oom":
            oom.append(batch)
            if BELOW_FRAMEWORK in (result.error or ""):  # no batch can fit: no more probes
                outcome.below_framework = error_line(result.error or "")
                break
        elif device == "cpu" and (counted := counted_crash(result, outcome.probes, limit)) is not None:
            oom.append(batch)
            outcome.crashes_over_limit.append(counted)
        else:
            outcome.stopped = result
            break
        if outcome.interrupted:
            break
    outcome.largest_ok = max(ok, default=None)
    outcome.smallest_oom = min(oom, default=None)
    outcome.memory_metric, model, outcome.unfit = fitted(device, outcome.probes)
    if model is not None:
        outcome.fixed_bytes, outcome.per_sample_bytes = model
    tried = [(r.spec.batch_size, r.status) for r in outcome.probes]
    outcome.recommended, outcome.reason = recommend(limit, model, margin, outcome.largest_ok, tried, outcome.unfit)
    if outcome.below_framework and outcome.largest_ok is None:
        outcome.reason = f"{outcome.below_framework}: no batch fits; raise --memory-limit"
    return outcome

