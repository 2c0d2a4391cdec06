"""The shipped hardware spec sheets: schema, sources, device-name lookup, peak_flops, `rigbench specs`."""

import csv
import io
import json
import re
from importlib import resources

import pytest
from typer.testing import CliRunner

from rigbench import cli
from rigbench.analysis.specs import (
    PRECISION_KEYS,
    SpecDataError,
    all_specs,
    fp32_flops_by_clock,
    lookup,
    normalize,
    parse_specs,
    peak_flops,
)

SPECS = all_specs()
BY_NAME = {s.name: s for s in SPECS}


# ---------------------------------------------------------------- schema and sources

def test_every_row_has_a_source_url_and_sane_figures():
    assert len(SPECS) >= 60
    assert len(BY_NAME) == len(SPECS), "duplicate names"
    for s in SPECS:
        assert re.search(r"https?://\S+", s.source), f"{s.name}: source names no document URL"
        assert set(s.peak_tflops) <= set(PRECISION_KEYS)
        assert all(v > 0 for v in s.peak_tflops.values()), s.name
        assert s.launch_year is None or 2010 <= s.launch_year <= 2026, s.name
        assert s.geekbench_opencl is None, f"{s.name}: a Geekbench score needs a cited source"
        if s.derived:
            assert "derived" in s.notes.lower(), s.name
        if s.kind == "gpu" and s.vendor != "Apple":
            assert s.memory_gib and s.memory_bandwidth_gbs and s.peak_tflops.get("fp32"), s.name


def test_matrix_precisions_are_not_below_fp32_unless_a_note_says_why():
    for s in (s for s in SPECS if s.kind == "gpu"):
        fp32 = s.peak_tflops.get("fp32")
        for key in ("fp16", "bf16"):
            low = s.peak_tflops.get(key)
            if fp32 and low is not None and low < fp32:
                assert f"{key} is" in s.notes and "1/64" in s.notes, f"{s.name}: {key} < fp32 unexplained"
        if "tf32" in s.peak_tflops and "fp16" in s.peak_tflops:
            assert s.peak_tflops["tf32"] <= s.peak_tflops["fp16"], s.name


def test_cpu_peaks_follow_the_documented_formula():
    cpus = [s for s in SPECS if s.kind == "cpu"]
    assert len(cpus) >= 7
    for s in cpus:
        assert s.cores and s.threads and s.base_clock_ghz and s.boost_clock_ghz, s.name
        assert s.fma_units and s.fma_width, s.name
        assert s.derived == ("fp32",), s.name
        flops_per_cycle = s.peak_tflops["fp32"] * 1000 / (s.cores * s.boost_clock_ghz)
        assert flops_per_cycle == pytest.approx(round(flops_per_cycle), abs=1e-6), s.name
        assert round(flops_per_cycle) in (8, 16, 32), s.name   # per core: FX module-shared FPU, AVX, AVX2+FMA
        assert flops_per_cycle == pytest.approx(s.fma_units * s.fma_width * 2), s.name
        clocks = fp32_flops_by_clock(s)
        assert clocks["max_turbo"] == peak_flops(s, "fp32"), s.name
        assert clocks["base"] <= clocks.get("all_core", clocks["base"]) <= clocks["max_turbo"], s.name
        assert ("all_core" in clocks) == (s.all_core_clock_ghz is not None), s.name
    # i7-8650U by hand: 4 cores x 2 FMA units x 8 fp32 lanes x 2 FLOPs x 4.2 GHz = 537.6 GFLOP/s
    # at the single-core turbo, x 1.9 GHz base = 243.2 GFLOP/s; Intel publishes no all-core turbo.
    i7 = BY_NAME["Intel Core i7-8650U"]
    assert (i7.cores, i7.fma_units, i7.fma_width) == (4, 2, 8)
    assert peak_flops(i7, "fp32") == 537.6e9
    assert fp32_flops_by_clock(i7) == {"max_turbo": 537.6e9, "base": 243.2e9}
    assert fp32_flops_by_clock(BY_NAME["NVIDIA GeForce GTX 1060 6GB"]) == {}


