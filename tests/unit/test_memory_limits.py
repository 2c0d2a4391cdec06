"""hw/memory: the RAM a process may use is its control group's limit where that is lower than
the machine's (cgroup v2 and v1 files in the kernel's formats, in a folder of the test's)."""

from types import SimpleNamespace

import pytest

from rigbench.hw import memory

GIB = 2**30


@pytest.fixture(autouse=True)
def host(monkeypatch):
    """A 24 GiB machine with 20 GiB available, whatever this one has."""
    monkeypatch.setattr(memory.psutil, "virtual_memory", lambda: SimpleNamespace(total=24 * GIB, available=20 * GIB))


def test_a_v2_limit_caps_total_and_available(tmp_path):
    (tmp_path / "memory.max").write_text(f"{4 * GIB}\n")
    (tmp_path / "memory.current").write_text(f"{GIB}\n")
    assert memory.cgroup_limit(tmp_path) == (4 * GIB, GIB)
    assert memory.total_memory(tmp_path) == 4 * GIB and memory.available_memory(tmp_path) == 3 * GIB


def test_a_v1_limit_and_no_limit_in_either_format(tmp_path):
    v1 = tmp_path / "memory"
    v1.mkdir()
    (v1 / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1's "no limit"
    (v1 / "memory.usage_in_bytes").write_text(f"{GIB}\n")
    assert memory.cgroup_limit(tmp_path) is None and memory.total_memory(tmp_path) == 24 * GIB
    (v1 / "memory.limit_in_bytes").write_text(f"{2 * GIB}\n")
    assert memory.available_memory(tmp_path) == GIB and memory.total_memory(tmp_path) == 2 * GIB
    (tmp_path / "memory.max").write_text("max\n")  # v2 without a limit: v1's files still read
    assert memory.cgroup_limit(tmp_path) == (2 * GIB, GIB)


def test_a_limit_above_the_machine_and_an_unreadable_root_leave_the_machines(tmp_path):
    (tmp_path / "memory.max").write_text(f"{64 * GIB}\n")
    assert memory.total_memory(tmp_path) == 24 * GIB and memory.available_memory(tmp_path) == 20 * GIB
    assert memory.available_memory(tmp_path / "absent") == 20 * GIB
