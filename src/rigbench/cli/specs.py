"""`rigbench specs`: the shipped hardware spec sheets (rigbench/analysis/data/hardware.toml)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any
from urllib.parse import urlparse

import typer

from rigbench.analysis.specs import (
    CLOCKS,
    KINDS,
    PRECISION_KEYS,
    HardwareSpec,
    all_specs,
    fp32_flops_by_clock,
    lookup,
    peak_flops,
)
from rigbench.cli.common import app, handles_usage_errors
from rigbench.cli.console import out
from rigbench.errors import UsageError
from rigbench.json_text import strict_json
from rigbench.reports.table_fit import Column, FitTable


def _tflops(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if value >= 10 else f"{value:.2f}" if value >= 1 else f"{value:.3g}"


def _num(value: float | None, fmt: str = "{:,.0f}") -> str:
    return "-" if value is None else fmt.format(value)


def source_domains(source: str) -> str:
    """The web sites a source cites ('nvidia.com, techpowerup.com'), or 'document' without URLs."""
    hosts = [urlparse(url).netloc.removeprefix("www.") for url in re.findall(r"https?://[^\s,;]+", source)]
    return ", ".join(dict.fromkeys(hosts)) or "document"


def specs_table(rows: list[HardwareSpec]) -> FitTable:
    """One line per device: dense peaks (TFLOP/s), memory, bandwidth, power, year, where from."""
    from rigbench.reports.cells import cells

    table = FitTable([
        Column("name", cut=True), Column("kind", priority=40), Column("fp32", "right"),
        Column("tf32", "right", priority=55), Column("fp16", "right", priority=60), Column("bf16", "right", priority=58),
        # memory_gib: GPU DRAM in binary sizes (the data file's header), so GiB; bandwidth in 10^9 B/s
        Column("memory GiB", "right", priority=50, short="GiB"), Column("GB/s", "right", priority=65),
        Column("TDP W", "right", priority=45, short="W"), Column("year", "right", priority=35),
        Column("source", priority=30, cut=True),
    ], title="Hardware spec sheets (dense peaks, TFLOP/s; * = derived, see `rigbench specs NAME`)", more="--json")
    for spec in rows:
        peaks = [_tflops(spec.peak_tflops.get(k)) + ("*" if k in spec.derived else "") for k in PRECISION_KEYS]
        table.add_row(*cells(spec.name, spec.kind, *peaks, _num(spec.memory_gib, "{:g}"),
                             _num(spec.memory_bandwidth_gbs, "{:,.4g}"), _num(spec.tdp_w), _num(spec.launch_year, "{}"),
                             source_domains(spec.source)))
    return table


def _detail(spec: HardwareSpec, asked: str) -> str:
    lines = [f"{spec.name} ({spec.kind}, {spec.vendor})  <- best match for {asked!r}"]
    for key in PRECISION_KEYS:
        if key in spec.peak_tflops:
            mark = "  (derived here, see notes)" if key in spec.derived else ""
            lines.append(f"  {key:<5} {spec.peak_tflops[key]:>10,g} TFLOP/s dense{mark}")
    clocks = fp32_flops_by_clock(spec)
    if clocks:
        lines.append("  fp32 by clock: " + ", ".join(f"{flops / 1e12:g} TFLOP/s at {CLOCKS[c]}" for c, flops in clocks.items())
                     + f" ({spec.cores} cores x {spec.fma_units:g} FMA x {spec.fma_width} lanes x 2 FLOPs x clock)")
    if not spec.peak_tflops:
        lines.append("  no published peak FLOP/s: `rigbench calibrate` measures one")
    all_core = f", all-core {spec.all_core_clock_ghz:g}" if spec.all_core_clock_ghz else ""
    cpu = [f"{spec.cores} cores" if spec.cores else "", f"{spec.threads} threads" if spec.threads else "",
           f"{spec.base_clock_ghz:g}-{spec.boost_clock_ghz:g} GHz{all_core}" if spec.base_clock_ghz and spec.boost_clock_ghz else ""]
    facts = [("memory", _num(spec.memory_gib, "{:g} GiB")), ("bandwidth", _num(spec.memory_bandwidth_gbs, "{:,g} GB/s")),
             ("TDP", _num(spec.tdp_w, "{:g} W")), ("launched", _num(spec.launch_year, "{}")),
             ("cpu", ", ".join(c for c in cpu if c) or "-"),
             ("geekbench opencl", _num(spec.geekbench_opencl, "{:,}")), ("aliases", ", ".join(spec.aliases) or "-")]
    lines += [f"  {label}: {value}" for label, value in facts if value != "-"]
    lines.append(f"  source: {spec.source}")
    if spec.notes:
        lines.append(f"  notes: {spec.notes}")
    return "\n".join(lines)


def _as_json(spec: HardwareSpec) -> dict[str, Any]:
    row = dataclasses.asdict(spec)
    row["peak_flops"] = {k: peak_flops(spec, k) for k in spec.peak_tflops}  # FLOP/s, for scripts
    row["fp32_flops_by_clock"] = fp32_flops_by_clock(spec) or None          # CPUs: per clock
    return row


@app.command(short_help="Published hardware specs, each with its source.")
@handles_usage_errors
def specs(
    name: str | None = typer.Argument(None, help="A device name as torch, nvidia-smi, rocm-smi, /proc/cpuinfo or macOS reports it (e.g. \"NVIDIA GeForce GTX 1060 6GB\"); shows the best-matching sheet with its full source. Omit to list all."),
    kind: str | None = typer.Option(None, "--kind", help="Only gpu or only cpu sheets (Apple chips report one name for CPU and GPU; their sheets are the GPU's)."),
    as_json: bool = typer.Option(False, "--json", help="Print only JSON on stdout: every field, peaks in TFLOP/s and in FLOP/s."),
) -> None:
    """Published hardware specs (dense peak TFLOP/s per precision, memory, bandwidth, TDP, year), each with its source."""
    if kind is not None and kind not in KINDS:
        raise UsageError(f"--kind must be gpu or cpu, got {kind!r}")
    if name is None:
        rows = [s for s in all_specs() if kind is None or s.kind == kind]
        if as_json:
            print(strict_json([_as_json(s) for s in rows], indent=2))
        else:
            out.print(specs_table(rows))
        return
    spec = lookup(name, kind=kind)
    if spec is None:
        raise UsageError(f"no spec sheet matches {name!r}; `rigbench specs` lists the known devices "
                         f"(unknown hardware: `rigbench calibrate` measures its peaks)")
    if as_json:
        print(strict_json(_as_json(spec), indent=2))
    else:
        out.print(_detail(spec, name), highlight=False, markup=False)