CPU_ROW = """
[[device]]
name = "Chip A"
kind = "cpu"
vendor = "Intel"
aliases = ["Chip A"]
cores = 4
base_clock_ghz = 2.0
boost_clock_ghz = 4.0
fma_units = 2
fma_width = 8
source = "https://example.com"
notes = "derived"
"""


def test_a_cpu_row_computes_its_peak_per_clock():
    chip = parse_specs(CPU_ROW.replace("fma_width = 8", "fma_width = 8\nall_core_clock_ghz = 3.1"))[0]
    assert chip.peak_tflops == {"fp32": 0.512} and chip.derived == ("fp32",)   # 4 x 2 x 8 x 2 x 4.0 GHz
    assert fp32_flops_by_clock(chip) == {"max_turbo": 512e9, "all_core": 396.8e9, "base": 256e9}


@pytest.mark.parametrize("text, message", [
    (CPU_ROW.replace("cores = 4", "cores = 4\npeak_tflops = { fp32 = 0.512 }"), "leave it out of peak_tflops"),
    (CPU_ROW.replace("fma_width = 8\n", ""), "needs cores, fma_units, fma_width"),
    (CPU_ROW.replace("fma_width = 8", "fma_width = 8\nall_core_clock_ghz = 4.5"), "base <= all-core <= boost"),
    (CPU_ROW.replace("fma_width = 8", "fma_width = 8.5"), "fma_width must be a whole number"),
    (CPU_ROW.replace('kind = "cpu"', 'kind = "gpu"'), "describe CPUs only"),
])
def test_a_malformed_cpu_row_is_refused(text, message):
    with pytest.raises(SpecDataError, match=re.escape(message)):
        parse_specs(text)


def test_every_alias_resolves_to_its_own_row():
    for s in SPECS:
        for pattern in (s.name, *s.aliases):
            assert lookup(pattern) is s, f"{pattern!r} resolves to {lookup(pattern)}"


ROW = """
[[device]]
name = "{name}"
kind = "gpu"
vendor = "NVIDIA"
aliases = [{aliases}]
peak_tflops = {{ {peaks} }}
source = "{source}"
"""


def _row(name="Card A", aliases='"Card A"', peaks="fp32 = 1.0", source="https://example.com"):
    return ROW.format(name=name, aliases=aliases, peaks=peaks, source=source)


@pytest.mark.parametrize("text, message", [
    (_row(source=""), "source must be a non-empty string"),
    (_row(peaks="fp32 = -1.0"), "must be positive"),
    (_row(peaks="fp8 = 10.0"), "unknown precision(s) fp8"),
    (_row() + _row(name="Card B", aliases='"card-a"'), "share the pattern"),
    (_row().replace('kind = "gpu"', 'kind = "tpu"'), "kind must be one of"),
    ("[[device]\nname=", "not valid TOML"),
])
def test_a_malformed_file_is_refused_naming_the_row(text, message):
    with pytest.raises(SpecDataError, match=re.escape(message)) as caught:
        parse_specs(text)
    if "TOML" not in message:
        assert "Card" in str(caught.value)   # the bad row is named


def test_the_shipped_file_parses_with_the_public_parser():
    text = resources.files("rigbench.analysis").joinpath("data/hardware.toml").read_text(encoding="utf-8")
    assert [s.name for s in parse_specs(text)] == [s.name for s in SPECS]


# ---------------------------------------------------------------- devices of the seeds and reference tables

def _published_devices():
    """The `device` column of the shipped published tables (copied from ../shared/reference)."""
    names = set()
    for table in ("community_epoch_times.csv", "yin2020_cpu_vs_gpu.csv", "yin2020_batch_sweep.csv"):
        text = resources.files("rigbench.analysis").joinpath(f"data/published/{table}").read_text(encoding="utf-8")
        for row in csv.DictReader(io.StringIO(text)):
            names.update(part.strip() for part in row["device"].split("+"))
    return names


