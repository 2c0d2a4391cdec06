"""Hardware spec sheets: published peak FLOP/s, memory, bandwidth and power per device.

The figures live in `data/hardware.toml` (one `[[device]]` table per row, each with a
source); its header states the conventions (dense peaks only, which unit a peak refers
to, GB vs GiB). This module loads that file once, validates every row, and finds the
row for a device name as torch, NVML, ROCm, /proc/cpuinfo or macOS report it. A CPU row
states its clocks and FMA units rather than a FLOP figure; its fp32 peak is computed here, at
the max turbo for `peak_tflops` and at every published clock by `fp32_flops_by_clock`.

Matching works on words, not characters: a device name and each alias are lower-cased,
stripped of vendor words ("NVIDIA", "GeForce", "Intel(R)", "Core(TM)", clock speeds...)
and split into words; an alias matches when all its words occur in the name. The match
with the most words wins, so "RTX 4070 Ti" beats "RTX 4070". A name carrying a variant
word the alias lacks ("Ti", "Super", "Laptop", "PCIe", "Max"...) never matches it: an
"RTX 4090 Laptop GPU" is not a desktop RTX 4090, and unknown hardware gives None
(callers then use calibrated peaks).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from rigbench.spec import Result

PRECISION_KEYS = ("fp32", "tf32", "fp16", "bf16")
KINDS = ("gpu", "cpu")
VENDORS = ("NVIDIA", "AMD", "Intel", "Apple")

# Words that say nothing about which device it is (vendor and brand names, filler; "inter" is
# the thesis's own typo, "Inter(R) Core(TM) i7-8650U").
_NOISE = frozenset({
    "nvidia", "geforce", "amd", "ati", "radeon", "intel", "inter", "core", "apple", "tesla",
    "cpu", "gpu", "processor", "graphics", "with", "@", "r", "tm", "the",
})
# Words naming a variant of a model: a name with one of these only matches aliases that have it
# ("RTX 4090 D" is not an RTX 4090; "GeForce GTX TITAN X" (Maxwell) is not the Pascal "TITAN X").
_VARIANTS = frozenset({
    "ti", "super", "xt", "xtx", "gre", "d", "laptop", "mobile", "notebook", "mobility", "maxq",
    "pro", "max", "ultra", "nvl", "pcie", "sxm", "sxm2", "sxm4", "sxm5", "gtx",
})
_ROW_KEYS = {"name", "kind", "vendor", "aliases", "peak_tflops", "memory_gib", "memory_bandwidth_gbs",
             "tdp_w", "launch_year", "geekbench_opencl", "source", "notes", "cores", "threads",
             "base_clock_ghz", "boost_clock_ghz", "all_core_clock_ghz", "fma_units", "fma_width", "derived"}
#: CPU clock assumptions for peaks, fastest first, and how output names them.
CLOCKS = {"max_turbo": "max turbo", "all_core": "all-core turbo", "base": "base clock"}


@dataclass(frozen=True)
class HardwareSpec:
    """One device's spec sheet. Peaks are dense (no sparsity), in TFLOP/s, by precision key."""

    name: str                      # canonical, e.g. "NVIDIA H100 SXM5 80GB"
    kind: str                      # "gpu" | "cpu"
    vendor: str                    # "NVIDIA" | "AMD" | "Intel" | "Apple"
    aliases: tuple[str, ...]       # word patterns that identify it in device names
    peak_tflops: dict[str, float] = field(hash=False)  # dense, by key: "fp32", "tf32", "fp16", "bf16"
    memory_gib: float | None       # memory as the vendor sells it ("80GB"; see the data file header)
    memory_bandwidth_gbs: float | None   # GB/s (10^9 bytes per second)
    tdp_w: float | None
    launch_year: int | None
    geekbench_opencl: int | None
    source: str                    # URL(s) or document the figures come from
    notes: str = ""
    cores: int | None = None       # CPUs: physical cores
    threads: int | None = None     # CPUs: hardware threads
    base_clock_ghz: float | None = None
    boost_clock_ghz: float | None = None   # CPUs: the max single-core turbo
    all_core_clock_ghz: float | None = None  # CPUs: turbo with every core busy, only where published
    fma_units: float | None = None  # CPUs: multiply-add issues per core per cycle (see the data file)
    fma_width: int | None = None    # CPUs: FP32 lanes per multiply-add unit (8 for 256-bit AVX)
    derived: tuple[str, ...] = field(default=())  # precision keys computed here, not published (see notes)


class SpecDataError(ValueError):
    """The shipped spec file is malformed; the message names the row and field."""


def normalize(name: str) -> tuple[str, ...]:
    """The words of a device name that identify it: lower case, no vendor words or clock speeds."""
    text = name.lower().replace("(r)", " ").replace("(tm)", " ").replace("®", " ").replace("™", " ")
    text = re.sub(r"max[\s-]?q\b", "maxq", text)
    text = re.sub(r"\d+(\.\d+)?\s*[gm]hz\b", " ", text)           # "@ 1.90GHz"
    text = re.sub(r"(\d+)\s*(gb|g)\b", r"\1gb", text)                # "6 GB" -> "6gb"
    text = re.sub(r"(\d)(ti|xtx|xt)\b", r"\1 \2", text)             # "1050Ti" -> "1050 ti"
    text = re.sub(r"[^a-z0-9.@]+", " ", text)
    return tuple(w for w in text.split() if w not in _NOISE)


