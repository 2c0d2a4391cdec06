"""This process's memory as the kernel will hold it to: the machine's RAM, or less where a
control group caps it (a container: Docker's --memory, Kubernetes' limits, a systemd slice).

psutil reports the host's RAM inside a container too, so without this a max-batch search
in a 4 GiB container on a 24 GiB host would size its default limit from the host's memory (and
meet the kernel's out-of-memory killer rather than its own cap's clean `oom`), and the warm
start would keep idle servers by the host's size. The cgroup files are read from `root`
(default /sys/fs/cgroup), so the tests give a folder of their own in the kernel's format.
"""

from __future__ import annotations

import sys
from pathlib import Path

import psutil

#: Where the kernel shows this process's control groups (v2: one hierarchy; v1: `memory/`).
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: cgroup v1 writes "no limit" as the largest page-aligned 64-bit number, 9223372036854771712.
_NO_LIMIT_V1 = 2**62


def _number(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None  # v2 writes "max" for no limit


def cgroup_limit(root: Path = CGROUP_ROOT) -> tuple[int, int] | None:
    """(limit, usage) in bytes of the control group this process is in, or None where none
    caps it (or none can be read: not Linux, no permission)."""
    for limit_file, usage_file in (("memory.max", "memory.current"),  # v2
                                   ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes")):  # v1
        limit = _number(root / limit_file)
        if limit is not None and limit < _NO_LIMIT_V1:
            return limit, _number(root / usage_file) or 0
    return None


def total_memory(root: Path = CGROUP_ROOT) -> int:
    """The RAM this process may use in all: the machine's, or its control group's limit if lower."""
    capped = cgroup_limit(root)
    total = int(psutil.virtual_memory().total)
    return min(total, capped[0]) if capped else total


def available_memory(root: Path = CGROUP_ROOT) -> int:
    """The RAM free for this process now: the machine's available memory, or what its control
    group's limit leaves above the group's usage if that is less."""
    capped = cgroup_limit(root)
    available = int(psutil.virtual_memory().available)
    return min(available, max(0, capped[0] - capped[1])) if capped else available


def memory_cap_missing() -> str | None:
    """None where a trial's memory can be capped (Linux: RLIMIT_AS, runner/memory_cap.apply_memory_limit),
    else why not, for a one-line refusal: macOS accepts RLIMIT_AS (or rejects it with EINVAL)
    but never enforces it, and Windows has no such limit."""
    if sys.platform.startswith("linux"):
        return None
    why = {"darwin": "macOS does not enforce it", "win32": "Windows has none"}.get(sys.platform, f"this is {sys.platform}")
    return f"a trial's memory is capped with Linux's address-space limit (RLIMIT_AS), and {why}"


def memory_limit_refusal() -> str | None:
    """The line that refuses --memory-limit where memory_cap_missing, else None."""
    why = memory_cap_missing()
    return f"--memory-limit cannot work here: {why}; run without it, or on Linux" if why else None
