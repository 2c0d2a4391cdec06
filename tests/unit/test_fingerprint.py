"""Machine fingerprint, its CPU cache, and framework-free device discovery."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata

import cpuinfo
import pytest

from rigbench import devices, fingerprint
from rigbench.fingerprint import FINGERPRINT_KEYS, machine_fingerprint
from tests.unit.fakes import GIB, FakeNVML

FAKE_CPU = {"brand_raw": "Test CPU 9000", "flags": ["sse2", "avx2", "fma", "amx_tile"]}


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def fake_cpuinfo(monkeypatch):
    """py-cpuinfo answering FAKE_CPU once, then failing: a second answer must come from cache."""
    calls = []

    def get_cpu_info():
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("cpuinfo must not be called again")
        return dict(FAKE_CPU)

    monkeypatch.setattr(cpuinfo, "get_cpu_info", get_cpu_info)
    return calls


def test_fingerprint_has_documented_keys(cache_dir, fake_cpuinfo):
    fp = machine_fingerprint()
    assert tuple(fp) == FINGERPRINT_KEYS
    assert fp["cpu_model"] == "Test CPU 9000"
    assert fp["cpu_flags"]["avx2"] is True and fp["cpu_flags"]["amx"] is True
    assert fp["cpu_flags"]["avx512f"] is False
    assert isinstance(fp["cpu_flags_hash"], str) and len(fp["cpu_flags_hash"]) == 16
    assert fp["cpu_cores_logical"] == os.cpu_count()
    assert 1 <= fp["cpu_cores_usable"] <= fp["cpu_cores_logical"]
    assert fp["ram_bytes"] > 0
    assert fp["python_version"].startswith(f"{sys.version_info.major}.{sys.version_info.minor}")
    assert isinstance(fp["gpus"], list)
    json.dumps(fp)  # stored as JSON


def test_cpu_cache_written_and_reused(cache_dir, fake_cpuinfo):
    first = machine_fingerprint()
    cache_file = cache_dir / "cpu.json"
    assert cache_file.exists()
    (entry,) = json.loads(cache_file.read_text()).values()
    assert entry["model"] == "Test CPU 9000"
    second = machine_fingerprint()  # cpuinfo would raise now
    assert len(fake_cpuinfo) == 1
    assert second["cpu_model"] == first["cpu_model"]
    assert second["cpu_flags_hash"] == first["cpu_flags_hash"]


def test_cpuinfo_failure_falls_back_and_is_not_cached(cache_dir, monkeypatch):
    def broken():
        raise RuntimeError("no cpuid here")

    monkeypatch.setattr(cpuinfo, "get_cpu_info", broken)
    fp = machine_fingerprint()
    if os.path.exists("/proc/cpuinfo"):
        assert fp["cpu_model"]
    assert not (cache_dir / "cpu.json").exists()


def test_unwritable_cache_dir_is_not_an_error(tmp_path, monkeypatch, fake_cpuinfo):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(blocker / "sub"))  # parent is a file
    assert machine_fingerprint()["cpu_model"] == "Test CPU 9000"


def test_package_versions_from_metadata(cache_dir, fake_cpuinfo):
    packages = machine_fingerprint()["packages"]
    assert set(packages) == {"rigbench", "numpy", "torch", "tensorflow", "jax", "jaxlib",
                             "flax", "nvidia-ml-py"}
    assert packages["rigbench"] == metadata.version("rigbench")
    assert packages["numpy"] == metadata.version("numpy")
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = None
    assert packages["torch"] == torch_version


def test_fingerprint_and_devices_never_import_frameworks(tmp_path):
    code = (
        "import json, sys\n"
        "from rigbench.fingerprint import machine_fingerprint\n"
        "from rigbench.devices import host_devices\n"
        "import rigbench.trackers.sampler, rigbench.trackers.summary\n"
        "fp = machine_fingerprint()\n"
        "devs = host_devices()\n"
        "print(json.dumps({'loaded': sorted(m for m in ('torch', 'tensorflow', 'jax')\n"
        "                                   if m in sys.modules),\n"
        "                  'model': fp['cpu_model'], 'devices': devs}))\n"
    )
    env = {**os.environ, "RIGBENCH_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    result = json.loads(out)
    assert result["loaded"] == []
    assert result["devices"][0]["id"] == "cpu"
    assert (tmp_path / "cpu.json").exists()  # real py-cpuinfo ran and was cached


def test_host_devices_starts_with_the_cpu(cache_dir, fake_cpuinfo):
    devs = devices.host_devices()
    cpu = devs[0]
    assert cpu["id"] == "cpu" and cpu["kind"] == "cpu"
    assert cpu["name"] == "Test CPU 9000"
    assert cpu["memory_bytes"] > 0 and cpu["cores"] == os.cpu_count()
    assert all(d["kind"] in ("cuda", "rocm") for d in devs[1:])


@pytest.mark.parametrize("env, ids", [
    ({}, ["cuda:0", "cuda:1"]),
    ({"CUDA_VISIBLE_DEVICES": "1"}, ["nvml:0", "cuda:0"]),
    ({"CUDA_VISIBLE_DEVICES": "1,0"}, ["cuda:1", "cuda:0"]),
    ({"CUDA_VISIBLE_DEVICES": ""}, ["nvml:0", "nvml:1"]),
])
def test_nvidia_devices_from_fake_nvml(env, ids):
    devs = devices.nvidia_devices(env, nvml=FakeNVML(1))
    assert [d["id"] for d in devs] == ids
    assert [d["visible"] for d in devs] == [i.startswith("cuda") for i in ids]
    assert devs[0]["name"] == "Fake GPU" and devs[0]["memory_bytes"] == 16 * GIB
    assert devs[0]["kind"] == "cuda" and devs[0]["nvml_index"] == 0


def test_amd_devices_with_fake_amdsmi():
    class FakeAmdSmi:
        class AmdSmiMemoryType:
            VRAM = 0

        def amdsmi_init(self):
            pass

        def amdsmi_shut_down(self):
            pass

        def amdsmi_get_processor_handles(self):
            return ["h0"]

        def amdsmi_get_gpu_asic_info(self, h):
            return {"market_name": "Fake Instinct"}

        def amdsmi_get_gpu_memory_total(self, h, kind):
            raise RuntimeError("not supported")

        def amdsmi_get_gpu_vram_info(self, h):
            return {"vram_size": 65536}  # MB

        def amdsmi_get_gpu_driver_info(self, h):
            return {"driver_version": "6.8.5"}

    (dev,) = devices.amd_devices(FakeAmdSmi())
    assert dev == {"id": "rocm:0", "kind": "rocm", "name": "Fake Instinct",
                   "memory_bytes": 64 * GIB, "driver": "6.8.5"}
    assert devices.amd_devices() == []  # amdsmi is not installed here


def test_fingerprint_lists_gpus_from_nvml(cache_dir, fake_cpuinfo, monkeypatch):
    monkeypatch.setattr(fingerprint, "load_nvml", lambda: FakeNVML(1))
    gpus = machine_fingerprint()["gpus"]
    assert [g["vendor"] for g in gpus] == ["nvidia", "nvidia"]
    assert gpus[0]["driver"] == "550.54.15" and gpus[0]["cuda_driver"] == "12.4"


def test_a_gpu_machine_is_another_machine_than_its_cpu_twin(cache_dir, fake_cpuinfo, monkeypatch):
    """Lent GPU VMs share host name, CPU model and instruction sets with the dev VM: an imported
    H200 bundle counted as this machine's results. The GPUs' names are part of the key, read
    from the full fingerprint and from this machine's quick identity alike."""
    from rigbench.fingerprint import machine_key, this_machine_identity, this_machine_key

    monkeypatch.setattr(fingerprint, "load_nvml", lambda: FakeNVML(1))
    full = machine_fingerprint()
    assert machine_key(full) == this_machine_key() == machine_key(this_machine_identity())
    names = tuple(sorted(g["name"] for g in full["gpus"]))
    assert machine_key(full)[-1] == names and names
    assert machine_key({**full, "gpus": []}) != machine_key(full)  # the same VM without its GPUs
    assert machine_key({**full, "gpus": [{"name": "NVIDIA H200"}]}) != machine_key(full)
    assert machine_key({**full, "gpus": "garbage"})[-1] == ()  # an imported bundle's odd list
