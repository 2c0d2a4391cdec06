"""One stored trial's fields as `rigbench results show` lists them: grouped, each in its unit and
rounded, the ones a trial of its kind has no value for left out, per-epoch lists and curves
summarised (`--json` prints every field and raw sample as stored). Plain strings, no layout:
reports/trial_detail.py lays them out. Each row is named by its key in `--json` (a metric's
name, `Result.row()`'s), so a figure seen here is found there, in `results export` and in the
docs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from rigbench.analysis.contention import is_busy
from rigbench.analysis.lr_find import suggest_lr
from rigbench.metrics import METRICS
from rigbench.reports.cells import interval, rate, samples_per_joule_cell, si, speed, unknown_mark
from rigbench.spec import Result
from rigbench.units import clock, format_bytes

#: (label, value) pairs under one heading.
Rows = list[tuple[str, str]]

#: The metrics each heading lists, in order; a metric in none of them is listed under "other"
#: (so a new one shows before it is placed). samples_per_s_ci is part of samples_per_s's row,
#: bytes_estimate_revision of bytes_per_sample's.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("speed", ("samples_per_s", "tokens_per_s", "step_time_ms_median", "step_time_ms_mean", "step_time_ms_iqr",
               "step_time_cv", "noisy", "steps_measured", "first_step_s", "warmup_s", "cpu_ms_per_step",
               "epoch_seconds", "final_loss")),
    ("training", ("epochs", "accuracy_per_epoch", "final_accuracy", "best_accuracy", "eval_loss_per_epoch",
                  "final_eval_loss", "best_eval_loss", "perplexity", "bits_per_byte", "baseline_loss",
                  "target_accuracy", "target_loss", "seconds_to_target", "epochs_to_target", "train_seconds",
                  "eval_seconds", "input_fraction", "copy_fraction", "diverged_at_epoch")),
    ("learning-rate range test", ("suggested_lr",)),
    ("model and data", ("params", "flops_per_sample", "bytes_per_sample", "dataset",
                        "dataset_size")),
    ("resources", ("cpu_util_pct_mean", "cpu_util_pct_p95", "system_cpu_pct_mean", "system_cpu_pct_p95",
                   "others_cpu_pct_mean", "rss_peak_mib", "capped_peak_mib", "allocator_peak_mib",
                   "gpu_util_pct_mean", "gpu_util_pct_p95", "gpu_mem_peak_mib", "gpu_other_processes_max",
                   "gpu_others_sm_pct_mean")),
    ("energy", ("energy_j", "energy_per_sample_j", "energy_per_epoch_j", "energy_to_target_j", "gpu_energy_j",
                "gpu_power_w_mean", "gpu_power_w_peak", "cpu_energy_j", "cpu_power_w_mean", "cpu_power_w_peak",
                "dram_energy_j", "dram_power_w_mean", "dram_power_w_peak", "energy_method", "energy_note",
                "energy_estimate_j", "energy_estimate_per_sample_j", "energy_estimate_basis")),
    ("data parallel", ("global_batch", "straggler_ratio", "comm_share", "nosync_step_time_ms_median",
                       "rank_rss_peak_mib_max", "rank_rss_peak_mib_sum", "rank_allocator_peak_mib_sum",
                       "replicas_identical", "allreduce_grad_ms", "allreduce_busbw_gbs", "allreduce_latency_us",
                       "allreduce_table")),
)
#: Shown elsewhere: in samples_per_s's and bytes_per_sample's rows, and among the trial's own
#: rows (setup_rows).
ELSEWHERE = ("samples_per_s_ci", "bytes_estimate_revision", "trial_s")
#: final_loss is the last training loss of a speed trial's steps, of a training run's last
#: epoch, of a range test's ramp: it goes under the heading of its kind.
_FINAL_LOSS = {"train": "training", "lr_find": "learning-rate range test"}
_UNITS = {m.name: m.unit for m in METRICS}
#: Units written as a count of them after the number ("6 steps").
_COUNTED = ("ms", "s", "MiB", "J", "W", "GB/s", "µs", "samples", "steps", "epochs", "parameters", "processes")


def _loss(value: float) -> str:
    """A loss (or another unitless figure): 4 significant digits, as the epoch lines write it."""
    return f"{value:.4g}"


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def metric_text(name: str, value: Any) -> str:
    """A metric's value in its unit (metrics.METRICS), rounded: rates and sizes as `rate` writes
    them (whole numbers from 100 up, 3 significant digits below), fractions as percentages,
    losses to 4 significant digits, FLOPs and bytes with an SI prefix."""
    unit = _UNITS.get(name, "")
    if isinstance(value, bool):
        return _yes(value)
    if isinstance(value, str):
        return value
    if not isinstance(value, (int, float)):
        return str(value)
    if unit == "fraction":
        return f"{value:.1%}"
    if unit == "%":
        return f"{value:.1f}%"
    if unit == "FLOP":
        return si(value, "FLOP")
    if unit == "bytes":
        return si(value, "B")
    if unit == "epoch":
        return f"epoch {value}"
    if unit == "J/sample":
        return f"{rate(value)} J/sample ({samples_per_joule_cell(value)} samples/J)"
    if unit in ("nats", "bits"):
        return f"{_loss(value)} {unit}"
    if isinstance(value, int):
        return f"{value:,}" + (f" {unit}" if unit in _COUNTED else "")
    if unit in _COUNTED or unit == "tokens/s":
        text = f"{rate(value)} {unit}"
        return text + (f" ({clock(value)})" if unit == "s" and 600 <= value < 1e9 else "")
    return _loss(value)


def per_epoch(values: Sequence[float | None], fmt: Callable[[float], str], highest: bool) -> str:
    """"10 epochs: 11.2% → 98.1% (best 98.1%, epoch 9)": a per-epoch list in a line, the best
    epoch's figure (the highest, else the lowest) named when there are more than two. Epochs
    without a figure are counted, not guessed."""
    known = [(i + 1, v) for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    head = f"{len(values)} epoch{'s' * (len(values) != 1)}"
    if not known:
        return f"{head}, none with a figure"
    text = f"{head}: {fmt(known[0][1])}" + (f" → {fmt(known[-1][1])}" if len(values) > 1 else "")
    if len(known) > 2:
        epoch, value = (max if highest else min)(known, key=lambda p: p[1])
        text += f" ({'best' if highest else 'lowest'} {fmt(value)}, epoch {epoch})"
    missing = len(values) - len(known)
    return text + (f"; {missing} without a figure" if missing else "")


def _pct(value: float) -> str:
    return f"{value:.1%}"


def _speed(r: Result) -> str:
    """samples/s with its 95% interval and flags, as the run table's cell (cells.speed) has it."""
    m = r.metrics
    if speed(r) == "-":  # a failed speed trial's figure: no measurement
        return f"{rate(m.samples_per_s or 0)} samples/s (not a measurement: the trial ended {r.status})"
    flags = [flag for flag, on in (("noisy", m.noisy), ("busy", is_busy(m))) if on]
    # Several ranks: the trial's whole rate, not one rank's (each rank's own row has no rate)
    ranks = f"; all {r.spec.world_size} ranks together" if r.spec.world_size > 1 else ""
    return (interval(m.samples_per_s, m.samples_per_s_ci) + " samples/s"
            + (" (95% CI)" if m.samples_per_s_ci else "") + "".join(f" {flag}" for flag in flags) + ranks)