def test_every_device_of_the_published_tables_resolves():
    devices = _published_devices()
    assert {"GTX 1060", "i7-8650U", "AMD FX-8320", "NVIDIA T4"} <= devices
    for name in devices:
        assert lookup(name) is not None, name


SEED_NAMES = {  # as the seeds and reference files spell them -> row
    "GTX 1060": "NVIDIA GeForce GTX 1060 6GB",                      # 003 (Yin 2020)
    "Inter(R) Core(TM) i7-8650U CPU @ 1.90GHz": "Intel Core i7-8650U",  # 003, typo included
    "GeForce GTX 1080": "NVIDIA GeForce GTX 1080",                   # 003 table, 002 (Shi G1080)
    "GeForce GTX 1070": "NVIDIA GeForce GTX 1070",
    "GeForce GTX 1050Ti": "NVIDIA GeForce GTX 1050 Ti",
    "GeForce GTX 1050": "NVIDIA GeForce GTX 1050",
    "NVIDIA TITAN X": "NVIDIA TITAN X (Pascal)",
    "gtx980": "NVIDIA GeForce GTX 980",                              # shi2016_table7.csv columns
    "gtx1080": "NVIDIA GeForce GTX 1080",
    "Tesla K80": "NVIDIA Tesla K80 (one GK210 GPU)",
    "Intel Core i7-3820": "Intel Core i7-3820",                      # Shi desktop CPU
    "Intel Xeon E5-2630 v3": "Intel Xeon E5-2630 v3",                # Shi server CPU
    "Intel core i5-8250U": "Intel Core i5-8250U",                    # 001
    "Nvidia GeForce GT-1030": "NVIDIA GeForce GT 1030",
    "Nvidia T4 Tensor core": "NVIDIA T4",
    "NVIDIA GeForce MX150": "NVIDIA GeForce MX150",
    "Ryzen 5 3600": "AMD Ryzen 5 3600",                              # 000
    "AMD Radeon RX 6500 XT": "AMD Radeon RX 6500 XT",
    "Nvidia RTX 2060 mobile": "NVIDIA GeForce RTX 2060 Mobile",
    "AMD FX-8320": "AMD FX-8320",                                    # 004
    "RX 460 2GB": "AMD Radeon RX 460 2GB",
    "RX 580 8 GB": "AMD Radeon RX 580 8GB",
    "1060 6GB": None,   # bare model number without the GTX brand: deliberately not guessed
    "Intel i7-2600": "Intel Core i7-2600",
    "NVIDIA GT 640": "NVIDIA GeForce GT 640 (GK107, DDR3)",
}


@pytest.mark.parametrize("name, expected", SEED_NAMES.items())
def test_seed_device_names_resolve(name, expected):
    found = lookup(name)
    assert (found.name if found else None) == expected


# ---------------------------------------------------------------- realistic reported names

