"""Rich tables for the terminal. Formatting only: no measurement or storage logic here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import JustifyMethod
from rich.table import Table
from rich.text import Text

from rigbench.analysis.energy import has_energy, samples_per_joule
from rigbench.spec import Result
from rigbench.textlimits import ERROR_CHARS, NAME_CHARS, clip, clip_result, clip_value
from rigbench.units import format_bytes
from rigbench.workloads import WORKLOADS

_STATUS_STYLE = {"ok": "green", "oom": "yellow", "diverged": "yellow", "interrupted": "yellow",
                 "unsupported": "dim", "timeout": "red", "crash": "red"}


#: Shown after a stored workload this rigbench does not define (a bundle from a newer one).
UNKNOWN_WORKLOAD = "(unknown to this rigbench)"


def unknown_mark(workload: str) -> str:
    """" (unknown to this rigbench)" for a workload this rigbench does not define, else ""."""
    return "" if workload in WORKLOADS else f" {UNKNOWN_WORKLOAD}"


def literal(text: str, style: str = "") -> Text:
    """Stored or user-supplied text as rich shows it verbatim: never read as markup, so an
    error's "[enforce fail at ...]" stays and a "[/]" cannot crash the table."""
    return Text(text, style=style)


def _cells(*values: str | Text) -> list[Text]:
    """A table row's cells, each literal (already-made Text kept with its style)."""
    return [v if isinstance(v, Text) else literal(v) for v in values]


def _status(status: str) -> Text:
    return literal(status, _STATUS_STYLE.get(status, ""))


def _num(value: float | None, fmt: str = "{:.1f}") -> str:
    return "-" if value is None else fmt.format(value)


def _speed(r: Result) -> str:
    m = r.metrics
    if m.samples_per_s is None:
        return "-"
    text = f"{m.samples_per_s:,.1f}"
    if m.samples_per_s_ci:
        low, high = m.samples_per_s_ci
        text += f" ±{(high - low) / 2:,.1f}"
    return text + (" [noisy]" if m.noisy else "")


def any_energy(results: Sequence[Result]) -> bool:
    """Whether a table of these results gets a samples/J column: some have a measured energy."""
    return any(has_energy(r) for r in results)


def samples_per_joule_cell(energy_per_sample_j: float | None) -> str:
    """Samples per joule for a table cell ("-" without a measured energy): whole numbers from
    100 up, 3 significant digits below."""
    value = samples_per_joule(energy_per_sample_j)
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def workload_label(r: Result) -> str:
    """NAME:key=value,...; a workload this rigbench does not define is labelled so."""
    opts = ",".join(f"{k}={v}" for k, v in sorted(r.spec.workload_options.items()))
    return clip(f"{r.spec.workload}:{opts}" if opts else r.spec.workload, NAME_CHARS) + unknown_mark(r.spec.workload)


def setup_label(r: Result) -> str:
    """What else sets a trial apart beyond workload, device, batch and precision, compactly:
    kind (when not a speed trial), threads asked for, compile, channels-last, lr, world size."""
    spec = r.spec
    parts = [] if spec.kind == "speed" else [spec.kind.replace("_", "-")]
    if spec.threads:
        parts.append(f"t{spec.threads}")
    if spec.compile:
        parts.append("compile")
    if spec.channels_last:
        parts.append("NHWC")
    if spec.lr is not None:
        parts.append(f"lr={spec.lr:g}")
    if spec.world_size > 1:
        parts.append(f"x{spec.world_size}")
    return " ".join(parts) or "-"


def error_line(error: str | None, limit: int = 240) -> str:
    """A stored error's last line (a traceback's ends with the exception), cut to `limit`."""
    lines = (error or "").strip().splitlines()
    last = lines[-1] if lines else ""
    return last if len(last) <= limit else last[:limit - 3] + "..."


def one_line_outcome(r: Result) -> str:
    """What a finished trial comes to, in a few words (progress lines); a failure other than
    `oom` says why (the last line of its error), as max-batch's probe lines do."""
    m = r.metrics
    if r.spec.kind == "train" and m.epochs:
        if m.final_accuracy is not None:
            tail = f", held-out accuracy {m.final_accuracy:.1%}"
        else:  # GAN and autoencoder: their own losses instead of an accuracy
            tail = "".join(f", {k} {v:.4g}" for k, v in r.epoch_records[-1].extra.items())
        text = f"{r.status}: {m.epochs} epochs in {m.train_seconds:.1f} s{tail}"
    elif m.samples_per_s:
        text = f"{m.samples_per_s:,.1f} samples/s"
    else:
        text = r.status
    if r.status not in ("ok", "oom") and r.error:
        text += f" ({error_line(r.error)})"
    return text


