"""RAPL through powercap sysfs, against fake sysfs trees built the way the kernel lays them out:
zone directories under devices/, the class directory of symlinks to them, subzones both
nested in their parent and linked at the top level. The real code runs; only the hardware
is fake."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from rigbench.hw import rapl
from rigbench.hw.rapl import POWERCAP_ROOT, RaplCounter, find_domains, total_by_kind

MAX_UJ = 262143328850  # a real package's max_energy_range_uj (2^32 units of 61.04 uJ)


def _zone(parent: Path, zone_id: str, name: str, energy: str = "1000000") -> Path:
    zone = parent / zone_id
    zone.mkdir(parents=True)
    (zone / "name").write_text(name + "\n")
    (zone / "energy_uj").write_text(energy + "\n")
    (zone / "max_energy_range_uj").write_text(f"{MAX_UJ}\n")
    return zone


def _sysfs(tmp_path: Path, packages: list[str], subzones: list[str], extra: bool = True) -> Path:
    """/sys/class/powercap with a symlink per zone into /sys/devices/virtual/powercap/...

    packages[i] is the name of intel-rapl:i; each gets the subzones named in `subzones`.
    `extra` adds what must be ignored: the control-type directory, psys and an mmio zone.
    """
    devices = tmp_path / "devices" / "intel-rapl"
    devices.mkdir(parents=True)
    root = tmp_path / "class"
    root.mkdir()
    for i, name in enumerate(packages):
        zone = _zone(devices, f"intel-rapl:{i}", name)
        (root / zone.name).symlink_to(zone)
        for j, sub in enumerate(subzones):
            child = _zone(zone, f"intel-rapl:{i}:{j}", sub)
            (root / child.name).symlink_to(child)
    if extra:
        (root / "intel-rapl").symlink_to(devices)
        psys = _zone(devices, f"intel-rapl:{len(packages)}", "psys")
        (root / psys.name).symlink_to(psys)
        mmio = _zone(tmp_path / "devices" / "intel-rapl-mmio", "intel-rapl-mmio:0", "package-0")
        (root / mmio.name).symlink_to(mmio)
    return root


def _two_sockets(tmp_path: Path) -> Path:
    return _sysfs(tmp_path, ["package-0", "package-1"], ["core", "uncore", "dram"])


def _by_name(root: Path) -> dict[str, rapl.RaplDomain]:
    domains, reason = find_domains(root)
    assert reason is None
    return {d.name: d for d in domains}


def test_two_sockets_give_packages_and_dram_only(tmp_path: Path) -> None:
    root = _two_sockets(tmp_path)
    domains, reason = find_domains(root)
    assert reason is None
    assert [d.name for d in domains] == ["package-0", "package-1", "dram-0", "dram-1"]
    assert [d.kind for d in domains] == ["package", "package", "dram", "dram"]
    named = {d.name: d for d in domains}
    assert named["dram-1"].energy_path.resolve() == (
        tmp_path / "devices/intel-rapl/intel-rapl:1/intel-rapl:1:2/energy_uj"
    )
    assert all(d.max_energy_uj == MAX_UJ for d in domains)


def test_nested_only_subzones_are_found_and_read_once(tmp_path: Path) -> None:
    root = _two_sockets(tmp_path)
    for link in root.glob("intel-rapl:*:*"):  # subzones only nested in their parent now
        link.unlink()
    assert sorted(_by_name(root)) == ["dram-0", "dram-1", "package-0", "package-1"]


def test_dram_named_after_its_package_not_the_zone_id(tmp_path: Path) -> None:
    # A laptop-like order: psys first, the package at intel-rapl:1.
    root = _sysfs(tmp_path, ["psys", "package-0"], ["dram"], extra=False)
    assert sorted(_by_name(root)) == ["dram-0", "package-0"]


def test_multi_die_packages_keep_the_die_in_the_name(tmp_path: Path) -> None:
    root = _sysfs(tmp_path, ["package-0-die-0", "package-0-die-1"], ["dram"], extra=False)
    assert sorted(_by_name(root)) == [
        "dram-0-die-0", "dram-0-die-1", "package-0-die-0", "package-0-die-1"
    ]


def test_counter_reads_joules_since_the_baseline(tmp_path: Path) -> None:
    named = _by_name(_two_sockets(tmp_path))
    counter = RaplCounter(list(named.values()))
    assert counter.read() == dict.fromkeys(named, 0.0)
    named["package-0"].energy_path.write_text("3500000\n")  # +2.5 J from 1000000 uJ
    named["dram-1"].energy_path.write_text("1250000\n")  # +0.25 J
    first = counter.read()
    assert first["package-0"] == pytest.approx(2.5)
    assert first["dram-1"] == pytest.approx(0.25)
    assert first["package-1"] == 0.0
    named["package-0"].energy_path.write_text("4000000\n")  # cumulative: 3.0 J in all
    assert counter.read()["package-0"] == pytest.approx(3.0)


def test_counter_wraps_around(tmp_path: Path) -> None:
    named = _by_name(_two_sockets(tmp_path))
    package = named["package-0"]
    package.energy_path.write_text(f"{MAX_UJ - 500_000}\n")
    counter = RaplCounter([package])
    package.energy_path.write_text(f"{MAX_UJ - 100_000}\n")
    assert counter.read()["package-0"] == pytest.approx(0.4)
    package.energy_path.write_text("1500000\n")  # wrapped: 100_000 + 1 to max, then 1.5 J
    assert counter.read()["package-0"] == pytest.approx(0.4 + 0.100001 + 1.5)


def test_counter_read_failure_is_an_oserror(tmp_path: Path) -> None:
    named = _by_name(_two_sockets(tmp_path))
    counter = RaplCounter([named["package-0"], named["dram-0"]])
    named["dram-0"].energy_path.write_text("garbage\n")
    with pytest.raises(OSError, match="not a number"):
        counter.read()
    named["dram-0"].energy_path.unlink()
    with pytest.raises(OSError):
        counter.read()


def test_permission_error_gives_the_platypus_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _two_sockets(tmp_path)
    real_read = rapl._read_text

    def root_only(path: Path) -> str:  # what a user gets on Linux >= 5.10 (mode 0400)
        if path.name == "energy_uj":
            raise PermissionError(13, "Permission denied", str(path))
        return real_read(path)

    monkeypatch.setattr(rapl, "_read_text", root_only)
    domains, reason = find_domains(root)
    assert domains == []
    assert reason is not None
    assert "CVE-2020-8694" in reason
    assert "sudo chmod a+r /sys/class/powercap/intel-rapl:*/energy_uj" in reason


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root reads mode 000")
def test_real_unreadable_file_gives_the_platypus_reason(tmp_path: Path) -> None:
    root = _two_sockets(tmp_path)
    for f in (tmp_path / "devices").rglob("energy_uj"):
        f.chmod(0)
    domains, reason = find_domains(root)
    assert domains == [] and reason is not None and "CVE-2020-8694" in reason


def test_missing_root(tmp_path: Path) -> None:
    domains, reason = find_domains(tmp_path / "powercap")
    assert domains == []
    assert reason is not None and "is missing" in reason and "virtual machines" in reason


def test_missing_root_off_linux_says_linux_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rapl.sys, "platform", "darwin")
    domains, reason = find_domains(tmp_path / "powercap")
    assert domains == [] and reason is not None and "Linux only" in reason


def test_root_without_intel_rapl_zones(tmp_path: Path) -> None:
    root = tmp_path / "powercap"
    _zone(root, "intel-rapl-mmio:0", "package-0")  # mmio alone does not count
    (root / "dtpm").mkdir()
    domains, reason = find_domains(root)
    assert domains == []
    assert reason is not None and "no intel-rapl zone" in reason


def test_garbage_energy_skips_the_zone_and_names_the_file(tmp_path: Path) -> None:
    root = _sysfs(tmp_path, ["package-0", "package-1"], ["dram"], extra=False)
    bad = tmp_path / "devices/intel-rapl/intel-rapl:1/energy_uj"
    bad.write_text("n/a\n")
    assert sorted(_by_name(root)) == ["dram-0", "dram-1", "package-0"]
    for f in (tmp_path / "devices").rglob("energy_uj"):
        f.write_text("n/a\n")
    domains, reason = find_domains(root)
    assert domains == []
    assert reason is not None and "energy_uj" in reason and "not a number" in reason


def test_missing_max_energy_range_names_the_file(tmp_path: Path) -> None:
    root = _sysfs(tmp_path, ["package-0"], [], extra=False)
    (tmp_path / "devices/intel-rapl/intel-rapl:0/max_energy_range_uj").unlink()
    domains, reason = find_domains(root)
    assert domains == []
    assert reason is not None and "max_energy_range_uj is missing" in reason


def test_only_psys_and_core_is_no_counter(tmp_path: Path) -> None:
    root = _sysfs(tmp_path, ["psys"], ["core"], extra=False)
    domains, reason = find_domains(root)
    assert domains == []
    assert reason is not None and "no package or DRAM counter" in reason


def test_total_by_kind_sums_sockets() -> None:
    joules = {"package-0": 2.0, "package-1": 3.0, "dram-0": 0.5, "dram-1": 0.25}
    assert total_by_kind(joules) == {"package": 5.0, "dram": 0.75}


def test_this_machine_says_why_when_it_has_no_rapl() -> None:
    if POWERCAP_ROOT.is_dir() and any(POWERCAP_ROOT.glob("intel-rapl:*")):
        pytest.skip("this machine exposes RAPL zones")
    domains, reason = find_domains()
    assert domains == []
    assert isinstance(reason, str) and reason.strip()
