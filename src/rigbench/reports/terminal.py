"""Rich tables of trials for the terminal. Formatting only: no measurement or storage logic
here. Every table is a FitTable (reports/table_fit.py: fits the terminal's width, one row per
line); cells are formatted in reports/cells.py."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from rigbench.analysis.contention import busy_note, is_busy, shared_gpu_note
from rigbench.analysis.training import bits
from rigbench.reports.ceiling_tables import calibration_table, roofline_table
from rigbench.reports.cells import (
    UNKNOWN_WORKLOAD,
    any_energy,
    cells,
    device_column,
    device_labels,
    framework_column,
    framework_short,
    interval,
    literal,
    num,
    samples_per_joule_cell,
    setup_label,
    speed,
    status,
    tokens_cell,
    trial_cells,
    trial_columns,
    unknown_mark,
    workload_label,
)
from rigbench.reports.table_fit import Column, FitTable
from rigbench.reports.trial_detail import ranks_table, result_detail
from rigbench.spec import Result
from rigbench.textlimits import NAME_CHARS, clip, clip_result, error_line, visible
from rigbench.units import format_bytes

# Re-exported: the cells the CLI's own tables use.
__all__ = [
    "UNKNOWN_WORKLOAD", "any_energy", "busy_lines", "calibration_table", "cells", "devices_table", "error_line",
    "framework_column", "framework_short", "interval", "literal", "num", "one_line_outcome",
    "ranks_table", "result_detail", "results_table", "roofline_table", "runs_table", "samples_per_joule_cell",
    "setup_label", "compile_lines", "speed", "speedup_table", "status", "tokens_cell", "train_table", "baseline_lines", "trial_cells",
    "trial_columns", "unknown_mark", "workload_label", "workloads_table",
]

#: Where every column of a listed trial can be seen when the terminal is too narrow for it.
ROW_FIELDS = "--json"


def one_line_outcome(r: Result) -> str:
    """What a finished trial comes to, in a few words (progress lines); a failure other than
    `oom` says why (the last line of its error), as max-batch's probe lines do."""
    m = r.metrics
    if r.spec.kind == "train" and m.epochs:
        if m.final_accuracy is not None:
            tail = f", held-out accuracy {m.final_accuracy:.1%}"
        elif m.perplexity is not None and m.final_eval_loss is not None:  # a language model
            tail = f", held-out loss {m.final_eval_loss:.4f}" + (
                f" ({m.bits_per_byte:.3f} bits/byte)" if m.bits_per_byte is not None else f" (perplexity {m.perplexity:.4g})")
        else:  # GAN and autoencoder: their own losses instead of an accuracy
            tail = "".join(f", {k} {v:.4g}" for k, v in r.epoch_records[-1].extra.items())
        text = f"{r.status}: {m.epochs} epoch{'s' * (m.epochs != 1)} in {m.train_seconds:.1f} s{tail}"
    elif m.samples_per_s:
        text = f"{m.samples_per_s:,.1f} samples/s"
        if m.tokens_per_s is not None:
            text += f", {m.tokens_per_s:,.0f} tokens/s"
        if is_busy(m):
            text += f" (busy: other processes used {m.others_cpu_pct_mean:.0f}% of the CPU)"
    else:
        text = r.status
    if r.status not in ("ok", "oom") and r.error:
        text += f" ({error_line(r.error)})"
    return text


def without_interval(text: str) -> str:
    """What a narrow terminal keeps of a samples/s cell, its figure and flags: "1,451
    [1,060–1,851] noisy" -> "1,451 noisy"."""
    return re.sub(r" \[[^\]]*\]", "", text)


