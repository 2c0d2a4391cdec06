"""Sweeps: the product of lists of settings, run trial by trial, resumable.

A grid point is identified by its full TrialSpec as canonical JSON (measurement options
included). The database is the source of truth for resuming: `resume=True` skips every
point that already has a stored result with an identical spec, whatever its status, and
runs only the rest. The trial in flight when a sweep dies is never stored half-done (the
session stores finished trials only), so a resumed sweep simply runs it again.
"""

from __future__ import annotations

import itertools
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rigbench.errors import UsageError
from rigbench.experiments.execute import run
from rigbench.experiments.plan import check_rank_devices, check_tf32_devices, check_threads, plan_run
from rigbench.frameworks import check_framework
from rigbench.runner.launchers.warm_start import by_server
from rigbench.spec import Result, TrialSpec
from rigbench.store import Store
from rigbench.store.this_machine import split_by_machine
from rigbench.sweep_spec import SweepSpec
from rigbench.workloads import parse_workload_ref


def load_sweep_file(path: str | Path, overrides: dict[str, Any] | None = None) -> SweepSpec:
    """Read a sweep TOML file (keys: the fields of SweepSpec) and apply `overrides` (from
    flags; a key given there replaces the file's). Errors name the key and the file."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read --config {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"--config {path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} "
                         f"at offset {exc.start}): save it as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"--config {path} is not valid TOML: {exc}") from None
    try:
        from_file = SweepSpec.model_validate(data)
        for workload in from_file.workloads:  # names the registries know, said with the file's name
            parse_workload_ref(workload)
        for framework in from_file.framework if "framework" in data else []:
            check_framework(framework)
    except ValidationError as exc:
        raise UsageError(f"{path}: {_first_error(exc)}") from None
    except UsageError as exc:
        raise UsageError(f"{path}: {exc}") from None
    return sweep_spec({**data, **(overrides or {})})


def sweep_spec(values: dict[str, Any]) -> SweepSpec:
    """A validated SweepSpec from plain values; errors name the key."""
    try:
        return SweepSpec.model_validate(values)
    except ValidationError as exc:
        raise UsageError(_first_error(exc)) from None


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    key = str(first["loc"][0]) if first["loc"] else "?"
    if first["type"] == "extra_forbidden":
        known = ", ".join(SweepSpec.model_fields)
        return f"unknown key {key!r}: the keys are {known}"
    where = "".join(f"[{p}]" for p in first["loc"][1:])
    return f"key {key!r}{where}: {first['msg']} (got {first.get('input')!r})"


#: Seconds a trial takes beyond its warm-up and timing windows (start, build, count, store):
#: 2.6 s a trial warm and 4.5 s cold on the 2-core dev VM (`rigbench run --quick -d cpu`, 8
#: trials of 0.5 s timing: 20.7 s warm, 35.9 s cold, benchmarks/quick_suite.py).
TRIAL_OVERHEAD_S = 3.0
#: Seconds a warm-start server takes to import its framework, paid once per framework a sweep
#: runs (the difference of the two figures above, 4.5 - 2.6 s): a trial that reused a server
#: stored a `trial_s` without it, so an estimate from such trials adds it back once.
SERVER_START_S = 1.9


@dataclass
class SweepEstimate:
    """How long `grid` takes: at least every trial's warm-up and timing windows plus its start
    overhead (a slow step stretches it: the step count is a minimum too); at most every trial
    running to its timeout. `from_history`: the trials whose overhead came from this machine's
    earlier trial of the same configuration instead of TRIAL_OVERHEAD_S."""

    trials: int
    least_s: float
    most_s: float
    from_history: int = 0


def _windows(spec: TrialSpec) -> float:
    return spec.measure.warmup_seconds + spec.measure.min_seconds


def _overhead(before: Result) -> float:
    """What an earlier trial took beyond its warm-up and timed steps, its first step (start-up,
    build, counting, compilation) kept: `--steps 1000` timed for longer, which a quick point of
    the same configuration will not."""
    m = before.metrics
    assert m.trial_s is not None
    if m.warmup_s is None or m.step_time_ms_mean is None or not m.steps_measured:
        return max(0.0, m.trial_s - _windows(before.spec))
    timed = m.steps_measured * m.step_time_ms_mean / 1000
    return max(0.0, m.trial_s - timed - m.warmup_s + (m.first_step_s or 0.0))


def estimate(grid: Sequence[TrialSpec], earlier: dict[tuple, Result] | None = None) -> SweepEstimate:
    """`earlier` (earlier_trials): this machine's newest trial of each configuration; where a
    grid point has one, what that trial took beyond its warm-up and timed steps (_overhead) is
    the point's overhead: a JAX or compiled trial on a GPU spent 18-60 s starting and compiling
    on an H200 (docs/results/gpu-h200.md), where TRIAL_OVERHEAD_S says 3."""
    least, known, frameworks = 0.0, 0, set()
    for spec in grid:
        before = (earlier or {}).get(spec.config_key())
        overhead = TRIAL_OVERHEAD_S
        if before is not None and before.metrics.trial_s is not None:
            overhead, known = _overhead(before), known + 1
            frameworks.add(spec.framework)
        least += _windows(spec) + overhead
    least += SERVER_START_S * len(frameworks)  # this sweep starts its servers again
    return SweepEstimate(len(grid), least, sum(s.measure.timeout_s for s in grid), known)


def earlier_trials(store: Store, grid: Sequence[TrialSpec]) -> dict[tuple, Result]:
    """This machine's newest stored trial with a `trial_s` of each configuration of `grid`
    (TrialSpec.config_key: its timing options aside) that ended ok, for `estimate`: an `oom`,
    a crash or a timeout stopped early and says nothing of how long a trial takes."""
    wanted = {s.config_key() for s in grid}
    found: dict[tuple, Result] = {}
    for workload in dict.fromkeys(s.workload for s in grid):
        for result in split_by_machine(store, store.list(workload=workload))[0]:
            key = result.spec.config_key()
            if key in wanted and result.status == "ok" and result.metrics.trial_s is not None:
                found[key] = result  # listed oldest first: the newest stays
    return found


def spec_key(spec: TrialSpec) -> str:
    """The identity of a grid point: the full spec as canonical JSON."""
    return spec.canonical_json()


def plan_sweep(sweep: SweepSpec) -> list[TrialSpec]:
    """Every grid point, each once: workloads x frameworks x devices x batch sizes (as `plan_run`
    makes them) x precisions x threads x learning rates x compile x channels-last x processes."""
    base = plan_run(
        workloads=sweep.workloads, devices=sweep.devices, batch_sizes=sweep.batch_sizes,
        frameworks=sweep.framework, steps=sweep.steps, seconds=sweep.seconds, quick=sweep.quick,
        memory_limit_bytes=sweep.memory_limit, timeout_s=sweep.timeout, energy=sweep.energy,
    )
    thread_counts: Sequence[int | None] = sweep.threads or [None]  # None: the default
    lr_values: Sequence[float | None] = sweep.lrs or [None]
    axes = itertools.product(sweep.precisions or ["fp32"], thread_counts, lr_values,
                             sweep.compile or ["off"], sweep.channels_last or [False], sweep.processes or [1])
    combos = list(axes)
    grid: dict[str, TrialSpec] = {}
    for spec in base:
        for precision, threads, lr, compile_, channels_last, processes in combos:
            point = TrialSpec.model_validate({
                **spec.model_dump(), "precision": precision, "threads": threads, "lr": lr,
                "compile": compile_, "channels_last": channels_last, "world_size": processes,
            })
            grid.setdefault(spec_key(point), point)  # a value listed twice is one point
    check_rank_devices(list(grid.values()))
    check_tf32_devices(list(grid.values()))
    check_threads(list(grid.values()))
    return list(grid.values())


def stored_results(store: Store, grid: Sequence[TrialSpec]) -> dict[str, Result]:
    """The first stored result of each grid point that has one, by spec_key, measured on this
    machine: on a fleet's shared database another machine's result is not this one's point."""
    found: dict[str, Result] = {}
    wanted = {spec_key(s) for s in grid}
    for workload in dict.fromkeys(s.workload for s in grid):
        for result in split_by_machine(store, store.list(workload=workload))[0]:
            key = spec_key(result.spec)
            if key in wanted and key not in found:
                found[key] = result
    return found