def _allreduce(table: list[list[float]]) -> str:
    sizes = [row[0] for row in table if row]
    if not sizes:
        return "no message sizes"
    return (f"{len(sizes)} message sizes, {format_bytes(min(sizes))} to {format_bytes(max(sizes))} "
            "(each with its time and bus bandwidth in --json)")


def _metric_row(r: Result, name: str, value: Any) -> str | None:
    """The text of metric `name`'s row, or None to leave it out (not set, or saying nothing)."""
    if value is None or value == [] or (name == "steps_measured" and value == 0):
        return None
    if name == "global_batch" and not r.spec.is_data_parallel:
        return None  # the batch size again
    if name == "samples_per_s":
        return _speed(r)
    if name == "accuracy_per_epoch":
        return per_epoch(value, _pct, highest=True)
    if name == "eval_loss_per_epoch":
        return per_epoch(value, _loss, highest=False)
    if name == "allreduce_table":
        return _allreduce(value)
    if name == "bytes_per_sample":  # which count made it, in words: a bare "revision 2" row said nothing
        revision = r.metrics.bytes_estimate_revision
        return metric_text(name, value) + (f" (estimate revision {revision}: at the trial's precision)" if revision
                                           else " (an early estimate: fp32 bytes, attention unfused)")
    if name == "step_time_cv" and r.metrics.noisy:
        return f"{_loss(value)} (noisy)"
    if name == "others_cpu_pct_mean" and is_busy(r.metrics):
        return f"{value:.1f}% (busy)"
    return metric_text(name, value)


