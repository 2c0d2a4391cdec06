"""Test doubles shared by the tracker and fingerprint tests."""

from __future__ import annotations

from types import SimpleNamespace

GIB = 1024**3
OTHER_PID = 999_999_999  # not a real pid; stands for another tenant of the GPU


class FakeNVML:
    """Stands in for pynvml: one 16 GiB GPU used by `pid` (1 GiB) and another pid (3 GiB)."""

    class NVMLError(Exception):
        def __init__(self, message: str, value: int = 999) -> None:
            super().__init__(message)
            self.value = value  # pynvml's error code

    def __init__(self, pid: int, procs_fail: bool = False, init_fails: bool = False,
                 power_fails: bool = False, procs: list | None = None,
                 energy_step_mj: int | None = None, util: dict[int, int] | None = None,
                 util_fails: bool = False) -> None:
        self.pid, self.procs_fail, self.init_fails, self.power_fails = pid, procs_fail, init_fails, power_fails
        # The total-energy counter (Volta+): advances by energy_step_mj per read; None: a GPU
        # without one (the query answers Not Supported).
        self.energy_step_mj, self.energy_mj = energy_step_mj, 7_000_000  # mJ since driver load
        # SM % per pid in nvmlDeviceGetProcessUtilization; by default ours at 40% and the other
        # tenant at 25%; util_fails: the query is not supported
        self.util = util if util is not None else {pid: 40, OTHER_PID: 25}
        self.util_fails = util_fails
        self.util_now_us, self.util_reads = 5_000_000, []
        self.procs = procs if procs is not None else [
            SimpleNamespace(pid=OTHER_PID, usedGpuMemory=3 * GIB),
            SimpleNamespace(pid=pid, usedGpuMemory=1 * GIB),
        ]

    def nvmlInit(self):
        if self.init_fails:
            raise self.NVMLError("Driver Not Loaded")

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, index):
        if index >= 2:
            raise self.NVMLError("Invalid Argument")
        return ("handle", index)

    def nvmlDeviceGetName(self, handle):
        return b"Fake GPU" if handle[1] == 0 else "Fake GPU 2"  # old pynvml returns bytes

    def nvmlDeviceGetUUID(self, handle):
        return f"GPU-fake-{handle[1]}"

    def nvmlDeviceGetUtilizationRates(self, handle):
        return SimpleNamespace(gpu=42, memory=17)

    def nvmlDeviceGetMemoryInfo(self, handle):
        return SimpleNamespace(total=16 * GIB, used=5 * GIB, free=11 * GIB)

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        if self.procs_fail:
            raise self.NVMLError("Not Supported")
        return self.procs

    NVML_ERROR_NOT_FOUND = 6

    def nvmlDeviceGetProcessUtilization(self, handle, last_seen_us):
        """Per-process samples newer than `last_seen_us`: `util` maps pid -> SM %, one sample
        each, stamped a second later on every call; none (NOT_FOUND) where `util` is empty."""
        if self.util_fails:
            raise self.NVMLError("Not Supported")
        self.util_now_us += 1_000_000
        self.util_reads.append(last_seen_us)
        if not self.util:
            raise self.NVMLError("Not Found", value=self.NVML_ERROR_NOT_FOUND)
        return [SimpleNamespace(pid=pid, smUtil=pct, memUtil=0, encUtil=0, decUtil=0, timeStamp=self.util_now_us)
                for pid, pct in self.util.items()]

    def nvmlDeviceGetPowerUsage(self, handle):
        if self.power_fails:
            raise self.NVMLError("Not Supported")
        return 123_456  # milliwatts

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        if self.energy_step_mj is None:
            raise self.NVMLError("Not Supported")
        self.energy_mj += self.energy_step_mj
        return self.energy_mj

    def nvmlSystemGetDriverVersion(self):
        return "550.54.15"

    def nvmlSystemGetCudaDriverVersion(self):
        return 12040
