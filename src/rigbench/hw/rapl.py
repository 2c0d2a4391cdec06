"""CPU package and DRAM energy counters (RAPL) through Linux powercap sysfs.

Zones live in /sys/class/powercap as `intel-rapl:N` (one per package, or per die on
multi-die parts, then named `package-N-die-M`; AMD Zen uses the same names) with subzones
`intel-rapl:N:M` ("core", "uncore", "dram"), listed both at the top level and nested in
their parent. Only package zones and dram subzones are returned: core and uncore are
parts of the package (adding them would count their energy twice), and `psys` (the whole
platform on some laptops) overlaps package + DRAM. `intel-rapl-mmio:*` zones repeat the
package counter on some Intel laptops and are skipped. Anything missing or unreadable
gives [] and a reason a user can act on, never a guess. Nothing here imports a framework.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

POWERCAP_ROOT = Path("/sys/class/powercap")

#: `intel-rapl:N` (a package or psys) or `intel-rapl:N:M` (a subzone); not intel-rapl-mmio.
_ZONE_ID = re.compile(r"^intel-rapl:(\d+)(?::(\d+))?$")
#: "package-0", or "package-0-die-1" where the kernel counts each die separately.
_PACKAGE_NAME = re.compile(r"^package-(\d+(?:-die-\d+)?)$")

_PERMISSION_REASON = (
    "RAPL energy counters are readable by root only (Platypus, CVE-2020-8694): run as root "
    "or `sudo chmod a+r /sys/class/powercap/intel-rapl:*/energy_uj`"
)


@dataclass(frozen=True)
class RaplDomain:
    """One counter: name is kind + "-" + socket ("package-0", "dram-1"; with a die suffix
    such as "package-0-die-1" on multi-die packages, which the kernel counts per die)."""

    name: str
    kind: str  # "package" | "dram"
    energy_path: Path
    max_energy_uj: int  # the counter wraps to 0 past this value


def _read_text(path: Path) -> str:
    """The one place a sysfs file is read (tests make it raise to simulate permissions)."""
    with open(path) as f:
        return f.read()


def _read_uj(path: Path) -> int:
    """An integer sysfs value; ValueError naming the file when it is not a number."""
    text = _read_text(path).strip()
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{path} reads {text[:40]!r}, not a number") from None


def find_domains(root: Path = POWERCAP_ROOT) -> tuple[list[RaplDomain], str | None]:
    """The readable package and DRAM domains, and None; or [] and the reason there are none,
    as one short sentence a user can act on.

    Readability is tested by reading energy_uj, not from the mode bits: root reads a
    0400 file regardless, and a user is refused since Linux 5.10 (CVE-2020-8694).
    """
    if not root.is_dir():
        if not sys.platform.startswith("linux"):
            return [], f"RAPL is read on Linux only (through {root}); this is {sys.platform}"
        return [], (
            f"no powercap interface ({root} is missing): RAPL is not exposed on this "
            "machine (virtual machines usually hide it)"
        )
    try:
        zones = _zone_dirs(root)
    except OSError as e:
        return [], f"cannot list {root}: {e.strerror or e}"
    if not zones:
        return [], (
            f"{root} has no intel-rapl zone: the RAPL driver is not loaded "
            "(`sudo modprobe intel_rapl_msr`) or this CPU has no RAPL"
        )
    found: list[RaplDomain] = []
    problems: list[str] = []
    denied = False
    for zone_id, path in sorted(zones.items()):
        named = _name_of(zones, zone_id, path)
        if named is None:
            continue
        name, kind = named
        try:
            _read_uj(path / "energy_uj")  # the real test of readability
            max_uj = _read_uj(path / "max_energy_range_uj")
        except PermissionError:
            denied = True
            continue
        except FileNotFoundError as e:
            problems.append(f"{e.filename} is missing")
            continue
        except OSError as e:
            problems.append(f"{e.filename or path} cannot be read ({e.strerror or e})")
            continue
        except ValueError as e:
            problems.append(str(e))
            continue
        if max_uj <= 0:
            problems.append(f"{path / 'max_energy_range_uj'} is not positive")
            continue
        found.append(RaplDomain(name, kind, path / "energy_uj", max_uj))
    if found:  # packages first, each kind in zone order (the sort is stable)
        return sorted(found, key=lambda d: d.kind != "package"), None
    if denied:
        return [], _PERMISSION_REASON
    if problems:
        return [], f"no usable RAPL zone: {problems[0]}"
    return [], f"{root} has intel-rapl zones but no package or DRAM counter"


def _zone_dirs(root: Path) -> dict[tuple[int, int], Path]:
    """Zone id (package, subzone; subzone -1 for a top-level zone) -> its directory.

    Subzones appear both at the top level and nested in their parent; keying by the zone
    id reads each zone once whichever listing (or symlink) it came from.
    """
    zones: dict[tuple[int, int], Path] = {}
    for entry in root.iterdir():
        m = _ZONE_ID.match(entry.name)
        if m is None or not entry.is_dir():
            continue
        zones.setdefault(_key(m), entry)
        if m.group(2) is None:
            for child in entry.iterdir():
                c = _ZONE_ID.match(child.name)
                if c is not None and c.group(2) is not None and child.is_dir():
                    zones.setdefault(_key(c), child)
    return zones


def _key(m: re.Match[str]) -> tuple[int, int]:
    return int(m.group(1)), int(m.group(2)) if m.group(2) is not None else -1


def _name_of(
    zones: dict[tuple[int, int], Path], zone_id: tuple[int, int], path: Path
) -> tuple[str, str] | None:
    """(domain name, kind) for a package zone or a dram subzone; None for anything else."""
    try:
        own = _read_text(path / "name").strip()
        if zone_id[1] < 0:
            m = _PACKAGE_NAME.match(own)
            return (own, "package") if m else None
        parent = zones.get((zone_id[0], -1))
        if own != "dram" or parent is None:
            return None
        m = _PACKAGE_NAME.match(_read_text(parent / "name").strip())
    except OSError:  # a zone without a readable name cannot be placed: skip it
        return None
    return (f"dram-{m.group(1)}", "dram") if m else None


class RaplCounter:
    """Cumulative joules per domain since construction, wrap-corrected.

    The constructor reads every counter once (the baseline). A raw value below the previous
    one means the counter wrapped past max_energy_uj, so the step is
    max_energy_uj + 1 - previous + new. That assumes at most one wrap between two reads: a
    package counter wraps after minutes at full power (2^32 energy units, about 262 kJ), and
    the energy tracker's 10 Hz sampling reads far more often than that. (The true period is
    max_energy_uj plus one energy unit of about 61 uJ: a per-wrap error below 0.1 mJ.)
    A read that fails (the file vanished, EIO) raises OSError: the caller stops using it.
    """

    def __init__(self, domains: list[RaplDomain]) -> None:
        self.domains = list(domains)
        self._last = {d.name: _counter(d.energy_path) for d in self.domains}
        self._total_uj = dict.fromkeys(self._last, 0)

    def read(self) -> dict[str, float]:
        """Joules since the baseline per domain name."""
        for d in self.domains:
            raw = _counter(d.energy_path)
            prev = self._last[d.name]
            step = raw - prev if raw >= prev else d.max_energy_uj + 1 - prev + raw
            self._total_uj[d.name] += step
            self._last[d.name] = raw
        return {name: uj / 1e6 for name, uj in self._total_uj.items()}


def _counter(path: Path) -> int:
    """A counter read for RaplCounter: every failure is an OSError, as its contract says."""
    try:
        return _read_uj(path)
    except ValueError as e:
        raise OSError(str(e)) from None


def total_by_kind(joules: dict[str, float]) -> dict[str, float]:
    """Joules summed per kind over all sockets: {"package": ..., "dram": ...}."""
    totals: dict[str, float] = {}
    for name, value in joules.items():
        kind = name.split("-", 1)[0]
        totals[kind] = totals.get(kind, 0.0) + value
    return totals