REPORTED = {
    "NVIDIA H100 80GB HBM3": "NVIDIA H100 SXM5 80GB",        # torch/NVML name of the SXM5 part
    "NVIDIA H100 PCIe": "NVIDIA H100 PCIe 80GB",
    "NVIDIA H200": "NVIDIA H200 SXM 141GB",
    "NVIDIA A100-SXM4-80GB": "NVIDIA A100 SXM4 80GB",
    "NVIDIA A100-SXM4-40GB": "NVIDIA A100 SXM4 40GB",
    "NVIDIA A100 80GB PCIe": "NVIDIA A100 PCIe 80GB",
    "NVIDIA A100-PCIE-40GB": "NVIDIA A100 PCIe 40GB",
    "Tesla V100-SXM2-16GB": "NVIDIA Tesla V100 SXM2 16GB",
    "Tesla V100-SXM2-32GB": "NVIDIA Tesla V100 SXM2 32GB",
    "Tesla V100-PCIE-16GB": "NVIDIA Tesla V100 PCIe 16GB",
    "Tesla V100S-PCIE-32GB": "NVIDIA Tesla V100S PCIe 32GB",
    "NVIDIA L4": "NVIDIA L4",
    "Tesla T4": "NVIDIA T4",
    "AMD Instinct MI300X": "AMD Instinct MI300X",
    "NVIDIA GeForce RTX 4090": "NVIDIA GeForce RTX 4090",
    "NVIDIA GeForce RTX 4070": "NVIDIA GeForce RTX 4070",
    "NVIDIA GeForce RTX 4070 Ti": "NVIDIA GeForce RTX 4070 Ti",
    "NVIDIA GeForce RTX 4070 Ti SUPER": "NVIDIA GeForce RTX 4070 Ti SUPER",
    "NVIDIA GeForce RTX 4070 SUPER": "NVIDIA GeForce RTX 4070 SUPER",
    "NVIDIA GeForce RTX 5070 Ti": "NVIDIA GeForce RTX 5070 Ti",
    "NVIDIA GeForce RTX 3060": "NVIDIA GeForce RTX 3060",
    "NVIDIA GeForce GTX 1060 6GB": "NVIDIA GeForce GTX 1060 6GB",
    "NVIDIA GeForce GTX 1060 3GB": "NVIDIA GeForce GTX 1060 3GB",
    "AMD Radeon RX 7900 XTX": "AMD Radeon RX 7900 XTX",
    "AMD Radeon RX 7900 XT": "AMD Radeon RX 7900 XT",
    "Radeon RX 6800 XT": "AMD Radeon RX 6800 XT",
    "Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz": "Intel Core i7-8650U",
    "Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz": "Intel Xeon E5-2630 v3",
    "AMD FX(tm)-8320 Eight-Core Processor": "AMD FX-8320",
    "AMD Ryzen 5 3600 6-Core Processor": "AMD Ryzen 5 3600",
    "Apple M2 Pro": "Apple M2 Pro (19-core GPU)",
    "Apple M2": "Apple M2 (10-core GPU)",
    "Apple M4 Max": "Apple M4 Max (40-core GPU)",
    "TITAN X (Pascal)": "NVIDIA TITAN X (Pascal)",
}


@pytest.mark.parametrize("name, expected", REPORTED.items())
def test_reported_device_names_resolve_to_the_right_row(name, expected):
    found = lookup(name)
    assert found is not None and found.name == expected
    assert lookup(name.upper()) is found   # case-insensitive


@pytest.mark.parametrize("name", [
    "AMD EPYC",                                   # this VM's cpuinfo: no model number, no sheet
    "AMD EPYC 7B13 64-Core Processor",
    "NVIDIA GeForce RTX 4090 Laptop GPU",         # laptop part != desktop card
    "NVIDIA GeForce RTX 4090 D",
    "NVIDIA GeForce RTX 3080 Ti",                 # Ti without a Ti row must not fall back to the base card
    "NVIDIA H100 NVL",
    "AMD Radeon RX 7900 GRE",
    "AMD Radeon RX 6800",                         # not the XT
    "GeForce GTX TITAN X",                        # Maxwell, not the Pascal TITAN X
    "NVIDIA GeForce GTX 1060 with Max-Q Design",
    "Apple M2 Ultra",
    "Intel(R) Core(TM) i7-2600K CPU @ 3.40GHz",
    "Quantum Flux Accelerator 9000",
    "",
])
def test_unknown_hardware_gives_none(name):
    assert lookup(name) is None


def test_kind_filter_separates_apple_cpu_from_gpu():
    assert lookup("Apple M2 Pro", kind="cpu") is None
    assert lookup("Apple M2 Pro", kind="gpu").kind == "gpu"
    assert lookup("Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz", kind="gpu") is None
    # a combined entry of the community table picks the part of the asked kind
    assert lookup("AMD Radeon RX 6500 XT + Ryzen 5 3600", kind="cpu").name == "AMD Ryzen 5 3600"
    assert lookup("AMD Radeon RX 6500 XT + Ryzen 5 3600", kind="gpu").name == "AMD Radeon RX 6500 XT"