def metric_groups(r: Result) -> list[tuple[str, Rows]]:
    """Every metric of `r` with a value, under its heading (GROUPS), in order; the training
    group also has the last epoch's other losses (`final_extra`), and the range test its curve."""
    placed = {name for _, names in GROUPS for name in names} | set(ELSEWHERE)
    groups = [*GROUPS, ("other", tuple(n for n in _UNITS if n not in placed))]
    final_loss = _FINAL_LOSS.get(r.spec.kind, "speed")
    out = []
    for heading, names in groups:
        names = tuple(n for n in names if n != "final_loss") + (("final_loss",) if heading == final_loss else ())
        rows = [(name, text) for name in names
                if (text := _metric_row(r, name, getattr(r.metrics, name))) is not None]
        if heading == "training" and r.epoch_records and r.epoch_records[-1].extra:
            rows.append(("final_extra", ", ".join(f"{k} {_loss(v)}" for k, v in r.epoch_records[-1].extra.items())))
        if heading == "learning-rate range test" and r.lr_curve:
            rows.append(("lr_curve", lr_curve_text(r)))
        if rows:
            out.append((heading, rows))
    return out


def lr_curve_text(r: Result) -> str:
    """A range test's curve in a line: its steps and lr span, its minimum and why it stopped."""
    curve = r.lr_curve
    opts = r.spec.lr_find
    s = suggest_lr(curve, opts.steps if opts else None, opts.diverge_factor if opts else 4.0)
    text = f"{len(curve)} steps, lr {curve[0][0]:.3g} to {curve[-1][0]:.3g}"
    if s.lr_at_min is not None and s.min_loss is not None:
        text += f"; minimum smoothed loss {_loss(s.min_loss)} at lr {s.lr_at_min:.3g}"
    return text + f"; stopped: {s.stop}" + "".join(f"; {note}" for note in s.notes)


def options_text(options: BaseModel) -> str:
    """An option block (measure, train, lr_find, a max-batch search) as `key value` pairs, unset
    ones left out: "warmup_steps 1, min_seconds 0.5, ..., memory_limit_bytes 2.0 GiB"."""
    parts = []
    for key, value in options.model_dump().items():
        if value is None:
            continue
        if isinstance(value, bool):
            text = _yes(value)
        elif key.endswith("_bytes") and isinstance(value, (int, float)):
            text = format_bytes(value)
        elif isinstance(value, int):
            text = f"{value:,}"
        elif isinstance(value, float):
            text = f"{value:g}"
        else:
            text = str(value)
        parts.append(f"{key} {text}")
    return ", ".join(parts)


#: A stored error is shown to this many characters and lines, its end (where a traceback says
#: what failed); `--json` has it whole.
ERROR_SHOWN, ERROR_LINES = 4000, 40


def error_text(error: str) -> str:
    """The end of a stored error, at most ERROR_LINES lines and ERROR_SHOWN characters (from a
    line's start where one is near), after a line saying how much was left out before it."""
    error = error.rstrip("\n")  # a trailing \r stays, written out as stored text is
    tail = "\n".join(error[-ERROR_SHOWN:].split("\n")[-ERROR_LINES:])
    if len(tail) == len(error):
        return error
    newline = tail.find("\n")
    if len(tail) == ERROR_SHOWN and 0 <= newline < ERROR_SHOWN // 4:
        tail = tail[newline + 1:]
    return f"… ({len(error) - len(tail):,} characters before this: --json has the whole error)\n{tail}"