def results_table(results: Sequence[Result], title: str | None = None) -> Table:
    """The run table: one row per trial, failures included with their status; `setup` tells
    apart trials that differ only in kind, threads, compile, layout or lr."""
    table = Table(title=None if title is None else literal(title), header_style="bold")
    columns: list[tuple[str, JustifyMethod]] = [
        ("id", "right"), ("workload", "left"), ("device", "left"),
        ("batch", "right"), ("prec", "left"), ("setup", "left"), ("samples/s ±95% CI", "right"),
        ("step ms", "right"), ("CPU %", "right"), ("GPU %", "right"),
        ("RSS MiB", "right"), ("GPU MiB", "right"), ("status", "left")]
    for name, justify in columns:
        table.add_column(name, justify=justify)
    for r in map(clip_result, results):
        m = r.metrics
        gpu_mem = m.gpu_mem_peak_mib if m.gpu_mem_peak_mib is not None else m.allocator_peak_mib
        table.add_row(*_cells(
            str(r.id or "-"), workload_label(r), r.spec.device, str(r.spec.batch_size),
            r.spec.precision, setup_label(r), _speed(r), _num(m.step_time_ms_median, "{:.2f}"),
            _num(m.cpu_util_pct_mean), _num(m.gpu_util_pct_mean), _num(m.rss_peak_mib, "{:.0f}"),
            _num(gpu_mem, "{:.0f}"), _status(r.status),
        ))
    return table


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def train_table(results: Sequence[Result], title: str | None = None) -> Table:
    """Training runs: the columns of the thesis's Table 9 (accuracy after N epochs, time and
    epochs to the target), with train and evaluation time apart."""
    table = Table(title=None if title is None else literal(title), header_style="bold")
    for name in ("id", "workload", "data set", "device", "batch", "lr", "epochs", "final acc",
                 "best acc", "target", "s to target", "epochs to target", "train s", "eval s",
                 "input %", "status"):
        table.add_column(name, justify="left" if name in ("workload", "data set", "device", "status") else "right")
    for r in map(clip_result, results):
        m = r.metrics
        table.add_row(*_cells(
            str(r.id or "-"), workload_label(r), m.dataset or "-", r.spec.device, str(r.spec.batch_size),
            _num(r.spec.effective_lr(), "{:g}"), str(m.epochs or 0),
            _pct(m.final_accuracy), _pct(m.best_accuracy), _pct(m.target_accuracy),
            _num(m.seconds_to_target), "-" if m.epochs_to_target is None else str(m.epochs_to_target),
            _num(m.train_seconds), _num(m.eval_seconds), _pct(m.input_fraction), _status(r.status),
        ))
    return table


def speedup_table(rows: Sequence[dict[str, Any]]) -> Table:
    table = Table(title="Speed-up over the CPU (samples/s ratio)", header_style="bold")
    for name in ("workload", "device", "batch", "prec", "speed-up"):
        table.add_column(name, justify="right" if name in ("batch", "speed-up") else "left")
    for row in rows:
        table.add_row(*_cells(clip(row["workload"], NAME_CHARS), clip(row["device"], NAME_CHARS),
                              str(row["batch_size"]), row["precision"], f"{row['speedup']:.2f}x"))
    return table


def workloads_table(rows: Sequence[dict[str, Any]]) -> Table:
    table = Table(header_style="bold")
    for name in ("name", "task", "input", "data set", "default batch", "params",
                 "train GFLOP/sample", "options", "origin"):
        table.add_column(name, overflow="fold")
    for w in rows:
        flops = w["train_flops_per_sample"]
        table.add_row(*_cells(
            w["name"], w["task"], "x".join(map(str, w["input_shape"])),
            f"{w['dataset']} ({w['dataset_train_size']:,})", str(w["default_batch"]),
            "-" if w["params"] is None else f"{w['params']:,}",
            "-" if flops is None else f"{flops / 1e9:.3f}",
            ", ".join(f"{k}={v}" for k, v in w["options"].items()) or "-", w["origin"],
        ))
    return table