def test_normalize_drops_vendor_words_and_clocks():
    assert normalize("Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz") == ("i7", "8650u")
    assert normalize("NVIDIA GeForce GTX 1050Ti 4 GB") == ("gtx", "1050", "ti", "4gb")


def test_peak_flops_is_in_flop_per_second():
    h100 = lookup("NVIDIA H100 80GB HBM3")
    assert peak_flops(h100, "bf16") == 989.4e12     # Hopper whitepaper, dense
    assert peak_flops(h100, "fp32") == 66.9e12
    assert peak_flops(lookup("Tesla V100-SXM2-16GB"), "tf32") is None   # Volta has no TF32
    assert peak_flops(lookup("NVIDIA GeForce GTX 1060 6GB"), "fp16") == 0.06836e12
    assert peak_flops(lookup("Apple M3"), "fp32") is None                # Apple publishes none


# ---------------------------------------------------------------- the command

def test_specs_command_shows_a_match_with_its_full_source():
    runner = CliRunner()
    shown = runner.invoke(cli.app, ["specs", "NVIDIA GeForce GTX 1060 6GB"])
    assert shown.exit_code == 0, shown.output
    assert "NVIDIA GeForce GTX 1060 6GB" in shown.stdout
    assert "https://www.techpowerup.com/gpu-specs/geforce-gtx-1060-6-gb.c2862" in shown.stdout
    assert "4.375 TFLOP/s" in shown.stdout
    assert "memory: 6 GiB" in shown.stdout  # memory_gib: the data file's binary sizes, not "6 GB"

    cpu = runner.invoke(cli.app, ["specs", "i7-8650U"])
    assert "fp32 by clock: 0.5376 TFLOP/s at max turbo, 0.2432 TFLOP/s at base clock" in cpu.stdout
    assert json.loads(runner.invoke(cli.app, ["specs", "i7-8650U", "--json"]).stdout)["fp32_flops_by_clock"] \
        == {"max_turbo": 537.6e9, "base": 243.2e9}

    assert "memory GiB" in runner.invoke(cli.app, ["specs", "--kind", "gpu"], env={"COLUMNS": "200"}).stdout
    listed = runner.invoke(cli.app, ["specs", "--kind", "cpu"])
    assert listed.exit_code == 0 and "Intel Core i7-8650U" in listed.stdout and "RTX" not in listed.stdout

    as_json = json.loads(runner.invoke(cli.app, ["specs", "--json"]).stdout)
    assert len(as_json) == len(SPECS)
    h100 = next(r for r in as_json if r["name"] == "NVIDIA H100 SXM5 80GB")
    assert h100["peak_flops"]["bf16"] == 989.4e12 and h100["peak_tflops"]["bf16"] == 989.4

    unknown = runner.invoke(cli.app, ["specs", "AMD EPYC"])
    assert unknown.exit_code == 2 and "no spec sheet matches" in unknown.stderr
    assert runner.invoke(cli.app, ["specs", "--kind", "tpu"]).exit_code == 2


def test_a_device_name_is_looked_up_in_the_sheets_once_however_many_results_ask():
    # roofline and report ask per result: 20,000 results of a few devices matched every name anew
    from rigbench.analysis.specs import spec_sheet
    from rigbench.spec import Result, TrialSpec

    results = [Result(run_id="r", created_at="t", status="ok", device_name=name,
                      spec=TrialSpec(workload="mlp", device="cuda:0", batch_size=8))
               for name in ["NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 4090"] * 50]
    lookup.cache_clear()
    found = [spec_sheet(r) for r in results]
    assert {s.name for s in found if s} == {"NVIDIA H100 SXM5 80GB", "NVIDIA GeForce RTX 4090"}
    assert lookup.cache_info().misses == 2