def results_table(results: Sequence[Result], title: str | None = None, more: str = ROW_FIELDS,
                  runs: bool = False) -> FitTable:
    """The run table: one row per trial, failures included with their status; `setup` tells
    apart trials that differ only in kind, threads, compile, layout or lr. `more`: where the
    columns a narrow terminal leaves out can be seen; `runs`: a column of each trial's run id.
    Narrowed, the 95% interval goes before the setup, precision and batch that tell rows apart."""
    # tokens/s only where a language model is listed: a column of dashes says nothing
    tokens = any(r.metrics.tokens_per_s is not None for r in results)
    table = FitTable([
        Column("id", "right"), *([Column("run", priority=42)] if runs else []), *trial_columns(),
        Column("samples/s [95% CI]", "right", short="samples/s", brief=without_interval, brief_priority=45,
               brief_note="the 95% CI of samples/s"),
        *([Column("tokens/s", "right", priority=35)] if tokens else []), Column("step ms", "right", priority=40),
        Column("CPU %", "right", priority=30), Column("GPU %", "right", priority=15),
        Column("RSS MiB", "right", priority=25), Column("GPU MiB", "right", priority=20), Column("status"),
    ], title=title, more=more)
    device = device_labels(results)
    for r in map(clip_result, results):
        m = r.metrics
        gpu_mem = m.gpu_mem_peak_mib if m.gpu_mem_peak_mib is not None else m.allocator_peak_mib
        table.add_row(*cells(
            str(r.id or "-"), *([r.run_id] if runs else []), *trial_cells(r, device(r)), speed(r),
            # thousands separated, as samples/s and tokens/s beside them are ("1,549.99", not "1549.99")
            *([tokens_cell(m.tokens_per_s)] if tokens else []), num(m.step_time_ms_median, "{:,.2f}"),
            num(m.cpu_util_pct_mean), num(m.gpu_util_pct_mean), num(m.rss_peak_mib, "{:,.0f}"),
            num(gpu_mem, "{:,.0f}"), status(r.status),
        ))
    return table


def gpu_models(machine: dict[str, Any] | None) -> list[str]:
    """"NVIDIA H100 80GB HBM3" or "8x NVIDIA H100 80GB HBM3": a machine's GPUs by model."""
    names = [str(g.get("name") or "unnamed GPU") for g in (machine or {}).get("gpus") or []]
    return [f"{names.count(n)}x {n}" if names.count(n) > 1 else n for n in dict.fromkeys(names)]