def devices_table(rows: Sequence[dict[str, Any]]) -> Table:
    table = Table(header_style="bold")
    for name in ("id", "kind", "name", "memory", "frameworks"):
        table.add_column(name)
    for d in rows:
        table.add_row(*_cells(d["id"], d.get("kind") or "-", d.get("name") or "-",
                              format_bytes(d.get("memory_bytes")),
                              ", ".join(d.get("frameworks") or []) or "none (no framework build sees it)"))
    return table


def result_detail(r: Result, machine: dict[str, Any] | None, roofline: Any = None) -> Table:
    """Every summary field of one result, for `rigbench results show`; with `roofline`
    (analysis/roofline.TrialRoofline) its MFU and roofline lines too."""
    r = clip_result(r)
    machine = clip_value(machine, NAME_CHARS)
    table = Table(show_header=False, title=literal(f"trial {r.id}: {r.spec.label()}"))
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in r.row().items():
        if key == "ranks":  # a table of its own (ranks_table)
            continue
        if isinstance(value, float):
            value = f"{value:.6g}"
        if key == "workload":
            value += unknown_mark(value)
        table.add_row(*_cells(key, "-" if value is None else str(value)))
    table.add_row(*_cells("measure options", r.spec.measure.model_dump_json()))
    table.add_row(*_cells("raw step times", f"{len(r.step_times_s)} kept"))
    table.add_row(*_cells("raw tracker samples", f"{len(r.tracker_samples)} kept"))
    if machine:
        table.add_row(*_cells("machine", f"{machine.get('cpu_model')} | {machine.get('cpu_cores_logical')} "
                                         f"logical cores | {format_bytes(machine.get('ram_bytes'))} RAM | "
                                         f"{machine.get('os')}"))
        for gpu in machine.get("gpus") or []:
            table.add_row(*_cells("gpu", f"{gpu.get('name')} {format_bytes(gpu.get('memory_bytes'))} "
                                         f"driver {gpu.get('driver')}"))
    if roofline is not None:
        for key, value in roofline_lines(roofline):
            table.add_row(*_cells(key, value))
    return table


def ranks_table(r: Result) -> Table:
    """Each rank's record of a data-parallel trial (Result.ranks), for `rigbench results show`."""
    table = Table(header_style="bold", title=literal(f"trial {r.id}: its {len(r.ranks)} ranks"))
    for name in ("rank", "host", "status", "steps", "step ms mean", "median", "no-sync ms", "comm share",
                 "RSS MiB", "alloc MiB", "CPU %", "parameters"):
        table.add_column(name, justify="left" if name in ("host", "status", "parameters") else "right")
    for rank in r.ranks:
        status = rank.status + (" (stopped)" if rank.collateral else "")
        table.add_row(*_cells(str(rank.rank), rank.host or "-", status, str(rank.steps), _fmt(rank.step_time_ms_mean),
                              _fmt(rank.step_time_ms_median), _fmt(rank.nosync_step_time_ms_median),
                              _fmt(rank.comm_share), _fmt(rank.rss_peak_mib, 0), _fmt(rank.allocator_peak_mib, 0),
                              _fmt(rank.cpu_util_pct, 1), (rank.param_digest or "-")[:12]))
    return table


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if digits < 3 else f"{value:.4g}"


# --------------------------------------------------------------------------- calibrate, roofline


def tflops(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e12:.3g} TFLOP/s"


def gbs(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e9:.3g} GB/s"


_CALIBRATION_NAMES = {"matmul": "matmul", "memory_bandwidth": "memory bandwidth",
                      "h2d_pageable": "host->device, pageable", "h2d_pinned": "host->device, pinned",
                      "d2h_pageable": "device->host, pageable", "d2h_pinned": "device->host, pinned"}


def _calibration_how(m: dict[str, Any]) -> str:
    d = m.get("detail", {})
    if m["kind"] == "matmul":
        n = d.get("peak_n", d.get("best_n"))  # best_n: calibrations stored before the largest-size rule
        best = next(s for s in d["sizes"] if s["n"] == n)
        return (f"n={n} (of {', '.join(str(s['n']) for s in d['sizes'])}); median of "
                f"{d['repeats']} repeats x {best['iterations']} matmul{'s' * (best['iterations'] != 1)}")
    counted = "read + written" if m["kind"] == "memory_bandwidth" else "one way"
    return f"{format_bytes(d['buffer_bytes'])} copy, bytes {counted}; median of {d['repeats']}"


