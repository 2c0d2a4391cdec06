"""Sample a trial process's CPU, memory and GPU use in a background thread.

The parent starts a Tracker on the child's pid before the trial and stops it after the
child exits; `summary.summarize` later keeps only the samples inside the timed window.

Sample keys (a flat dict per sample; a sample at time `t` describes the interval since
the previous sample, the first one the interval since `start()`):

- `t`: time.time() when the sample was taken.
- `proc_cpu_pct`: CPU use of the process and all its descendants, normalised so that
  100 means every logical core of the machine is busy (Task Manager's convention).
- `proc_cpu_cores`: the same in cores busy (1.9 = almost two cores).
- `sys_cpu_pct`: CPU use of the whole machine over the same interval (100 = all cores).
- `rss_bytes`: resident memory of the process plus its descendants. Pages shared between
  them (fork, shared memory) count once per process, so this can overstate.
- with a GPU (`gpu_index` set and NVML working): `gpu_util_pct`, `gpu_mem_bytes`,
  `gpu_mem_device_bytes`, `gpu_mem_is_process`, `gpu_power_w` (see nvml.gpu_sample).
- cumulative energy since sampling began, per source that can be read: `gpu_energy_j`,
  `cpu_energy_j`, `dram_energy_j` (trackers/energy.py). When the process is gone one last
  sample with only `t` and these keys is added, so the counters reach past the trial's end.

The metrics these samples become are declared in trackers/summary.TRACKER_FIELDS.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import psutil

from rigbench.hw import amd
from rigbench.hw.rapl import POWERCAP_ROOT
from rigbench.trackers import nvml as nvml_mod
from rigbench.trackers.energy import EnergyMeter

#: How often the tree of descendant processes is listed again (seconds).
CHILDREN_REFRESH_S = 1.0


class _ProcessGone(Exception):
    """The tracked process exited or became unreadable: sampling is over."""


class Tracker:
    """Samples one process tree every `interval` seconds until stopped or the process ends.

    `gpu_index` is an NVML index (see hw.nvml.nvml_index_for_cuda_device); None means no GPU
    sampling. `nvml` replaces the real pynvml module (tests pass a fake); `rapl_root` the
    powercap root that RAPL energy is read from (tests pass a fake tree; None: not read);
    `amdsmi` the amdsmi module, for an AMD GPU's energy when NVML does not know the GPU.
    """

    def __init__(self, pid: int, interval: float = 0.1, gpu_index: int | None = None,
                 nvml: Any = None, rapl_root: Path | None = POWERCAP_ROOT, amdsmi: Any = None) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be positive, got {interval}")
        self.pid = pid
        self.interval = interval
        self.gpu_index = gpu_index
        self._nvml_arg = nvml
        self._samples: list[dict[str, float | None]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ncpu = psutil.cpu_count(logical=True) or 1
        # Process objects are kept between samples because psutil's interval-less
        # cpu_percent measures since the previous call *on the same object*.
        self._procs: dict[int, psutil.Process] = {}
        self._children: list[psutil.Process] = []
        self._children_listed_at = float("-inf")
        self._gpu: tuple[Any, Any] | None = None  # (nvml module, device handle)
        self._rapl_root = rapl_root
        self._amdsmi_arg = amdsmi
        self._energy: EnergyMeter | None = None
        #: An unexpected exception that ended sampling early (None normally).
        self.error: Exception | None = None

    def start(self) -> None:
        """Start sampling in a daemon thread. A missing process gives no samples, no error."""
        if self._thread is not None:
            raise RuntimeError("Tracker already started")
        self._thread = threading.Thread(target=self._run, name=f"rigbench-tracker-{self.pid}",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> list[dict[str, float | None]]:
        """Stop sampling and return the samples (the thread ends within one sample's time)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(5.0, 5 * self.interval))
        return list(self._samples)

    @property
    def samples(self) -> list[dict[str, float | None]]:
        """The samples so far (a copy)."""
        return list(self._samples)

    def _run(self) -> None:
        try:
            self._prime()
            deadline = time.monotonic()
            while True:
                # A fixed schedule, so the time spent sampling does not stretch the interval.
                deadline += self.interval
                wait = deadline - time.monotonic()
                if wait < 0:  # fell behind (a slow sample): restart the schedule from now
                    deadline, wait = time.monotonic(), 0.0
                if self._stop.wait(wait):
                    return
                self._samples.append(self._sample())
        except _ProcessGone:
            self._last_energy_reading()
        except Exception as exc:  # a bug or an odd platform must not kill the trial
            self.error = exc

    def _last_energy_reading(self) -> None:
        """The counters once more after the process ended, so they cover its last moments."""
        if self._energy is not None:
            t = time.time()
            reading = self._energy.read(t)
            if reading:
                self._samples.append({"t": t, **reading})

    def energy_description(self) -> tuple[str | None, str | None]:
        """(`energy_method`, `energy_note`): what energy was read and why any was not
        (trackers/energy.EnergyMeter.describe); (None, None) before sampling began."""
        return self._energy.describe() if self._energy is not None else (None, None)

    def __enter__(self) -> Tracker:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _prime(self) -> None:
        """First cpu_percent calls return 0 and only set the baseline for the next call."""
        self._procs[self.pid] = _process(self.pid)
        self._process_tree()
        psutil.cpu_percent(interval=None)  # per-thread baseline in psutil >= 5.9.6
        self._gpu = self._open_gpu()
        nvml, handle = self._gpu if self._gpu is not None else (None, None)
        self._energy = EnergyMeter(nvml, handle, self._rapl_root, amd_gpu=self._open_amd())

    def _open_amd(self) -> tuple[Any, Any] | None:
        """The trial's GPU through amdsmi, when NVML does not know it (an AMD GPU under ROCm,
        which torch also calls cuda:N): energy is then read from amdsmi's counter."""
        if self.gpu_index is None or self._gpu is not None:
            return None
        smi = amd.load_amdsmi(self._amdsmi_arg)
        handle = amd.gpu_handle(smi, self.gpu_index) if smi is not None else None
        return (smi, handle) if handle is not None else None

    def _open_gpu(self) -> tuple[Any, Any] | None:
        if self.gpu_index is None:
            return None
        nvml = nvml_mod.load_nvml(self._nvml_arg)
        if nvml is None:
            return None
        try:
            return nvml, nvml.nvmlDeviceGetHandleByIndex(self.gpu_index)
        except Exception:  # NVMLError (bad index, GPU lost): sample CPU only
            return None

    def _sample(self) -> dict[str, float | None]:
        cpu_pct, rss, pids = self._process_tree()
        sample: dict[str, float | None] = {
            "t": time.time(),
            "proc_cpu_pct": cpu_pct / self._ncpu,
            "proc_cpu_cores": cpu_pct / 100.0,
            "sys_cpu_pct": psutil.cpu_percent(interval=None),
            "rss_bytes": float(rss),
        }
        if self._gpu is not None:
            nvml, handle = self._gpu
            try:
                sample.update(nvml_mod.gpu_sample(nvml, handle, pids))
            except Exception as exc:  # unexpected NVML failure: keep sampling the CPU side
                self.error, self._gpu = exc, None
        if self._energy is not None:
            sample.update(self._energy.read(float(sample["t"] or 0.0), sample.get("gpu_power_w")))
        return sample

    def _process_tree(self) -> tuple[float, int, list[int]]:
        """(psutil CPU percent summed over the tree, RSS sum, pids). Raises _ProcessGone.

        Descendants are listed again every CHILDREN_REFRESH_S, so a new one is counted from
        the listing after it starts (its first reading is 0); ones that vanish between
        listing and reading are skipped, losing at most one interval of their CPU.
        """
        root = self._procs[self.pid]
        try:
            if root.status() == psutil.STATUS_ZOMBIE:  # exited, not yet reaped by its parent
                raise _ProcessGone
            cpu = root.cpu_percent(interval=None)
            rss = root.memory_info().rss
            children = self._list_children(root)
        except (psutil.NoSuchProcess, psutil.AccessDenied) as exc:
            raise _ProcessGone from exc
        if rss == 0:  # exiting: its memory is released before it turns zombie
            raise _ProcessGone
        live = {self.pid: root}
        for child in children:
            proc = self._procs.get(child.pid)
            if proc is None or proc != child:  # new, or a recycled pid (create time differs)
                proc = child
            try:
                cpu += proc.cpu_percent(interval=None)
                rss += proc.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            live[child.pid] = proc
        self._procs = live
        return cpu, rss, list(live)

    def _list_children(self, root: psutil.Process) -> list[psutil.Process]:
        """The tracked process's descendants, listed afresh at most every CHILDREN_REFRESH_S.

        Listing scans all of /proc (about 4 ms here); doing that at every sample would
        itself take a few % of a core from the trial being measured.
        """
        now = time.monotonic()
        if now - self._children_listed_at >= CHILDREN_REFRESH_S:
            self._children = root.children(recursive=True)
            self._children_listed_at = now
        return self._children


def _process(pid: int) -> psutil.Process:
    try:
        return psutil.Process(pid)
    except (psutil.NoSuchProcess, psutil.AccessDenied) as exc:
        raise _ProcessGone from exc