def utc_minute(text: str) -> str:
    """A stored ISO time as "2026-11-23 07:04" in UTC; as stored where it is not one."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return text
    when = when.astimezone(UTC) if when.tzinfo else when
    return f"{when:%Y-%m-%d %H:%M}"


def command_shown(command: str) -> str:
    """A stored command line as a table shows it: the program without the folder it ran from
    ("/opt/venv/bin/rigbench run -d cuda:0" -> "rigbench run -d cuda:0"), a Windows folder too
    ("'C:\\venv\\Scripts\\rigbench' run" -> "rigbench run"); the rest as stored. The program is the
    first word as shlex.join quoted it: a folder with a space in it is one word."""
    try:
        program = shlex.split(command)[0]
    except (ValueError, IndexError):  # not shlex.join's (an unclosed quote), or empty
        program = command.partition(" ")[0]
    quoted = shlex.quote(program)
    if not command.startswith(quoted):
        quoted = program = command.partition(" ")[0]
    return re.split(r"[/\\]", program)[-1] + command[len(quoted):]


def runs_table(runs: Sequence[dict[str, Any]], more: str = "--json") -> FitTable:
    """`rigbench results runs` (Store.runs): one row per run, its id first (what `--run` takes),
    when, on which machine, what it holds, and the command that made it (masked, as stored;
    `command_shown`). Narrowed, the command is cut first, then the CPU and host go, then GPUs are cut."""
    table = FitTable([
        Column("run"), Column("when (UTC)", priority=70), Column("host", priority=45),
        Column("CPU", priority=35), Column("GPUs", priority=60, cut=True),
        Column("trials", "right", priority=90), Column("calib.", "right", priority=80, short="cal"),
        Column("command", priority=30, cut=True),
    ], more=more)
    for run in runs:
        machine = run.get("machine") or {}
        table.add_row(*cells(run["id"], utc_minute(run["created_at"]), clip(str(machine.get("hostname") or "-"), NAME_CHARS),
                             clip(str(machine.get("cpu_model") or "-"), NAME_CHARS), ", ".join(gpu_models(machine)) or "-",
                             str(run["trials"]), str(run["calibrations"]), command_shown(run["command"])))
    return table


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _target(accuracy: float | None, loss: float | None) -> str:
    """The target a training run was given: an accuracy, a held-out loss, or both."""
    parts = ([_pct(accuracy)] if accuracy is not None else []) + ([f"loss {loss:g}"] if loss is not None else [])
    return " & ".join(parts) or "-"


def compile_lines(results: Sequence[Result]) -> list[str]:
    """One line per compiled training run of two epochs or more: its first epoch carries the
    compilation, so it is set beside the mean of the later ones (its train s, and samples/s
    over the run, count the compilation as the user waited for it)."""
    lines = []
    for r in results:
        epochs = r.epoch_records
        if r.spec.compiled and len(epochs) >= 2:
            later = sum(e.train_seconds for e in epochs[1:]) / (len(epochs) - 1)
            lines.append(f"trial {r.id or '-'} ({r.spec.compile_label}): epoch 1 trained in "
                         f"{epochs[0].train_seconds:.2f} s, compilation included; later epochs in "
                         f"{later:.2f} s each (mean)")
    return lines


def busy_lines(results: Sequence[Result]) -> list[str]:
    """The lines under a table of trials that name those timed while other processes took a
    share of the CPU (`busy`) or held a context on their GPU (analysis/contention.py); none
    when every trial had the machine to itself. A trial not stored (kept in the spool) is named
    by its label, as stored text is shown (textlimits.visible)."""
    return [visible(note) for note in (busy_note(results), shared_gpu_note(results)) if note]


def baseline_lines(results: Sequence[Result]) -> list[str]:
    """One line per text data set trained on, with the loss a model that ignores context gets
    (the unigram entropy of its training bytes): the figure a language model must beat."""
    seen: dict[str, float] = {}
    for r in results:
        if r.metrics.baseline_loss is not None and r.metrics.dataset:
            seen.setdefault(r.metrics.dataset, r.metrics.baseline_loss)
    return [f"{clip(name, NAME_CHARS)}: a model that ignores context (the byte frequencies alone) has a held-out "
            f"loss of {loss:.4f} nats per byte ({bits(loss):.3f} bits/byte); a language model must get "
            "below it." for name, loss in seen.items()]


def train_table(results: Sequence[Result], title: str | None = None) -> FitTable:
    """Training runs: the columns of the thesis's Table 9 (accuracy after N epochs, time and
    epochs to the target), with train and evaluation time apart; precision and the rest of the
    setup (threads, compile, ...) tell apart runs that differ in nothing else."""
    table = FitTable([
        Column("id", "right"), Column("workload"), Column("data set", priority=50), framework_column(),
        device_column(), Column("batch", "right", priority=70), Column("prec", priority=58),
        Column("setup", priority=52), Column("lr", "right", priority=60), Column("epochs", "right", priority=55), Column("final acc", "right", short="acc"),
        Column("best acc", "right", priority=45, short="best"),
        Column("val loss", "right", priority=48, short="loss"), Column("bits/byte", "right", priority=42, short="bpb"),
        Column("target", "right", priority=35),
        Column("s to target", "right", priority=40, short="s to tgt"),
        Column("epochs to target", "right", priority=30, short="ep to tgt"),
        Column("train s", "right", priority=65), Column("eval s", "right", priority=20),
        Column("input %", "right", priority=25), Column("status"),
    ], title=title, more=ROW_FIELDS)
    device = device_labels(results)
    for r in map(clip_result, results):
        m = r.metrics
        table.add_row(*cells(
            str(r.id or "-"), workload_label(r), m.dataset or "-", r.spec.framework, device(r),
            str(r.spec.batch_size), r.spec.precision, setup_label(r, shown=("kind", "lr")),
            num(r.spec.effective_lr(), "{:g}"), str(m.epochs or 0),
            _pct(m.final_accuracy), _pct(m.best_accuracy), num(m.final_eval_loss, "{:.4f}"),
            num(m.bits_per_byte, "{:.3f}"), _target(m.target_accuracy, m.target_loss),
            num(m.seconds_to_target), "-" if m.epochs_to_target is None else str(m.epochs_to_target),
            num(m.train_seconds), num(m.eval_seconds), _pct(m.input_fraction), status(r.status),
        ))
    return table


def speedup_table(rows: Sequence[dict[str, Any]]) -> FitTable:
    """Speed-ups over the CPU (analysis/speedups.speedups_over_cpu rows); with repeats, how
    many trials each mean is of ("mean of 3 / 3": the device's, then the CPU's)."""
    table = FitTable([
        Column("workload"), framework_column(), Column("device"), Column("batch", "right", priority=70),
        Column("prec", priority=60), Column("speed-up", "right"),
    ], title="Speed-up over the CPU (samples/s ratio)", more=ROW_FIELDS)
    for row in rows:
        table.add_row(*cells(clip(row["workload_label"], NAME_CHARS), clip(row["framework"], NAME_CHARS),
                             clip(row["device"], NAME_CHARS), str(row["batch_size"]), row["precision"],
                             f"{row['speedup']:.2f}x" + _means_of(row)))
    return table


def _means_of(row: dict[str, Any]) -> str:
    counts = len(row["trials"]), len(row["base_trials"])
    return f" (mean of {counts[0]} / {counts[1]})" if max(counts) > 1 else ""


def workloads_table(rows: Sequence[dict[str, Any]]) -> FitTable:
    """`rigbench workloads`: each workload's facts; the origin is cut first when room is short."""
    table = FitTable([
        Column("name"), Column("task", priority=40), Column("input", priority=50),
        Column("data set", priority=60), Column("default batch", "right", priority=70, short="batch"),
        Column("params", "right", priority=65), Column("train GFLOP/sample", "right", priority=55, short="GFLOP"),
        Column("options", priority=45, cut=True), Column("origin", priority=30, cut=True),
    ], more="--json")
    for w in rows:
        flops = w["train_flops_per_sample"]
        table.add_row(*cells(
            w["name"], w["task"], "x".join(map(str, w["input_shape"])),
            f"{w['dataset']} ({w['dataset_train_size']:,})", str(w["default_batch"]),
            "-" if w["params"] is None else f"{w['params']:,}",
            "-" if flops is None else f"{flops / 1e9:.3f}",
            ", ".join(f"{k}={v}" for k, v in w["options"].items()) or "-", w["origin"],
        ))
    return table