def _words(alias: str) -> frozenset[str]:
    return frozenset(normalize(alias))


def _number(row: dict[str, Any], key: str, where: str, *, integer: bool = False) -> Any:
    value = row.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        raise SpecDataError(f"{where}: {key} must be a {'whole ' if integer else ''}number, got {value!r}")
    if value <= 0:
        raise SpecDataError(f"{where}: {key} must be positive, got {value!r}")
    return value


def _parse_row(row: dict[str, Any], index: int) -> HardwareSpec:
    """One [[device]] table -> HardwareSpec, or SpecDataError naming the row."""
    where = f"hardware.toml device #{index + 1} ({row.get('name', '?')!r})"
    unknown = set(row) - _ROW_KEYS
    if unknown:
        raise SpecDataError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    for key in ("name", "kind", "vendor", "source"):
        if not isinstance(row.get(key), str) or not row[key].strip():
            raise SpecDataError(f"{where}: {key} must be a non-empty string")
    if row["kind"] not in KINDS:
        raise SpecDataError(f"{where}: kind must be one of {KINDS}, got {row['kind']!r}")
    if row["vendor"] not in VENDORS:
        raise SpecDataError(f"{where}: vendor must be one of {VENDORS}, got {row['vendor']!r}")
    aliases = row.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and _words(a) for a in aliases):
        raise SpecDataError(f"{where}: aliases must be a list of names with at least one identifying word")
    peaks = row.get("peak_tflops", {})
    if not isinstance(peaks, dict):
        raise SpecDataError(f"{where}: peak_tflops must be a table")
    bad = set(peaks) - set(PRECISION_KEYS)
    if bad:
        raise SpecDataError(f"{where}: peak_tflops has unknown precision(s) {', '.join(sorted(bad))}")
    for key in peaks:
        _number(peaks, key, f"{where} peak_tflops")
    peaks = {k: float(v) for k, v in peaks.items()}
    derived = row.get("derived", [])
    if not isinstance(derived, list):
        raise SpecDataError(f"{where}: derived must list precision keys present in peak_tflops")
    cpu_fp32 = _cpu_fp32_tflops(row, where)
    if cpu_fp32 is not None:
        if "fp32" in peaks:
            raise SpecDataError(f"{where}: fp32 follows from cores, fma_units, fma_width and "
                                f"boost_clock_ghz; leave it out of peak_tflops")
        peaks["fp32"] = cpu_fp32
        derived = [*derived, "fp32"] if "fp32" not in derived else derived
    if not set(derived) <= set(peaks):
        raise SpecDataError(f"{where}: derived must list precision keys present in peak_tflops")
    if derived and "derived" not in row.get("notes", "").lower():
        raise SpecDataError(f"{where}: derived figures need a note saying how they were derived")
    return HardwareSpec(
        name=row["name"], kind=row["kind"], vendor=row["vendor"], aliases=tuple(aliases),
        peak_tflops=peaks,
        memory_gib=_number(row, "memory_gib", where),
        memory_bandwidth_gbs=_number(row, "memory_bandwidth_gbs", where),
        tdp_w=_number(row, "tdp_w", where),
        launch_year=_number(row, "launch_year", where, integer=True),
        geekbench_opencl=_number(row, "geekbench_opencl", where, integer=True),
        source=row["source"].strip(), notes=str(row.get("notes", "")).strip(),
        cores=_number(row, "cores", where, integer=True), threads=_number(row, "threads", where, integer=True),
        base_clock_ghz=_number(row, "base_clock_ghz", where),
        boost_clock_ghz=_number(row, "boost_clock_ghz", where),
        all_core_clock_ghz=_number(row, "all_core_clock_ghz", where),
        fma_units=_number(row, "fma_units", where),
        fma_width=_number(row, "fma_width", where, integer=True),
        derived=tuple(derived),
    )


def _cpu_fp32_tflops(row: dict[str, Any], where: str) -> float | None:
    """A CPU row's FP32 peak at its max turbo, from its FMA units (None without them)."""
    units, width = _number(row, "fma_units", where), _number(row, "fma_width", where, integer=True)
    all_core = _number(row, "all_core_clock_ghz", where)
    if units is None and width is None and all_core is None:
        return None
    if row.get("kind") != "cpu":
        raise SpecDataError(f"{where}: fma_units, fma_width and all_core_clock_ghz describe CPUs only")
    base, boost = _number(row, "base_clock_ghz", where), _number(row, "boost_clock_ghz", where)
    cores = _number(row, "cores", where, integer=True)
    if units is None or width is None or cores is None or base is None or boost is None:
        raise SpecDataError(f"{where}: a CPU peak needs cores, fma_units, fma_width, base_clock_ghz "
                            f"and boost_clock_ghz")
    if not base <= (all_core or base) <= boost:
        raise SpecDataError(f"{where}: clocks must run base <= all-core <= boost, got "
                            f"{base}, {all_core}, {boost} GHz")
    return _cpu_flops(cores, units, width, boost) / 1e12