def calibration_table(calibration: dict[str, Any]) -> Table:
    """One device's calibration (`rigbench calibrate`): each ceiling with its unit and how it was measured."""
    threads = calibration.get("threads")
    table = Table(title=literal(f"{calibration['device']}: {clip(str(calibration['device_name']), NAME_CHARS)}"
                                + (f" ({threads} threads)" if threads and calibration["device"] == "cpu" else "")),
                  header_style="bold")
    for name in ("measurement", "precision", "value", "how"):
        table.add_column(name, justify="right" if name == "value" else "left", overflow="fold")
    for m in calibration["measurements"]:
        if m["status"] == "ok":
            value = tflops(m["value"]) if m["unit"] == "FLOP/s" else gbs(m["value"])
            how = _calibration_how(m)
        elif m["status"] == "n/a":
            value, how = "n/a (host memory)", ""
        else:
            value, how = m["status"], m.get("detail", {}).get("reason", "")
        # literal: error messages may hold [brackets] that rich would read as markup
        table.add_row(*_cells(_CALIBRATION_NAMES.get(m["kind"], m["kind"]), m.get("precision") or "",
                              value, clip(how, ERROR_CHARS)))
    return table


def _roof_text(roof: Any) -> str:
    """"memory-bound, ceiling 1.2 TFLOP/s (34% of it)", or the known peak when no ceiling."""
    if roof is None:
        return "-"
    if roof.bound is None:
        missing = "peak" if roof.peak_flops is None else "bandwidth"
        return f"no {missing}" + (f"; peak {tflops(roof.peak_flops)}" if roof.peak_flops else "")
    text = f"{roof.bound}, ceiling {tflops(roof.ceiling_flops)}"
    return text + (f" ({roof.of_ceiling:.0%} of it)" if roof.of_ceiling is not None else "")


def _mfu(roof: Any) -> str:
    return "-" if roof is None or roof.mfu is None else f"{roof.mfu:.1%}"


def roofline_lines(roof: Any) -> list[tuple[str, str]]:
    """(field, value) lines of one trial's roofline (analysis/roofline.TrialRoofline)."""
    spec_name = f" ({roof.spec.name})" if roof.spec else ""
    return [
        ("achieved FLOP/s", tflops(roof.achieved_flops)),
        ("MFU (spec sheet)", _mfu(roof.spec) + spec_name),
        ("MFU (calibrated)", _mfu(roof.calibrated)),
        ("arithmetic intensity", "-" if roof.intensity is None else
         f"{roof.intensity:.3g} FLOP/byte ({roof.step_flops / 1e9:.4g} GFLOP / {roof.step_bytes / 1e6:.4g} MB per step, bytes estimated)"),
        ("roofline (spec sheet)", _roof_text(roof.spec)),
        ("roofline (calibrated)", _roof_text(roof.calibrated)),
        ("roofline notes", "; ".join(roof.notes) or "-"),
        *(("WARNING", w) for w in getattr(roof, "warnings", [])),
    ]


def roofline_table(rows: Sequence[tuple[Result, Any]]) -> Table:
    """`rigbench roofline`: per trial, achieved FLOP/s, MFU, intensity and the bound that limits it."""
    table = Table(title="Roofline (FLOPs counted, bytes estimated; see docs/COMPARING.md)", header_style="bold")
    for name in ("id", "workload", "device", "batch", "prec", "achieved", "MFU spec", "MFU calib.",
                 "FLOP/byte", "spec-sheet roof", "calibrated roof"):
        table.add_column(name, justify="right" if name in ("id", "batch", "achieved", "MFU spec",
                                                          "MFU calib.", "FLOP/byte") else "left")
    for r, roof in rows:
        r = clip_result(r)
        table.add_row(*_cells(str(r.id), workload_label(r), r.spec.device, str(r.spec.batch_size), r.spec.precision,
                              tflops(roof.achieved_flops), _mfu(roof.spec), _mfu(roof.calibrated),
                              _num(roof.intensity, "{:.3g}"), _roof_text(roof.spec), _roof_text(roof.calibrated)))
    return table
