"""A TDP-based energy estimate for the sources a trial could not measure (`--energy estimate`).

Only on request, and never mixed with a measurement: the estimate goes to its own metrics
(`energy_estimate_j`, `energy_estimate_per_sample_j`, `energy_estimate_basis`), while `energy_j`
stays the sum of what the counters read. CodeCarbon silently substitutes half the TDP for a CPU
it cannot read, and the substitute then looks like a measurement; here an estimate is asked for,
named as one, and states its basis.

The rule, per source that was not measured, over the measured window of `window_s` seconds:

- CPU: TDP_w x (busy hardware threads / the package's hardware threads) x window_s, where busy
  threads = `cpu_util_pct_mean`/100 x the machine's logical CPUs (the trial's process tree, as
  the tracker normalises it). On a bare-metal one-socket machine this is exactly TDP x
  `cpu_util_pct_mean`/100; dividing by the spec sheet's thread count instead of the machine's
  keeps a VM that sees 2 threads of a 64-thread package from being charged the whole TDP, and a
  two-socket machine from being charged one package.
- GPU without an energy counter and without power samples (a GPU with power samples is
  measured by integrating them): TDP_w x `gpu_util_pct_mean`/100 x window_s.
- DRAM is never estimated: spec sheets give no figure for it.

TDP comes from the spec sheets (analysis/specs.py, `tdp_w`), found with the same `lookup` the
roofline uses. Unknown hardware, or a row without a TDP, gives no estimate for that source and
a basis saying "no TDP known for <name>". TDP is a thermal design figure, not a measured draw:
real power at a given utilisation can be well below or (with turbo) above it.
"""

from __future__ import annotations

from dataclasses import dataclass

from rigbench.analysis.specs import lookup


@dataclass(frozen=True)
class SourceEstimate:
    """One source's estimate: joules (None when it could not be estimated) and why/how."""

    source: str  # "cpu" | "gpu"
    joules: float | None
    basis: str


@dataclass(frozen=True)
class EnergyEstimate:
    """Every unmeasured source's estimate. `joules` sums those that could be estimated (None
    when none could); `basis` joins each source's text with "; "."""

    sources: tuple[SourceEstimate, ...]

    @property
    def joules(self) -> float | None:
        values = [s.joules for s in self.sources if s.joules is not None]
        return sum(values) if values else None

    @property
    def basis(self) -> str | None:
        return "; ".join(f"{s.source}: {s.basis}" for s in self.sources) or None


def cpu_estimate(cpu_name: str | None, util_pct: float | None, logical_cpus: int,
                 window_s: float) -> SourceEstimate:
    """CPU package energy: TDP x busy threads / the package's threads x window (module rule)."""
    sheet = lookup(cpu_name, kind="cpu") if cpu_name else None
    if sheet is None or sheet.tdp_w is None:
        return SourceEstimate("cpu", None, f"no TDP known for {cpu_name or 'this CPU'}")
    if util_pct is None:
        return SourceEstimate("cpu", None, "no CPU-use figure over the window")
    busy = util_pct / 100.0 * logical_cpus
    # The sheet's threads (SMT included, as logical CPUs count them); its cores, else the
    # machine's own count, where a row lacks them.
    threads = sheet.threads or sheet.cores or logical_cpus
    joules = sheet.tdp_w * busy / threads * window_s
    return SourceEstimate("cpu", joules, f"TDP {sheet.tdp_w:g} W (spec sheet: {sheet.name}) x {busy:.1f} "
                                         f"of {threads} threads busy x {window_s:.1f} s")


def gpu_estimate(gpu_name: str | None, util_pct: float | None, window_s: float) -> SourceEstimate:
    """GPU board energy: TDP x `gpu_util_pct_mean`/100 x window (module rule)."""
    sheet = lookup(gpu_name, kind="gpu") if gpu_name else None
    if sheet is None or sheet.tdp_w is None:
        return SourceEstimate("gpu", None, f"no TDP known for {gpu_name or 'this GPU'}")
    if util_pct is None:
        return SourceEstimate("gpu", None, f"no utilisation figure for {sheet.name} (NVML only)")
    joules = sheet.tdp_w * util_pct / 100.0 * window_s
    return SourceEstimate("gpu", joules, f"TDP {sheet.tdp_w:g} W (spec sheet: {sheet.name}) x "
                                         f"{util_pct:.0f}% busy x {window_s:.1f} s")


def estimate_energy(window_s: float, *, cpu_measured: bool, cpu_name: str | None,
                    cpu_util_pct: float | None, logical_cpus: int, gpu: bool = False,
                    gpu_measured: bool = False, gpu_name: str | None = None,
                    gpu_util_pct: float | None = None) -> EnergyEstimate:
    """Estimates for the CPU and (when the trial ran on one, `gpu`) the GPU, each only when it
    was not measured. Both measured: no sources, so `joules` and `basis` are None."""
    sources = []
    if gpu and not gpu_measured:
        sources.append(gpu_estimate(gpu_name, gpu_util_pct, window_s))
    if not cpu_measured:
        sources.append(cpu_estimate(cpu_name, cpu_util_pct, logical_cpus, window_s))
    return EnergyEstimate(tuple(sources))