@dataclass
class SweepOutcome:
    """What a sweep did. `skipped` are the stored results that resume reused."""

    run_id: str | None  # None when nothing was left to run, or nothing ran to its end (no run was written)
    db_url: str
    grid: list[TrialSpec]
    skipped: list[Result] = field(default_factory=list)
    results: list[Result] = field(default_factory=list)
    interrupted: bool = False
    stopped: TrialSpec | None = None  # the trial in flight when interrupted: not stored

    def grid_results(self) -> list[Result]:
        """One result per finished grid point, in grid order (stored ones and new ones)."""
        by_key = {spec_key(r.spec): r for r in self.skipped + self.results}
        return [by_key[k] for k in map(spec_key, self.grid) if k in by_key]


def sweep(
    sweep: SweepSpec | Sequence[TrialSpec],
    db: str | None = None,
    resume: bool = False,
    command: str | None = None,
    on_plan: Callable[[list[TrialSpec], list[Result]], None] | None = None,
    on_trial_start: Callable[[int, TrialSpec], None] | None = None,
    on_trial_end: Callable[[int, Result], None] | None = None,
    on_trial_progress: Callable[[int, str], None] | None = None,
) -> SweepOutcome:
    """Run a sweep (a SweepSpec, or an already planned grid); with `resume`, skip the
    points that already have a stored result. `on_plan(pending, skipped)` is called once
    before the first trial; the trial callbacks count within `pending` (`on_trial_progress`:
    the phase a trial is in, as `run` says it)."""
    grid = plan_sweep(sweep) if isinstance(sweep, SweepSpec) else list(sweep)
    store = Store(db)
    stored = stored_results(store, grid) if resume else {}
    # Run in warm-start server groups: a grid's order means nothing, a server's start costs
    # 1.9 s (SERVER_START_S); results are shown in grid order (SweepOutcome.grid_results).
    pending = by_server([s for s in grid if spec_key(s) not in stored])
    skipped = [stored[k] for k in map(spec_key, grid) if k in stored]
    if on_plan:
        on_plan(pending, skipped)
    outcome = SweepOutcome(run_id=None, db_url=store.url, grid=grid, skipped=skipped)
    if pending:
        done = run(pending, db=db, command=command, on_trial_start=on_trial_start,
                   on_trial_end=on_trial_end, on_trial_progress=on_trial_progress)
        # a run is written with its first result: interrupted before one, there is no run to name
        outcome.run_id = done.run_id if done.results else None
        outcome.results, outcome.interrupted = done.results, done.interrupted
        outcome.stopped = done.stopped
    return outcome
