"""Stored results -> a recommendation: one line per decision, with the numbers behind it.
Pure functions, no I/O (`rigbench recommend`; the runner decides what to measure first).

The rules (docs/STRATEGY.md, "The recommendation"):
- device: the one with the highest fp32 samples/s at its best batch (fp32, eager, the
  framework's default threads: the same configuration on every device).
- batch size: the throughput knee, the smallest measured batch whose samples/s reach
  KNEE_FRACTION (90%) of the best measured batch on that device, among the batches that fit
  the memory limit max-batch found. Going from the knee to the best batch would buy at most
  ~10% more throughput, for more memory and usually fewer updates per epoch. With stored
  `train` results that show lower held-out accuracy at a larger batch, the line says so.
- learning rate: the suggestion of the newest lr-find that gives one (by today's rule on its
  stored curve), at its batch, scaled to the recommended batch by the linear-scaling rule
  (Goyal et al. 2017).
- precision, threads (CPU): analysis/recommend_knobs.py.
- compile, where a compiled trial is stored: analysis/recommend_compile.py.
- framework, where the same network's trials in other frameworks are stored on this machine:
  analysis/recommend_framework.py.
- step overhead, with fp32 eager speeds at three batches or more: the part of the step that does
  not grow with the batch, less the parameters' memory traffic (analysis/step_overhead.py).
- input pipeline: from `train --input loader` runs, the shares of training time waiting for
  batches and copying them to the device; the largest of input, copy and compute bounds the
  step. Loader workers: the count of the fastest such run.
- energy: among the fp32 and reduced-precision speed trials on the device within the memory
  limit (default threads, eager), the one with the least measured energy per sample, beside the
  fastest of them with the time it costs; when none has a measured energy, why (their notes).
- epoch time: data set size / samples/s of the recommended configuration at the recommended batch
  (its precision and threads; of a combination never measured, the faster single-knob trial).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rigbench.analysis.energy import energy_notes, format_joules, has_energy
from rigbench.analysis.lr_find import RULE as LR_RULE
from rigbench.analysis.lr_find import scale_lr, suggest_lr
from rigbench.analysis.process_scaling import decide_processes
from rigbench.analysis.recommend_compile import decide_compile
from rigbench.analysis.recommend_framework import decide_framework
from rigbench.analysis.recommend_knobs import decide_precision, decide_threads, recommended_row
from rigbench.analysis.recommend_model import KNEE_FRACTION, Line, MemoryLimit, fitting, knee, sps_text
from rigbench.analysis.recommend_pipeline import decide_pipeline
from rigbench.analysis.scaling import changed_knobs, pooled_trials
from rigbench.analysis.step_overhead import decide_overhead, parameter_bytes
from rigbench.analysis.trials import (
    RunSpeed,
    is_full_protocol,
    newest_run_speeds,
    run_order,
    speed,
    trials_text,
    workload_label,
)
from rigbench.spec import Result

#: A throughput needs at least this many timed steps (as --quick times at least; max-batch
#: probes, which time 2, are a kind of their own and never reach this check).
MIN_TIMED_STEPS = 3
#: Held-out accuracy lower by more than this (a fraction) at a larger batch earns a caveat.
ACCURACY_DROP = 0.01


# --------------------------------------------------------------------------- selections


def _newest_first(results: Iterable[Result]) -> list[Result]:
    return sorted(results, key=lambda r: (r.id or 0, r.created_at), reverse=True)


def timed(r: Result) -> bool:
    """A successful speed trial with a throughput worth comparing."""
    return (is_full_protocol(r) and r.status == "ok" and r.metrics.samples_per_s is not None
            and r.metrics.steps_measured >= MIN_TIMED_STEPS)


def baseline_by_batch(results: Sequence[Result], device: str) -> dict[int, RunSpeed]:
    """Per batch size on `device`, the fp32 eager default-threads configuration's timed trials as
    the scaling table counts them (scaling.pooled_trials: the newest run's, with those of a thread
    count equal to the default's), so that the device and batch lines give the figure the
    precision and threads lines do; of two configurations at one batch (another lr), the one
    measured last."""
    mine = [r for r in results if timed(r) and r.spec.device == device]
    found: dict[int, RunSpeed] = {}
    for (_, knob, _), trials in pooled_trials(mine).items():
        side = RunSpeed(tuple(trials))
        b = side.newest.spec.batch_size
        if knob == "baseline" and (b not in found or run_order(side.newest) > run_order(found[b].newest)):
            found[b] = side
    return dict(sorted(found.items()))


# --------------------------------------------------------------------------- decisions


def _framework_line(results: Sequence[Result], others: Sequence[Result], device: str, batch: int) -> Line | None:
    """decide_framework over each framework's baseline speeds by batch (one-process trials)."""
    if not results or not others:
        return None
    theirs: dict[str, list[Result]] = {}
    for r in others:
        if not r.spec.is_data_parallel:
            theirs.setdefault(r.spec.framework, []).append(r)
    return decide_framework(results[0].spec.framework, baseline_by_batch(results, device),
                            {name: baseline_by_batch(rs, device) for name, rs in theirs.items()}, batch, device)


def decide_device(results: Sequence[Result], devices: Sequence[str],
                  limits: Mapping[str, MemoryLimit], how: str | None = None) -> Line:
    """The device with the highest fp32 samples/s at its best batch that fits; where none has one,
    `how` measures one (the caller knows whose results these are: experiments/recommend_scope)."""
    best: dict[str, tuple[int, float]] = {}
    for device in devices:
        speeds, _ = fitting(baseline_by_batch(results, device), limits.get(device))
        if speeds:
            b = max(speeds, key=lambda k: speeds[k].samples_per_s)
            best[device] = (b, speeds[b].samples_per_s)
    numbers = {d: {"best_batch": b, "samples_per_s": s} for d, (b, s) in best.items()}
    unmeasured = [d for d in devices if d not in best]
    if not best:
        return Line("device", None, f"device: not measured ({', '.join(devices) or 'no device'})"
                    + (f": {how}" if how else ""), numbers)
    chosen = max(best, key=lambda d: best[d][1])
    others = "; ".join(f"{d} {sps_text(s)} at b{b}" for d, (b, s) in best.items() if d != chosen)
    text = (f"device: {chosen}, fastest in fp32: {sps_text(best[chosen][1])} at its best batch "
            f"{best[chosen][0]}" + (f" (vs {others})" if others else " (the only device measured)"))
    if unmeasured:
        text += f"; not measured: {', '.join(unmeasured)}"
    return Line("device", chosen, text, numbers)


def decide_batch(results: Sequence[Result], device: str, limit: MemoryLimit | None) -> Line:
    """The throughput knee within the memory limit, with the accuracy caveat from train runs."""
    speeds, over = fitting(baseline_by_batch(results, device), limit)
    numbers: dict[str, Any] = {
        "knee_fraction": KNEE_FRACTION,
        "samples_per_s": {b: side.samples_per_s for b, side in speeds.items()},
        "trials": {b: side.ids for b, side in speeds.items()},
        "left_out_over_memory_limit": over,
        "max_batch": None if limit is None else limit.row(),
    }
    if not speeds:
        return Line("batch_size", None, f"batch size: not measured on {device} within the memory limit", numbers)
    sps = {b: side.samples_per_s for b, side in speeds.items()}
    chosen, best = knee(sps)
    numbers.update(best_batch=best, chosen_samples_per_s=sps[chosen], best_samples_per_s=sps[best])
    if chosen == best:
        why = f"the fastest measured ({sps_text(sps[best])})"
    else:
        why = (f"the smallest reaching {KNEE_FRACTION:.0%} of the best: {sps_text(sps[chosen])} = "
               f"{sps[chosen] / sps[best]:.0%} of b{best}'s {sps_text(sps[best])}")
    text = f"batch size: {chosen}, {why}; measured " + ", ".join(f"b{b} {s:,.0f}" for b, s in sps.items())
    if limit is None:
        text += "; memory limit not measured (rigbench max-batch)"
    else:
        text += f"; {limit.text()}" + (f"; left out over the limit: {', '.join(map(str, over))}" if over else "")
    if best == max(sps) and (limit is None or limit.cap is None or limit.cap > best):
        text += ("; the fastest is the largest batch measured, so larger ones"
                 + (f" (up to {limit.cap})" if limit is not None and limit.cap else "")
                 + " may be faster still: measure them with --batch-size")
    caveat = accuracy_caveat(results, chosen)
    if caveat:
        numbers["accuracy_caveat"] = caveat
        text += (f"; caveat: stored train runs ({caveat['dataset']}, {caveat['epochs']} epochs) reached "
                 f"{caveat['large_accuracy']:.1%} at b{caveat['large_batch']} but {caveat['small_accuracy']:.1%} "
                 f"at b{caveat['small_batch']}: larger batches may need more epochs or a retuned lr")
    return Line("batch_size", chosen, text, numbers)


def accuracy_caveat(results: Sequence[Result], batch: int) -> dict[str, Any] | None:
    """The largest accuracy drop from a smaller to a larger batch (the larger one at least
    `batch`) among stored train runs on the same data set and epochs, if above ACCURACY_DROP."""
    groups: dict[tuple, dict[int, float]] = {}
    for r in results:
        m = r.metrics
        if r.spec.kind != "train" or m.final_accuracy is None:
            continue
        acc = groups.setdefault((m.dataset, m.epochs), {})
        acc[r.spec.batch_size] = max(acc.get(r.spec.batch_size, 0.0), m.final_accuracy)
    worst = None
    for (dataset, epochs), acc in groups.items():
        for small in acc:
            for large in acc:
                drop = acc[small] - acc[large]
                if small < large and large >= batch and drop > ACCURACY_DROP and (worst is None or drop > worst["drop"]):
                    worst = {"dataset": dataset, "epochs": epochs, "small_batch": small, "large_batch": large,
                             "small_accuracy": acc[small], "large_accuracy": acc[large], "drop": drop}
    return worst


def lr_suggestion(r: Result) -> float | None:
    """An ok lr-find trial's suggestion by today's rule (analysis/lr_find.suggest_lr) on its stored
    curve: a trial stored before the rule asked for a clear fall keeps a figure it would not get
    now (3.7e-07 from a flat curve). The stored figure where no curve is stored."""
    if r.spec.kind != "lr_find" or r.status != "ok":
        return None
    if r.lr_curve and r.spec.lr_find is not None:
        return suggest_lr(r.lr_curve, r.spec.lr_find.steps, r.spec.lr_find.diverge_factor).lr
    return r.metrics.suggested_lr


def lr_find_result(results: Sequence[Result], batch: int | None = None) -> Result | None:
    """The newest lr-find trial with a suggestion (lr_suggestion), one at `batch` preferred; a newer
    one that gave none (a flat curve) does not hide it."""
    found = [r for r in _newest_first(results) if lr_suggestion(r)]
    same = [r for r in found if r.spec.batch_size == batch]
    return (same or found or [None])[0]  # type: ignore[list-item]  # None when nothing found


def decide_lr(results: Sequence[Result], batch: int | None, optimizer: str, lr_find: bool = True,
              default_lr: float | None = None, workload: str = "WORKLOAD") -> Line:
    """lr-find's suggestion scaled to `batch` by the linear-scaling rule. `lr_find`: False for a
    workload the range test does not fit (workloads.Workload.lr_find), which gets its default
    rate (`default_lr`) named instead of a command that would end `unsupported`."""
    found = lr_find_result(results, batch)
    if found is None and not lr_find:
        rate = "" if default_lr is None else f" {default_lr:g} ({optimizer})"
        return Line("learning_rate", default_lr, f"learning rate: the workload's default{rate}; lr-find does not "
                    f"apply to this workload (workloads: lr-find applicability)", {"default_lr": default_lr})
    if found is None or batch is None:
        tried = [r.id for r in _newest_first(results) if r.spec.kind == "lr_find" and r.status == "ok"]
        why = (f"stored lr-find trial{'s' if len(tried) > 1 else ''} {', '.join(map(str, tried))} gave no "
               "suggestion (`rigbench lr-find` says why and what range to try)" if tried else "not measured")
        return Line("learning_rate", None, f"learning rate: {why}: run `rigbench lr-find {workload} "
                    "--dataset DATASET` (a real data set is needed)", {"without_suggestion": tried})
    lr, at = lr_suggestion(found) or 0.0, found.spec.batch_size  # lr_find_result: set
    dataset = found.spec.lr_find.dataset if found.spec.lr_find else None
    scaled = scale_lr(lr, at, batch)
    # newer range tests without a suggestion (a flat curve): named, so the choice can be seen
    none = [r.id for r in _newest_first(results) if r.spec.kind == "lr_find" and r.status == "ok"
            and run_order(r) > run_order(found) and not lr_suggestion(r)]
    numbers = {"suggested_lr": lr, "lr_find_batch": at, "batch_size": batch, "scaled_lr": scaled,
               "lr_find_trial": found.id, "dataset": dataset, "rule": LR_RULE, "newer_without_suggestion": none}
    text = (f"learning rate: {scaled:.3g}, from lr-find's {lr:.3g} at batch {at} (trial {found.id}, "
            f"{dataset}; {LR_RULE}"
            + (f"; newer lr-find trial{'s' if len(none) > 1 else ''} {', '.join(map(str, none))} gave no "
               "suggestion" if none else "") + ")")
    if at != batch:
        text += (f", scaled x{batch / at:g} to batch {batch} by the linear-scaling rule "
                 f"(Goyal et al. 2017: lr proportional to batch size)")
        if optimizer != "sgd":
            text += f"; that rule was established for SGD, for {optimizer} it is only a starting point"
    else:
        text += ", measured at this batch (no scaling needed)"
    return Line("learning_rate", scaled, text, numbers)


def decide_energy(results: Sequence[Result], device: str, limit: MemoryLimit | None) -> Line:
    """The configuration (batch, precision) with the least measured J/sample on `device`, among
    timed fp32 and precision-only variants within the memory limit, and its cost in time against
    the fastest of them; when none has a measured energy, one line saying why."""
    cap = limit.cap if limit is not None else None
    considered = [r for r in results if timed(r) and r.spec.device == device
                  and changed_knobs(r) in ([], ["precision"]) and (cap is None or r.spec.batch_size <= cap)]
    measured = [r for r in considered if has_energy(r)]
    if not measured:
        why = "; ".join(energy_notes(considered)) or "no energy figure is stored with these trials"
        return Line("energy", None, f"energy: not measured here ({why})",
                    {"trials": len(considered), "notes": energy_notes(considered)})

    def name(r: Result) -> str:
        return f"{r.spec.precision} b{r.spec.batch_size}"

    def j(r: Result) -> float:
        return r.metrics.energy_per_sample_j or 0.0  # has_energy: set

    best = min(measured, key=lambda r: (j(r), -speed(r)))
    fastest = max(considered, key=speed)
    slower = 1.0 - speed(best) / speed(fastest)
    numbers = {"batch_size": best.spec.batch_size, "precision": best.spec.precision, "trial": best.id,
               "energy_per_sample_j": j(best), "samples_per_s": speed(best),
               "fastest": {"batch_size": fastest.spec.batch_size, "precision": fastest.spec.precision,
                           "trial": fastest.id, "samples_per_s": speed(fastest),
                           "energy_per_sample_j": fastest.metrics.energy_per_sample_j},
               "slower_than_fastest": slower, "measured": len(measured), "considered": len(considered)}
    text = f"energy: {name(best)}: {format_joules(j(best))}/sample, "
    if best is fastest:
        text += "also the fastest"
    else:
        fastest_j = (f", {format_joules(j(fastest))}/sample" if has_energy(fastest) else ", energy not measured")
        text += (f"{slower:.0%} slower than the fastest ({name(fastest)}{fastest_j})" if slower > 0
                 else f"as fast as the fastest ({name(fastest)}{fastest_j})")
    if len(measured) < len(considered):
        text += f"; energy measured on {len(measured)} of the {len(considered)} trials compared"
    return Line("energy", {"batch_size": best.spec.batch_size, "precision": best.spec.precision}, text, numbers)


def decide_epoch_time(results: Sequence[Result], device: str, batch: int, dataset_size: int,
                      input_share: float | None = None, precision: str | None = None,
                      threads: int | None = None) -> Line:
    """dataset_size / samples/s of the recommended configuration at the batch (`precision` and
    `threads`: the values the precision and threads lines chose; recommend_knobs.recommended_row),
    with the figure those lines give it; where it has no speed, of the fastest configuration
    measured there. Repeats count together as everywhere (analysis/trials.RunSpeed), never a lucky
    trial."""
    candidates = [r for r in results if timed(r) and r.spec.device == device and r.spec.batch_size == batch]
    if not candidates:
        return Line("epoch_seconds", None, f"epoch time: no speed measured at b{batch} on {device}", {})
    row, which = recommended_row(results, device, batch, precision, threads)
    by_id = {r.id: r for r in candidates if r.id is not None}
    trials = [by_id[i] for i in row.trial_ids if i in by_id] if row is not None else []
    if row is not None and row.samples_per_s and trials:
        sps, ids, newest = row.samples_per_s, [r.id for r in trials if r.id is not None], trials[-1]
    else:
        fastest = max(newest_run_speeds(candidates, lambda r: r.spec.config_key()).values(),
                      key=lambda side: side.samples_per_s)
        sps, ids, newest = fastest.samples_per_s, fastest.ids, fastest.newest
        which = f"the fastest measured at b{batch}"
    seconds = dataset_size / sps
    numbers = {"dataset_size": dataset_size, "samples_per_s": sps, "trial": newest.id, "trials": ids,
               "seconds": seconds, "configuration": newest.spec.label(), "which": which}
    text = (f"epoch time: {seconds:,.1f} s for {dataset_size:,} samples at {sps_text(sps)} "
            f"({trials_text(ids)}, {newest.spec.label()}, {which}; compute only)")
    if input_share:
        with_input = seconds / max(1e-9, 1.0 - input_share)
        numbers["seconds_with_input_pipeline"] = with_input
        text += f"; {with_input:,.1f} s with the measured input-pipeline share ({input_share:.1%})"
    return Line("epoch_seconds", seconds, text, numbers)


def step_overhead_line(results: Sequence[Result], device: str, batch: int, optimizer: str,
                       bandwidth: float | None, compile_measured: bool) -> Line | None:
    """decide_overhead on `device`'s fp32 eager speeds by batch (every batch measured)."""
    speeds = baseline_by_batch(results, device)
    if batch not in speeds:
        return None
    sample = speeds[batch].newest
    return decide_overhead({b: side.samples_per_s for b, side in speeds.items()}, batch, device,
                           workload_label(sample), parameter_bytes(sample.metrics.params, optimizer), bandwidth,
                           compile_measured, sample.spec.framework)


def recommend(results: Sequence[Result], devices: Sequence[str], limits: Mapping[str, MemoryLimit],
              optimizer: str, dataset_size: int, lr_find: bool = True, default_lr: float | None = None,
              bandwidths: Mapping[str, float | None] | None = None, workload: str = "WORKLOAD",
              device_hint: str | None = None, others: Sequence[Result] = ()) -> list[Line]:
    """Every decision, in order: device, batch size, learning rate, precision, energy, threads (CPU),
    compile (where measured), framework (where `others`, the same network's trials in other
    frameworks on this machine, measured it), step overhead (with three batches measured),
    data-parallel processes (where studied), loader workers, what bounds the step, epoch time.
    `results` are one workload's; every decision but the processes one reads one-process trials
    only (a data-parallel trial's samples/s counts every rank's batch). `lr_find`, `default_lr`:
    the workload's (decide_lr). `bandwidths`: memory bandwidth (B/s) by device, calibrated or
    from the spec sheet, for the step overhead's parameter traffic. `workload`: as the hints name
    it; `device_hint`: what measures a device where none is measured (decide_device)."""
    everything, results = results, [r for r in results if not r.spec.is_data_parallel]
    device_line = decide_device(results, devices, limits,
                                device_hint or f"`rigbench run {workload} --batch-size ...` measures one")
    lines = [device_line]
    device = device_line.value
    if device is None:
        return lines
    batch_line = decide_batch(results, device, limits.get(device))
    batch = batch_line.value
    lines += [batch_line, decide_lr(results, batch, optimizer, lr_find, default_lr, workload)]
    if batch is None:
        return lines
    precision = decide_precision(results, device, batch, workload)
    lines += [precision, decide_energy(results, device, limits.get(device))]
    threads = decide_threads(results, device, batch)
    if threads is not None:
        lines.append(threads)
    compiled = decide_compile(results, device, batch, dataset_size)  # only where compile was measured
    if compiled is not None:
        lines.append(compiled)
    framework = _framework_line(results, others, device, batch)
    if framework is not None:
        lines.append(framework)
    overhead = step_overhead_line(results, device, batch, optimizer, (bandwidths or {}).get(device), compiled is not None)
    if overhead is not None:
        lines.append(overhead)
    processes = decide_processes(everything, device)  # only where a process study was stored
    if processes is not None:
        lines.append(Line("processes", *processes))
    pipeline = decide_pipeline(results, device, workload)
    lines += pipeline
    bound = pipeline[1].numbers
    share = (bound.get("input", 0.0) + bound.get("copy", 0.0)) if bound else None
    lines.append(decide_epoch_time(results, device, batch, dataset_size, share, precision.value,
                                   threads.value if threads is not None else None))
    return lines
