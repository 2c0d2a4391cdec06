"""`rigbench recommend`: find what the recommendation still lacks, measure it, decide.

The decisions themselves are pure (analysis/recommend.py). This module reads the stored
results of the workload on this machine (or, with --no-run --run ID, on that run's machine:
experiments/recommend_scope.py), works out which measurements are missing, runs them (each
stored the moment it finishes, like any trial), and hands everything over.

What it measures when missing, chosen to stay cheap on a small CPU:
  phase 1, per device  a max-batch search from the grid's largest batch (stopping at 2x it on
                       the CPU, 16x on a GPU: the question is whether the grid fits, not the
                       absolute maximum), then the batch grid (3 sizes with --quick, 5 without)
                       in fp32, eager, the framework's default threads;
  phase 2, on the chosen device at the chosen batch
                       each thread count 1, 2, 4, ... up to the cores (CPU), one precision
                       check (bf16 on a CPU; tf32, bf16, fp16 on CUDA; bf16, fp16 elsewhere),
                       torch.compile's modes where the step is overhead-bound (analysis/
                       step_overhead.py) and no compiled trial is stored,
                       one lr-find and one 1-epoch `train --input loader` when a real data set
                       the workload accepts is available offline (digits ships with scikit-learn).
A measurement counts as present when a stored full-protocol speed trial (analysis/trials.py,
--quick included) of this machine has the same workload, options, framework and
configuration, and was not timed on a busy machine (analysis/contention.py: such a trial is
measured again, unless --no-run); a memory limit, when a stored max-batch search (its trials
of kind "probe", old ones recognised by spec.TrialSpec) made under the recommendation's limit
(the default or --memory-limit, experiments/search_limits.py) has.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from rigbench.analysis import recommend as rules
from rigbench.analysis.contention import busy_note, is_busy
from rigbench.analysis.recommend_knobs import rows_at
from rigbench.analysis.recommend_model import Line, MemoryLimit
from rigbench.analysis.scaling import changed_knobs
from rigbench.analysis.step_overhead import memory_bandwidths
from rigbench.errors import UsageError
from rigbench.experiments import max_batch
from rigbench.experiments.devices import normalise_device
from rigbench.experiments.max_batch_logic import check_memory_limit
from rigbench.experiments.recommend_data import (
    check_data_batches,
)
from rigbench.experiments.recommend_scope import (
    Scope,
    command,
    command_target,
    limit_words,
    recommend_devices,
    stored_scope,
)
from rigbench.experiments.recommend_trials import (
    DATA_TRIAL_S,
    RecommendOutcome,
    Session,
    compile_trials,
    data_trials,
)
from rigbench.experiments.scaling import default_thread_counts
from rigbench.experiments.search_limits import (
    limit_of,
    limit_searches,
    named_limit,
    other_limits_text,
    size_flag,
    stored_limit,
)
from rigbench.experiments.sweep import TRIAL_OVERHEAD_S
from rigbench.frameworks import check_framework_name
from rigbench.hw.cpu import cpu_identity, native_bf16
from rigbench.hw.memory import memory_cap_missing
from rigbench.spec import MeasureOptions, Result, TrialSpec
from rigbench.store import Store
from rigbench.store.calibrations import device_calibrations
from rigbench.store.engine import default_db_url, resolve_db_url, sqlite_file
from rigbench.workloads import Workload, epoch_samples, parse_workload_ref


def batch_grid(workload: Workload, quick: bool) -> list[int]:
    """Batch sizes around the workload's reference batch (its small one with --quick):
    b/4, b, 4b with --quick; b/4, b/2, b, 2b, 4b without."""
    b = workload.quick_batch if quick else workload.default_batch
    factors = (0.25, 1, 4) if quick else (0.25, 0.5, 1, 2, 4)
    return sorted({max(1, int(b * f)) for f in factors})


def precision_checks(device: str, workload: str = "WORKLOAD", scope: Scope | None = None) -> tuple[list[str], str | None]:
    """The precisions tried in a recommendation, and why one is not: on a CPU bf16 only where it
    is native (emulated bf16 took 30 s a step for mlp on an AVX2-only EPYC, most of an
    8-minute recommendation; CPU fp16 autocast has no fast kernels on most CPUs); all reduced
    ones on accelerators. The CPU is this machine's, or that of `scope` where it is another's."""
    if device != "cpu":
        return (["tf32"] if device.startswith("cuda") else []) + ["bf16", "fp16"], None
    there = scope is not None and not scope.here
    native = scope.native_bf16() if scope is not None and there else native_bf16(cpu_identity()["flags"])
    if native is False:
        run = command("run", workload, scope.framework if scope else "torch", "-d", "cpu", "--precision", "bf16",
                      db=scope.hint_db if scope else None)
        who = "that machine's" if there else "this"
        return [], (f"bf16 on cpu: {who} CPU has no native bfloat16 "
                    f"(no avx512_bf16, amx or Arm bf16 flag), so bf16 is emulated and far slower than fp32; measure "
                    f"it anyway with `{run}`")
    return ["bf16"], None


def max_batch_reach(device: str) -> int:
    """How far past the grid's largest batch the recommendation's max-batch search goes: the
    question is whether the grid fits, not the absolute maximum."""
    return 2 if device == "cpu" else 16


def recommend(
    workload: str,
    devices: Sequence[str] = (),
    dataset_size: int | None = None,
    run_missing: bool = True,
    quick: bool = False,
    batch_sizes: Sequence[int] = (),
    db: str | None = None,
    framework: str = "torch",
    on_note: Callable[[str], None] = lambda text: None,
    on_trial_end: Callable[[Result], None] = lambda result: None,
    run_ids: Sequence[str] = (),
    memory_limit_bytes: int | None = None,
    on_trial_progress: Callable[[TrialSpec, str], None] = lambda spec, text: None,
) -> RecommendOutcome:
    """Recommend device, batch size, learning rate, precision, threads and loader workers for
    `workload`, from stored results of this machine plus (unless `run_missing` is false) the
    measurements still missing; with `run_ids` (and `run_missing` false), from the stored results
    of the machine those runs were measured on (experiments/recommend_scope.py). `batch_sizes`
    replaces the default grid (`batch_grid`). `memory_limit_bytes`: the CPU's limit for max-batch
    (default: max_batch's), which a stored search must have been made under (search_limits).
    The energy line (rules.decide_energy) reads the energy these same trials measured: nothing is
    run for it, and where no trial could read energy it says why. Progress: `on_note` hears what
    is about to run and why, `on_trial_progress` the phase each trial is in, `on_trial_end` each result."""
    ref, options = parse_workload_ref(workload)
    if dataset_size is not None and dataset_size < 1:
        raise UsageError("--dataset-size must be at least 1")
    if run_ids and run_missing:
        raise UsageError("--run recommends from the stored results of that run's machine and measures nothing: "
                         "add --no-run")
    asked = [normalise_device(d) for d in devices]
    check_memory_limit(memory_limit_bytes, asked)
    check_framework_name(framework)  # a misspelt name, before the database is opened (or made)
    grid = sorted(set(batch_sizes)) or batch_grid(ref, quick)
    made_now = run_missing and _not_made_yet(db)
    if made_now:  # nothing stored (any device needs the data): a batch the data set cannot fill is refused first
        check_data_batches(ref, options, asked or ["cpu"], grid, [])
    store = Store(db, create=run_missing)  # --no-run only reads: a mistyped --db is an error, not a new file
    scope = stored_scope(store, workload, framework, run_ids, db)
    stored = scope.results
    again: list[Result] = []
    if run_missing:  # a speed timed on a busy machine is not this machine's: measured again
        again = [r for r in stored if r.spec.kind == "speed" and is_busy(r.metrics)]
        stored = [r for r in stored if r not in again]
        if again:
            on_note(f"leaving out {len(again)} stored trial(s) timed on a busy machine "
                    f"({', '.join(f'#{r.id}' for r in again[:10])}{' ...' if len(again) > 10 else ''}); "
                    "those the recommendation needs are measured again")
    chosen = recommend_devices(scope, asked, run_missing)
    check_memory_limit(memory_limit_bytes, chosen)
    outcome = RecommendOutcome(workload, chosen, [], other_machines=scope.left_out, db_url=store.url,
                               runs=scope.runs, machine=scope.machine, elsewhere=scope.elsewhere)
    run = Session(store, run_missing, outcome, on_note, on_trial_end, on_trial_progress)
    measure = MeasureOptions.quick() if quick else MeasureOptions()
    if run_missing and not made_now:  # the lr-find and loader epoch at a batch of the grid: one their data set fills
        check_data_batches(ref, options, chosen, grid, stored)

    def spec(device: str, batch: int, **changes) -> TrialSpec:
        return TrialSpec(workload=ref.name, workload_options=options, framework=framework, device=device,
                         batch_size=batch, measure=measure, **changes)

    if run_missing:
        on_note(_expected(chosen, grid, stored, measure, framework, ref.lr_find))

    # Phase 1: per device, the memory limit and the batch grid within it.
    limits: dict[str, MemoryLimit] = {}
    commands = store.commands(list(dict.fromkeys(r.run_id for r in stored if r.spec.kind == "probe")))
    for device in chosen:
        limit = stored_limit(stored, device, memory_limit_bytes, commands)
        others = limit_searches(stored, device, memory_limit_bytes, commands)[1]
        why = "no stored max-batch search" + (f" under {limit_words(memory_limit_bytes)} ({other_limits_text(others)})"
                                              if others else "")
        uncapped = memory_cap_missing() if device == "cpu" else None  # the CPU's probes run capped: Linux only
        if limit is None and run_missing and not outcome.interrupted and not uncapped:
            top = max(grid) * max_batch_reach(device)
            outcome.ran.append(f"max-batch on {device} from b{max(grid)} up to b{top}: {why}")
            on_note(f"running max-batch on {device} from b{max(grid)} up to b{top}: {why}")
            found = max_batch.find_max_batch(workload, device, framework=framework, start=max(grid),
                                             max_batch=top, db=db, on_probe=on_trial_end,
                                             on_probe_progress=on_trial_progress,
                                             memory_limit_bytes=memory_limit_bytes if device == "cpu" else None,
                                             command=shlex.join(sys.argv))
            outcome.interrupted = found.interrupted
            run.new += found.probes
            limit = replace(limit_of(found), others=tuple(named_limit(o) for o in others))
        elif limit is None:
            outcome.missing.append(f"max-batch on cpu (not searched: {uncapped})" if uncapped else
                                   f"max-batch on {device} under {limit_words(memory_limit_bytes)} "
                                   f"({other_limits_text(others)})" if others else
                                   f"max-batch on {device} (no stored max-batch search)")
        if limit is not None:
            limits[device] = limit
        have = rules.baseline_by_batch(stored + run.new, device)
        cap = limits[device].cap if device in limits else None
        # the batches of busy baseline trials left out above are measured again, as promised
        busy = {r.spec.batch_size for r in again if r.spec.device == device and not changed_knobs(r)}
        wanted = sorted(set(grid) | busy)
        over = [b for b in wanted if cap is not None and b > cap]
        if over:
            outcome.not_tried.append(f"batch sizes {', '.join(map(str, over))} on {device}: over max-batch's "
                                     f"cap of {cap} (first oom {limits[device].smallest_oom})")
        todo = [b for b in wanted if b not in have and b not in over]
        run.measure(f"batch sizes {', '.join(map(str, todo))} on {device}",
                    "fp32, default threads; not measured yet", [spec(device, b) for b in todo])

    # Phase 2: on the chosen device at the chosen batch.
    results = stored + run.new
    # the devices' memory bandwidths (the step-overhead line's parameter floor): phase 2 adds
    # trials on a device phase 1 already measured, so they hold for the final recommendation too
    bandwidths = memory_bandwidths(results, device_calibrations(store, results))
    device = rules.decide_device(results, chosen, limits).value
    batch = rules.decide_batch(results, device, limits.get(device)).value if device else None
    if device is not None and batch is not None:
        base, variants = rows_at(results, device, batch)
        if device == "cpu":
            counts = {row.threads for row in ([base] if base else []) + variants
                      if row.knob in ("baseline", "threads") and row.status == "ok" and row.threads}
            todo_threads = [t for t in default_thread_counts() if t not in counts]
            run.measure(f"threads {', '.join(map(str, todo_threads))} on {device} at b{batch}",
                        "thread counts not measured at the chosen batch",
                        [spec(device, batch, threads=t) for t in todo_threads])
        have_p = {row.value for row in variants if row.knob == "precision"}  # failures too: an answer
        checks, not_tried = precision_checks(device, workload, scope)
        if not_tried:
            outcome.not_tried.append(not_tried)
        todo_p = [p for p in checks if p not in have_p]
        run.measure(f"precision {', '.join(todo_p)} on {device} at b{batch}", "not measured at the chosen batch",
                    [spec(device, batch, precision=p) for p in todo_p])
        compile_trials(run, results, ref, framework, device, batch, bandwidths.get(device), spec)
        data_trials(run, results, ref, options, framework, device, batch, quick, scope.here)
    else:
        outcome.missing.append("threads, precision, lr-find and the input pipeline: they are measured "
                               "at the chosen device and batch size, which need the batch sizes first")

    results = stored + run.new
    outcome.results_used = len(results)
    # a max-batch probe's speed is never read (its memory peak is), so a busy one is not named
    outcome.busy = busy_note([r for r in results if r.spec.kind != "probe"], then=(
        "recommend measures its busy speed trials again when it next runs (not with --no-run; lr-find and "
        "input-pipeline trials are used as they are): run it when the machine is quiet." if scope.here else
        "Measure them again on that machine when it is quiet."))
    outcome.lines = rules.recommend(results, chosen, limits, ref.optimizer,
                                    dataset_size or epoch_samples(ref, options), ref.lr_find, ref.default_lr,
                                    bandwidths, workload=command_target(workload, framework, scope.hint_db),
                                    device_hint=scope.device_hint(run_missing, chosen), others=scope.others)
    if outcome.missing and not run_missing:
        flags = [*(["-d", ",".join(asked)] if asked else []), *(["--quick"] if quick else []),
                 *(["-b", ",".join(map(str, grid))] if batch_sizes else []),
                 *(["--memory-limit", size_flag(memory_limit_bytes)] if memory_limit_bytes else [])]
        outcome.measure_hint = scope.measure_hint(flags)
    return outcome


def _not_made_yet(db: str | None) -> bool:
    """Whether `db` is an SQLite file that does not exist yet (Store would make it)."""
    path = sqlite_file(resolve_db_url(db) if db else default_db_url())
    return path is not None and not path.exists()


def _expected(devices: Sequence[str], grid: Sequence[int], stored: Sequence[Result], measure: MeasureOptions,
              framework: str = "torch", lr_find: bool = True) -> str:
    """What a recommendation may still run, said before it starts: at most so many trials (the
    stored ones are skipped as it goes) and at least about so long. On the 2-core dev VM
    `recommend mlp -d cpu` ran 11 trials in 119 s from an empty database."""
    if any(rules.timed(r) for r in stored):
        return ("recommend: measuring only what the stored results lack, each step announced as it starts "
                "(nothing, where they lack nothing)")
    trials = 0
    for device in devices:
        probes = max_batch_reach(device).bit_length()  # doubling from the grid's largest batch: 2x in 2, 16x in 5
        threads = len(default_thread_counts()) if device == "cpu" else 0
        trials += probes + len(grid) + threads + len(precision_checks(device)[0])
    speed_s = trials * (measure.warmup_seconds + measure.min_seconds + TRIAL_OVERHEAD_S)
    compiled = " (and torch.compile where the step proves overhead-bound)" if framework == "torch" else ""  # compile_trials
    data = "an lr-find and a loader epoch" if lr_find else "a loader epoch"  # a GAN takes no lr-find (needs_lr_find)
    return (f"recommend: up to {trials} speed trials and probes plus {data} where a data set is here{compiled}; "
            f"at least about {round((speed_s + (1 + lr_find) * DATA_TRIAL_S) / 60, 1)} min")


def stored_recommendation(results: Sequence[Result], workload: str, framework: str = "torch",
                          commands: Mapping[str, str] | None = None) -> list[Line]:
    """The decisions `recommend --no-run` makes from `results` alone, for the report: nothing is
    measured and no machine is checked (the caller passes one machine's results); the devices
    are those with timed trials, each with its stored max-batch limit under the default memory
    limit (`commands`: run id -> command, search_limits.stored_limit)."""
    ref, options = parse_workload_ref(workload)
    every = [r for r in results if r.spec.workload == ref.name and r.spec.workload_options == options]
    mine = [r for r in every if r.spec.framework == framework]
    devices = list(dict.fromkeys(r.spec.device for r in mine if rules.timed(r)))
    limits = {d: limit for d in devices if (limit := stored_limit(mine, d, commands=commands)) is not None}
    # the spec sheets' bandwidths: no store here
    return rules.recommend(mine, devices, limits, ref.optimizer, epoch_samples(ref, options), ref.lr_find, ref.default_lr,
                           memory_bandwidths(mine, {}), workload=command_target(workload, framework),
                           others=[r for r in every if r.spec.framework != framework])
