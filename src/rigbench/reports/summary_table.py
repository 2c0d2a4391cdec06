"""The top of the report as text cells: the per-workload summary table (analysis/summary.py
decides what is in it) and the machines, each described once with the runs measured on it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rigbench.analysis.contention import is_busy
from rigbench.analysis.summary import DeviceComparison, MachineEntry, SummaryRow
from rigbench.analysis.trials import is_quick_protocol, trials_text
from rigbench.fingerprint import instruction_sets
from rigbench.reports.cells import interval, rate, share
from rigbench.reports.trial_lines import process_label
from rigbench.spec import Result
from rigbench.units import format_bytes


def format_duration(seconds: float | None) -> str:
    """12.3 s, 4.5 min, 2.1 h, 3.2 days: the unit a person reads an epoch time in."""
    if seconds is None:
        return "-"
    for limit, unit, size in ((120, "s", 1), (7200, "min", 60), (172800, "h", 3600)):
        if seconds < limit:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds / 86400:,.1f} days"


def device_text(r: Result) -> str:
    """"NVIDIA H100 80GB HBM3 (cuda:0)", or the device id alone when no name was recorded."""
    return f"{r.device_name} ({r.spec.device})" if r.device_name else r.spec.device


def config_text(r: Result) -> str:
    """What the configuration was beyond its device: framework, precision, compiled or eager and
    batch ("jax · bf16 · eager · batch 128"), then data parallel ("data parallel x2": the speed
    is every process's together), channels-last and threads asked for where set."""
    spec = r.spec
    return " · ".join(part for part in (
        spec.framework, spec.precision, spec.compile_label or "eager", f"batch {spec.batch_size}",
        process_label(r) if spec.is_data_parallel else "", "channels-last" if spec.channels_last else "",
        f"{spec.threads} thread{'s' * (spec.threads != 1)}" if spec.threads else "") if part)


def comparison_text(c: DeviceComparison) -> str:
    """One device against another at the configurations both ran, the faster named first:
    "like for like: NVIDIA H200 1.25× NVIDIA H100 80GB HBM3 (1 configuration both ran)"."""
    if c.ratio is None:
        return f"{c.other} ran none of the same configurations: no device comparison"
    if c.ratio >= 1:
        faster, slower, ratio, low, high = c.device, c.other, c.ratio, c.low, c.high
    else:
        faster, slower, ratio = c.other, c.device, 1 / c.ratio
        low, high = (1 / c.high if c.high else None), (1 / c.low if c.low else None)
    if c.shared == 1:
        how = "1 configuration both ran"
    else:
        how = f"median of {c.shared} configurations both ran" + (
            f", {low:,.2f}–{high:,.2f}×" if low is not None and high is not None else "")
    return f"like for like: {faster} {ratio:,.2f}× {slower} ({how})"


def _marks(trials: Sequence[Result]) -> str:
    """" (busy)" after the trials a figure is when one was timed on a busy machine (contention.py),
    " (quick)" when one was timed with a shorter window than the default protocol (`--quick`: a
    real figure that knows less), " (busy, quick)" for both."""
    marks = [mark for mark, test in (("busy", lambda t: is_busy(t.metrics)), ("quick", is_quick_protocol))
             if any(test(t) for t in trials)]
    return f" ({', '.join(marks)})" if marks else ""


def summary_cells(rows: Sequence[SummaryRow]) -> list[dict[str, Any]]:
    """The summary table's cells, one dict per workload (the page and its test read these);
    samples/s rounded as `results list` and `results show` round them (cells.interval)."""
    cells = []
    for row in rows:
        best, base = row.best, row.cpu_base
        speedup = "-"
        if row.speedup_over_cpu is not None and base is not None:
            speedup = ("1.00× (the CPU is fastest)" if base is row.configuration
                       else f"{row.speedup_over_cpu:,.2f}×")
        tokens = row.configuration.tokens_per_s
        cells.append({
            "workload": row.workload, "trial": best.id, "run_id": best.run_id,
            "device": device_text(best), "devices_note": "; ".join(comparison_text(c) for c in row.devices),
            "config": config_text(best),
            "samples_per_s": interval(row.samples_per_s, None), "samples_note": trials_text(row.configuration.ids) + _marks(row.configuration.trials),
            "tokens_per_s": "" if tokens is None else f"{rate(tokens)} tokens/s",
            "epoch": format_duration(row.epoch_seconds),
            "epoch_note": f"one epoch of {row.dataset}" if row.dataset else "",
            "speedup": speedup, "on_cpu": best.spec.device == "cpu",
            "speedup_note": f"over CPU {trials_text(base.ids)}{_marks(base.trials)} ({interval(base.samples_per_s, None)} samples/s, "
                            f"{device_text(base.newest)})" if base is not None
                            else "no CPU trial on its machine (the CPU trials here are another machine's)"
                            if row.cpu_elsewhere else "no CPU trial",
            "mfu": share(row.mfu),
            "mfu_note": f"of the {row.mfu_source} peak" if row.mfu_source else "no peak known for this device",
            "memory": f"{row.peak_memory_mib:,.0f} MiB" if row.peak_memory_mib is not None else "-",
            "memory_note": "peak GPU memory" if row.memory_kind == "device" else "peak RSS (host)",
            "trials": row.trials, "recommendation": row.recommendation or "",
        })
    return cells


def _software(results: Sequence[Result]) -> str:
    software: dict[str, str] = {}
    for r in results:
        for key, value in r.software.items():
            if value not in (None, ""):
                software.setdefault(f"{r.spec.framework} {key}" if key != r.spec.framework else key, str(value))
    return ", ".join(f"{k} {v}" for k, v in software.items()) or "-"


def machine_cards(entries: Sequence[MachineEntry], results: Sequence[Result],
                  commands: Mapping[str, str]) -> list[dict[str, Any]]:
    """One card per machine: a one-line headline, its fingerprint's fields (the newest run's)
    and its runs (id, trials, start, command)."""
    cards = []
    for entry in entries:
        m = {k: v for k, v in (entry.fingerprint or {}).items() if v not in (None, "")}
        gpus = [f"{g.get('name')} ({format_bytes(g.get('memory_bytes'))}, driver {g.get('driver')})"
                for g in m.get("gpus") or []]
        members = [r for r in results if r.run_id in entry.run_ids]
        runs = []
        for run_id in entry.run_ids:
            mine = [r for r in members if r.run_id == run_id]
            runs.append({"id": run_id, "trials": len(mine),
                         "started": min((r.created_at for r in mine), default="-")[:19].replace("T", " "),
                         "command": commands.get(run_id, "")})
        cores = ", ".join(f"{m[k]} {word}" for k, word in (
            ("cpu_cores_physical", "physical"), ("cpu_cores_logical", "logical"),
            ("cpu_cores_usable", "usable")) if k in m) or None
        sets = instruction_sets(m)
        cards_note = (f" ({len(entry.gpu_serials)} cards over its runs)"
                      if len(entry.gpu_serials) > len(m.get("gpus") or []) else "")
        headline = " · ".join(str(v) for v in (
            f"{m.get('cpu_model')} ({sets})" if sets and m.get("cpu_model") else m.get("cpu_model"),
            f"{m['cpu_cores_logical']} logical cores" if "cpu_cores_logical" in m else None,
            format_bytes(m["ram_bytes"]) + " RAM" if "ram_bytes" in m else None,
            ("; ".join(str(g.get("name")) for g in m.get("gpus") or []) or "no GPU") + cards_note) if v)
        cards.append({
            "recorded": entry.fingerprint is not None, "host": m.get("hostname") or "unknown host",
            "headline": headline if entry.fingerprint is not None else "machine not recorded",
            "trials": entry.trials, "runs": runs,
            "fields": [
                ("host", m.get("hostname")), ("OS", m.get("os")),
                ("CPU", m.get("cpu_model")), ("architecture", m.get("cpu_arch")), ("instruction sets", sets),
                ("cores", cores),
                ("RAM", format_bytes(m["ram_bytes"]) if "ram_bytes" in m else None),
                ("GPUs", "; ".join(gpus) or "no GPU"),
                ("Python", " ".join(str(m[k]) for k in ("python_implementation", "python_version")
                                    if k in m) or None),
                ("packages", ", ".join(f"{k} {v}" for k, v in (m.get("packages") or {}).items() if v) or "-"),
                ("trial software", _software(members)),
            ],
        })
    return cards
