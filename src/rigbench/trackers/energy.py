"""Energy while a trial runs: cumulative counters read at every tracker sample.

The method follows ml-energy's Zeus: read a cumulative energy counter and take the difference
over the measured window; sample power and integrate it only where there is no counter.

- NVIDIA GPU: NVML's total-energy counter (`nvmlDeviceGetTotalEnergyConsumption`, millijoules
  since the driver loaded; Volta and newer). On older GPUs the counter query fails and the
  board power samples are integrated over time instead (trapezoid rule), marked
  `nvml-power-integrated` so nobody mistakes it for a counter reading.
- AMD GPU: amdsmi's energy accumulator (hw/amd.energy_uj), when NVML has no such GPU.
- CPU package and DRAM: RAPL through powercap sysfs (hw/rapl.py), summed over sockets. A
  package counter measures the whole package: other processes' work is in it too.

Each reading adds cumulative joules since the meter started to the tracker's sample:
`gpu_energy_j`, `cpu_energy_j`, `dram_energy_j` (absent sources are left out).
trackers/summary.py takes the window's energy as the difference of these cumulative series
interpolated at the window's edges, so the measured window need not fall on a sample.

Nothing here estimates: a source that cannot be read is unavailable, with the reason in
`notes`, never replaced by a guess (CodeCarbon's half-TDP substitution is what this avoids).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rigbench.hw import amd, rapl
from rigbench.hw.nvml import nvml_error

#: Sample keys of cumulative joules, one per source.
GPU_KEY, CPU_KEY, DRAM_KEY = "gpu_energy_j", "cpu_energy_j", "dram_energy_j"

#: The method names stored in a result's `energy_method`.
GPU_COUNTER, GPU_POWER, AMD_COUNTER = "nvml-counter", "nvml-power-integrated", "amdsmi-counter"

#: The shortest window whose energy is not flagged "approximate". NVML's energy counter changed
#: every 100 ms on an H100 (docs/results/gpu-h100.md, section 5; RAPL every ~1 ms): each window
#: edge, interpolated between two readings, can be off by up to one update, so a window of fewer
#: than ten updates can be off by more than 10-20% (the H200's 0.1-0.3 s windows read 1.32-1.43x
#: power x time, docs/results/gpu-h200.md, section 5).
MIN_ENERGY_WINDOW_S = 1.0


class EnergyMeter:
    """Cumulative energy of the trial's GPU (when it has one) and of the CPU packages and DRAM.

    `nvml`/`gpu_handle`: an initialised NVML module and device handle (None: no NVIDIA GPU).
    `amd`: (initialised amdsmi module, GPU handle) for an AMD GPU instead (None: none).
    `rapl_root`: the powercap root (tests pass a fake tree; None skips RAPL altogether).
    After construction, `methods` says what is read ({"gpu": "nvml-counter", "cpu": "rapl"})
    and `notes` why a source is not ({"cpu": "no powercap interface ..."}).
    """

    def __init__(self, nvml: Any = None, gpu_handle: Any = None,
                 rapl_root: Path | None = rapl.POWERCAP_ROOT, amd_gpu: tuple[Any, Any] | None = None) -> None:
        self.methods: dict[str, str] = {}
        self.notes: dict[str, str] = {}
        self._nvml, self._handle = nvml, gpu_handle
        self._gpu_start_mj: float | None = None
        self._power_j = 0.0  # integrated power (GPUs without a counter)
        self._last_power: tuple[float, float] | None = None  # (t, watts)
        self._amd = amd_gpu
        self._amd_start_uj = 0.0
        if nvml is not None and gpu_handle is not None:
            self._open_gpu()
        elif amd_gpu is not None:
            self._open_amd()
        self._rapl: rapl.RaplCounter | None = None
        self._rapl_kinds: dict[str, str] = {}
        if rapl_root is not None:
            self._open_rapl(rapl_root)

    def _open_gpu(self) -> None:
        err = nvml_error(self._nvml)
        try:
            self._gpu_start_mj = float(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle))
            self.methods["gpu"] = GPU_COUNTER
        except (err, AttributeError, TypeError, ValueError) as exc:
            # Pre-Volta GPUs answer NOT_SUPPORTED: integrate the power samples instead.
            self.methods["gpu"] = GPU_POWER
            self.notes["gpu"] = f"no NVML energy counter ({_reason(exc)}): board power samples integrated over time"

    def _open_amd(self) -> None:
        assert self._amd is not None
        try:
            self._amd_start_uj = amd.energy_uj(*self._amd)
            self.methods["gpu"] = AMD_COUNTER
        except Exception as exc:  # AmdSmiLibraryException: not supported (VM guests), ...
            self._amd = None
            self.notes["gpu"] = f"no amdsmi energy counter ({_reason(exc)})"

    def _open_rapl(self, root: Path) -> None:
        domains, reason = rapl.find_domains(root)
        if not domains:
            self.notes["cpu"] = reason or "no RAPL domain found"
            return
        try:
            self._rapl = rapl.RaplCounter(domains)
        except OSError as exc:
            self.notes["cpu"] = f"RAPL counters unreadable: {exc}"
            return
        self._rapl_kinds = {d.name: d.kind for d in domains}
        kinds = sorted(set(self._rapl_kinds.values()))
        self.methods["cpu"] = "rapl-" + "+".join(kinds)

    def read(self, t: float, gpu_power_w: float | None = None) -> dict[str, float]:
        """Cumulative joules per source at time `t` (the sample's time); `gpu_power_w` is the
        same sample's board power, integrated when the GPU has no energy counter."""
        out: dict[str, float] = {}
        method = self.methods.get("gpu")
        if method == GPU_COUNTER:
            try:
                now_mj = float(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle))
            except Exception as exc:  # GPU lost mid-run: stop reading it, say why
                self.methods.pop("gpu")
                self.notes["gpu"] = f"NVML energy counter stopped answering: {_reason(exc)}"
            else:
                assert self._gpu_start_mj is not None
                out[GPU_KEY] = (now_mj - self._gpu_start_mj) / 1000.0
        elif method == AMD_COUNTER and self._amd is not None:
            try:
                out[GPU_KEY] = (amd.energy_uj(*self._amd) - self._amd_start_uj) / 1e6
            except Exception as exc:
                self.methods.pop("gpu")
                self.notes["gpu"] = f"amdsmi energy counter stopped answering: {_reason(exc)}"
        elif method == GPU_POWER and gpu_power_w is not None:
            if self._last_power is not None:
                t0, w0 = self._last_power
                self._power_j += (t - t0) * (w0 + gpu_power_w) / 2.0
            self._last_power = (t, gpu_power_w)
            out[GPU_KEY] = self._power_j
        if self._rapl is not None:
            try:
                joules = self._rapl.read()
            except OSError as exc:
                self._rapl = None
                self.methods.pop("cpu", None)
                self.notes["cpu"] = f"RAPL counters stopped answering: {exc}"
            else:
                for name, value in joules.items():
                    key = CPU_KEY if self._rapl_kinds.get(name) == "package" else DRAM_KEY
                    out[key] = out.get(key, 0.0) + value
        return out

    def describe(self) -> tuple[str | None, str | None]:
        """(`energy_method`, `energy_note`) as a result stores them: what was read, and why
        anything was not; None where there is nothing to say."""
        method = "; ".join(f"{source}: {m}" for source, m in sorted(self.methods.items())) or None
        note = "; ".join(f"{source}: {n}" for source, n in sorted(self.notes.items())) or None
        return method, note


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