def setup_rows(r: Result, row: dict[str, Any]) -> tuple[Rows, Rows]:
    """The trial's own rows (id, run, kind, status, error) and its setup's (what ran, where,
    how measured), from `Result.row()` and the spec's option blocks; defaults that say nothing
    (no workload options, one process not under the data-parallel wrapper) left out."""
    spec = r.spec
    trial: Rows = [("id", str(r.id or "-")), ("run_id", r.run_id), ("created_at", r.created_at),
                   ("kind", spec.kind), ("status", r.status)]
    if r.metrics.trial_s is not None:
        trial.append(("trial_s", metric_text("trial_s", r.metrics.trial_s)))
    if r.error:
        trial.append(("error", error_text(r.error)))
    lr = row["lr"]
    threads = row["threads"]
    setup: Rows = [
        ("workload", spec.workload + unknown_mark(spec.workload)),
        ("workload_options", ", ".join(f"{k}={v}" for k, v in sorted(spec.workload_options.items()))),
        ("framework", spec.framework), ("device", spec.device), ("device_name", r.device_name or ""),
        ("batch_size", f"{spec.batch_size:,}"), ("precision", spec.precision),
        ("threads", "" if threads is None else str(threads) + (
            f" (asked for {spec.threads})" if spec.threads and spec.threads != threads else "")),
        ("lr", "" if lr is None else f"{lr:g}" + (" (the workload's default)" if spec.lr is None else "")),
        ("compile", spec.compile), ("channels_last", _yes(spec.channels_last)),
    ]
    if spec.is_data_parallel:
        setup += [("world_size", str(spec.world_size)), ("data_parallel", _yes(True))]
        if spec.nodes > 1:
            setup.append(("nodes", str(spec.nodes)))
    blocks = [("measure options", spec.measure), ("train options", spec.train),
              ("lr-find options", spec.lr_find), ("max-batch search", getattr(spec, "search", None))]
    setup += [(label, options_text(block)) for label, block in blocks if isinstance(block, BaseModel)]
    return trial, [(label, value) for label, value in setup if value]


def software_rows(software: dict[str, Any]) -> Rows:
    """The framework's versions and build, one row per key (those not set left out)."""
    return [(str(key), _yes(value) if isinstance(value, bool) else str(value))
            for key, value in software.items() if value not in (None, "", {}, [])]


def machine_rows(machine: dict[str, Any]) -> Rows:
    """The machine the trial's run recorded: host, CPU and its logical cores, memory, OS,
    Python, one row per GPU; what it did not record is left out."""
    cores, ram = machine.get("cpu_cores_logical"), machine.get("ram_bytes")
    cpu = ", ".join(str(part) for part in (machine.get("cpu_model"), cores and f"{cores} logical cores") if part)
    rows: Rows = [("hostname", str(machine.get("hostname") or "")), ("cpu", cpu),
                  ("ram", format_bytes(ram) if isinstance(ram, (int, float)) else ""),
                  ("os", str(machine.get("os") or "")), ("python", str(machine.get("python_version") or ""))]
    for gpu in machine.get("gpus") or []:
        if isinstance(gpu, dict):
            memory = gpu.get("memory_bytes")
            rows.append(("gpu", " ".join(str(p) for p in (gpu.get("name"), memory and format_bytes(memory),
                                                          gpu.get("driver") and f"driver {gpu['driver']}") if p)))
    return [(label, value) for label, value in rows if value]


def _curve(values: Sequence[float]) -> str:
    return f"{len(values)} points: {_loss(values[0])} → {_loss(values[-1])}" if values else ""


def raw_rows(r: Result) -> Rows:
    """What `--json` adds: the raw samples, counted and summarised (a range test's lr_curve has
    its own row, in its group)."""
    steps = r.step_times_s
    rows: Rows = [
        ("step_times_s", f"{len(steps)} steps, {rate(min(steps) * 1e3)} to {rate(max(steps) * 1e3)} ms" if steps else ""),
        ("step_windows", f"{len(r.step_windows)} windows of steps timed together" if r.step_windows else ""),
        ("tracker_samples", f"{len(r.tracker_samples)} samples" if r.tracker_samples else ""),
        ("epoch_records", f"{len(r.epoch_records)} epoch{'s' * (len(r.epoch_records) != 1)}" if r.epoch_records else ""),
        ("loss_curve", "training loss, " + _curve(r.loss_curve) if r.loss_curve else ""),
    ]
    return [(label, value) for label, value in rows if value]
