"""A trial's memory cap (`--memory-limit`): RLIMIT_AS set in the trial's child after its
framework is imported, and the peak of what the cap counts (Linux only: hw/memory.py says
why not elsewhere)."""

from __future__ import annotations

from pathlib import Path

from rigbench.errors import BELOW_FRAMEWORK, UnsupportedError


def apply_memory_limit(limit_bytes: int) -> None:
    """Cap the address space so that allocations past the limit fail instead of swapping.

    RLIMIT_AS counts virtual memory, and a framework maps far more address space than it
    touches (libraries, thread stacks). So the cap is set after the framework is imported:
    current virtual size plus (limit - current resident size), i.e. the trial may touch
    about `limit_bytes` of memory in total. docs/METHODOLOGY.md explains the approximation.
    """
    import psutil  # core dependency; imported here to keep the child's start lean

    from rigbench.hw.memory import memory_cap_missing

    if why := memory_cap_missing():  # the launcher refuses it first (session.check_platform)
        raise UnsupportedError(f"--memory-limit: {why}")
    import resource  # POSIX only: after the check, which refuses Windows

    info = psutil.Process().memory_info()
    headroom = limit_bytes - info.rss
    if headroom <= 0:
        raise MemoryError(
            f"the memory limit ({limit_bytes / 2**20:.0f} MiB) {BELOW_FRAMEWORK} ({info.rss / 2**20:.0f} MiB)"
        )
    cap = info.vms + headroom
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    _capped.update(rss=info.rss, vms=info.vms)


#: The resident and address-space sizes when this process's memory cap was set (bytes).
_capped: dict[str, int] = {}


def capped_peak_bytes() -> int | None:
    """The peak of what the cap counts against --memory-limit: the resident memory when it was
    set plus the address space mapped since (VmPeak: RLIMIT_AS stops any mapping past the cap, so
    this never exceeds the limit). Max-batch budgets this, not the resident peak: address space
    reserved but never touched (allocator arenas, thread stacks) fails a trial just the same.
    None without a cap or without /proc (Linux only)."""
    if not _capped:
        return None
    try:
        status = Path("/proc/self/status").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmPeak:"):
            return _capped["rss"] + max(0, int(line.split()[1]) * 1024 - _capped["vms"])
    return None