def _cpu_flops(cores: int, fma_units: float, fma_width: int, ghz: float) -> float:
    """cores x FMA units x FP32 lanes x 2 FLOPs (multiply and add) x clock, in FLOP/s."""
    # Whole MHz and a 10-digit round keep hand-checkable figures exact (4 x 2 x 8 x 2 x 1.9 GHz
    # is 243.2e9, not 243.20000000000002e9).
    return float(f"{cores * fma_units * fma_width * 2 * round(ghz * 1000) * 1e6:.10g}")


def parse_specs(text: str) -> list[HardwareSpec]:
    """Parse and validate the text of a hardware.toml; SpecDataError names the first bad row."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecDataError(f"hardware.toml is not valid TOML: {exc}") from None
    rows = data.get("device")
    if not isinstance(rows, list) or not rows:
        raise SpecDataError("hardware.toml has no [[device]] tables")
    specs = [_parse_row(row, i) for i, row in enumerate(rows)]
    seen: dict[frozenset[str], str] = {}
    for spec in specs:
        for pattern in (spec.name, *spec.aliases):
            words = _words(pattern)
            other = seen.setdefault(words, spec.name)
            if other != spec.name:
                raise SpecDataError(f"hardware.toml: {spec.name!r} and {other!r} share the pattern {pattern!r}")
    return specs


@lru_cache(maxsize=1)
def _load() -> tuple[HardwareSpec, ...]:
    text = resources.files("rigbench.analysis").joinpath("data/hardware.toml").read_text(encoding="utf-8")
    return tuple(parse_specs(text))


@lru_cache(maxsize=1)
def _patterns() -> tuple[tuple[frozenset[str], int, HardwareSpec], ...]:
    """(words, characters, row) for every name and alias, computed once."""
    return tuple((_words(p), len(p), spec) for spec in _load() for p in (spec.name, *spec.aliases))


def all_specs() -> list[HardwareSpec]:
    """Every shipped spec sheet, in file order (loaded and validated once)."""
    return list(_load())


@lru_cache(maxsize=1024)  # asked per result: 20,000 results of a few devices took a report 6 s of 80
def lookup(device_name: str, kind: str | None = None) -> HardwareSpec | None:
    """The spec sheet for a reported device name, or None for hardware not in the file.

    `kind` ("gpu" or "cpu") restricts the search: Apple silicon reports the same name for its
    CPU and its GPU, and the file's Apple rows describe the GPU. A name joining two devices
    with "+" (a published "GPU + CPU" setup) is searched part by part; pass `kind` to pick one.
    """
    best: tuple[int, int, HardwareSpec] | None = None
    for part in device_name.split("+"):
        name_words = frozenset(normalize(part))
        variants = name_words & _VARIANTS
        for words, chars, spec in _patterns():
            if (kind is not None and spec.kind != kind) or not words <= name_words or variants - words:
                continue
            # Most words wins; between equally many, the longer pattern is the more specific one.
            if best is None or (len(words), chars) > best[:2]:
                best = (len(words), chars, spec)
    return best[2] if best else None


def peak_flops(spec: HardwareSpec, precision: str) -> float | None:
    """Dense peak in FLOP/s (not TFLOP/s) for a precision key; None when the sheet has no figure."""
    tflops = spec.peak_tflops.get(precision)
    # Through the decimal text, so 66.9 TFLOP/s is exactly 6.69e13 (66.9 * 1e12 is 6.690000000000001e13).
    return None if tflops is None else float(f"{tflops!r}e12")


def fp32_flops_by_clock(spec: HardwareSpec) -> dict[str, float]:
    """A CPU's FP32 peak in FLOP/s at each clock it publishes, keyed as CLOCKS (fastest first):
    `max_turbo` (the single-core turbo on every core: the sheet's fp32 peak, an upper bound),
    `all_core` (only where the row gives an all-core turbo) and `base`. Empty for rows without
    FMA units (GPUs)."""
    if not (spec.fma_units and spec.fma_width and spec.cores and spec.base_clock_ghz and spec.boost_clock_ghz):
        return {}
    clocks = {"max_turbo": spec.boost_clock_ghz, "all_core": spec.all_core_clock_ghz, "base": spec.base_clock_ghz}
    return {key: _cpu_flops(spec.cores, spec.fma_units, spec.fma_width, ghz)
            for key, ghz in clocks.items() if ghz}


def spec_sheet(result: Result) -> HardwareSpec | None:
    """The spec-sheet row of the device a result ran on, or None (no device name, or
    hardware not in the sheets)."""
    if not result.device_name:
        return None
    return lookup(result.device_name, kind="cpu" if result.spec.device == "cpu" else "gpu")