def devices_table(rows: Sequence[dict[str, Any]]) -> FitTable:
    """`rigbench devices`: each device and the frameworks that can use it."""
    table = FitTable([
        Column("id"), Column("kind", priority=20), Column("name", cut=True, priority=50),
        Column("memory", "right", priority=60),
        Column("frameworks", abbreviate=lambda text: ", ".join(map(framework_short, text.split(", ")))),
    ], more="--json")
    for d in rows:
        table.add_row(*cells(d["id"], d.get("kind") or "-", d.get("name") or "-",
                             format_bytes(d.get("memory_bytes")),
                             ", ".join(d.get("frameworks") or []) or "none (no framework build sees it)"))
    return table


def max_batch_table(o: Any) -> FitTable:
    """`rigbench max-batch`'s probes in order (experiments/max_batch.MaxBatchOutcome): batch,
    status, memory peak, samples/s."""
    table = FitTable([
        Column("id", "right"), Column("batch", "right"), Column("status"),
        Column(f"peak MiB ({o.memory_metric})", "right", short="peak MiB"), Column("samples/s", "right", priority=50),
    ], title=f"max-batch {o.workload} on {o.device} ({o.precision}): probes in order", more="--json")
    for r in o.probes:
        peak = getattr(r.metrics, o.memory_metric)
        table.add_row(*cells(str(r.id), str(r.spec.batch_size), status(r.status), num(peak, "{:,.0f}"),
                             num(r.metrics.samples_per_s, "{:,.1f}")))
    return table
