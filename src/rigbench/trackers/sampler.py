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
- `others_cpu_pct`: `sys_cpu_pct` less `proc_cpu_pct` (never below 0): what other processes
  (and a VM's steal time) took over the interval (analysis/contention.py).
- `rss_bytes`: resident memory of the process plus its descendants. Pages shared between
  them (fork, shared memory) count once per process, so this can overstate.
- with a GPU (`gpu_index` set and NVML working): `gpu_util_pct`, `gpu_mem_bytes`,
  `gpu_mem_device_bytes`, `gpu_mem_is_process`, `gpu_power_w`, `gpu_other_procs` (see
  nvml.gpu_sample) and `gpu_others_sm_pct`, the share of the interval in which other
  processes' kernels ran (nvml.OthersCompute). A GPU that neither NVML nor amdsmi reads has
  none of these, and its energy note says why (nvidia-ml-py not installed, say).
- cumulative energy since sampling began, per source that can be read: `gpu_energy_j`,
  `cpu_energy_j`, `dram_energy_j` (trackers/energy.py). When the process is gone one last
  sample with only `t` and these keys is added, so the counters reach past the trial's end.

The metrics these samples become are declared in trackers/summary.TRACKER_FIELDS.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from rigbench.hw import amd
from rigbench.hw.rapl import POWERCAP_ROOT
from rigbench.trackers import nvml as nvml_mod
from rigbench.trackers import proc_reading
from rigbench.trackers.energy import EnergyMeter

#: How soon the tree of descendant processes is listed again (seconds). Listing scans all of
#: /proc (1.6 ms of CPU on the dev VM): each listing that finds the tree unchanged doubles the
#: wait, up to CHILDREN_REFRESH_MAX_S; a change brings it back to CHILDREN_REFRESH_S.
CHILDREN_REFRESH_S = 1.0
CHILDREN_REFRESH_MAX_S = 4.0


class _NoReading(Exception):
    """The tracked process is alive but shows no resident memory yet or any more: this sample
    is skipped, sampling goes on."""


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
        # Process objects are kept between samples: their identity (pid and start time) tells a
        # recycled pid from the process seen before.
        self._procs: dict[int, psutil.Process] = {}
        self._cpu_seen: dict[int, tuple[float, float]] = {}  # pid -> (CPU seconds, monotonic time)
        self._children: list[psutil.Process] | None = None  # None: never listed
        self._children_listed_at = float("-inf")
        self._children_refresh_s = CHILDREN_REFRESH_S
        self._gpu: tuple[Any, Any] | None = None  # (nvml module, device handle)
        self._others: nvml_mod.OthersCompute | None = None
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
                with contextlib.suppress(_NoReading):
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
        """The first readings only set the CPU baselines (each process's, the machine's)."""
        self._procs[self.pid] = _process(self.pid)
        with contextlib.suppress(_NoReading):  # the first sample that reads it is the baseline then
            self._process_tree()
        psutil.cpu_percent(interval=None)  # per-thread baseline in psutil >= 5.9.6
        self._gpu = self._open_gpu()
        nvml, handle = self._gpu if self._gpu is not None else (None, None)
        self._others = nvml_mod.OthersCompute(nvml, handle) if self._gpu is not None else None
        amd_gpu = self._open_amd()
        self._energy = EnergyMeter(nvml, handle, self._rapl_root, amd_gpu=amd_gpu)
        if self.gpu_index is not None and self._gpu is None and amd_gpu is None:
            self._energy.notes.setdefault("gpu", self._unread_gpu())

    def _unread_gpu(self) -> str:
        """Why the trial's GPU has no readings at all, stored as its energy note: without it a
        missing nvidia-ml-py left GPU %, memory and energy blank with no word why."""
        if self._nvml_arg is None and not nvml_mod.installed():
            return f"no readings: nvidia-ml-py is not installed for NVML ({nvml_mod.INSTALL}), and amdsmi did not answer"
        return "no readings: neither NVML nor amdsmi answered for this GPU"

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
        system_pct = psutil.cpu_percent(interval=None)
        sample: dict[str, float | None] = {
            "t": time.time(),
            "proc_cpu_pct": cpu_pct / self._ncpu,
            "proc_cpu_cores": cpu_pct / 100.0,
            "sys_cpu_pct": system_pct,
            # The two readings are a few microseconds apart, so the trial's share can come out a
            # little above the machine's: other processes' use is never below 0.
            "others_cpu_pct": max(0.0, system_pct - cpu_pct / self._ncpu),
            "rss_bytes": float(rss),
        }
        if self._gpu is not None:
            nvml, handle = self._gpu
            try:
                sample.update(nvml_mod.gpu_sample(nvml, handle, pids, self._others))
            except Exception as exc:  # unexpected NVML failure: keep sampling the CPU side
                self.error, self._gpu = exc, None
        if self._energy is not None:
            sample.update(self._energy.read(float(sample["t"] or 0.0), sample.get("gpu_power_w")))
        return sample

    def _process_tree(self) -> tuple[float, int, list[int]]:
        """(CPU percent of one core summed over the tree, RSS sum, pids). Raises _ProcessGone,
        or _NoReading while the root reads no resident memory: a process just started by exec
        can read 0 for a moment (Linux sums its memory counters lazily: one cold trial in about
        30 on the dev VM), and so does one that is exiting, before it turns zombie.

        One read per process (trackers/proc_reading.py). Descendants come from the last listing
        (`_list_children`), so a new one is counted from the listing after it starts (its first
        reading is 0); ones that vanish between listing and reading are skipped, losing at most
        one interval of their CPU.
        """
        root = self._procs[self.pid]
        try:
            reading = proc_reading.read(root)
            now = time.monotonic()  # right after the read: the CPU figure's time
            if reading.zombie:  # exited, not yet reaped by its parent
                raise _ProcessGone
            if reading.rss_bytes == 0:
                raise _NoReading
            children = self._list_children(root)
        except (proc_reading.ProcessGone, psutil.NoSuchProcess, psutil.AccessDenied) as exc:
            raise _ProcessGone from exc
        cpu, rss = self._cpu_pct(self.pid, reading.cpu_s, now), reading.rss_bytes
        live = {self.pid: root}
        for child in children:
            proc = self._procs.get(child.pid)
            if proc is None or proc != child:  # new, or a recycled pid (create time differs)
                proc = child
                self._cpu_seen.pop(child.pid, None)
            try:
                found = proc_reading.read(proc)
            except proc_reading.ProcessGone:
                continue
            cpu += self._cpu_pct(child.pid, found.cpu_s, now)
            rss += found.rss_bytes
            live[child.pid] = proc
        self._procs = live
        self._cpu_seen = {pid: seen for pid, seen in self._cpu_seen.items() if pid in live}
        return cpu, rss, list(live)

    def _cpu_pct(self, pid: int, cpu_s: float, now: float) -> float:
        """Percent of one core `pid` used since its previous reading; 0 at its first."""
        last = self._cpu_seen.get(pid)
        self._cpu_seen[pid] = (cpu_s, now)
        if last is None or now <= last[1]:
            return 0.0
        return 100.0 * max(0.0, cpu_s - last[0]) / (now - last[1])

    def _list_children(self, root: psutil.Process) -> list[psutil.Process]:
        """The tracked process's descendants, listed afresh when the refresh wait is over
        (CHILDREN_REFRESH_S, doubling while the tree stays the same)."""
        now = time.monotonic()
        if now - self._children_listed_at >= self._children_refresh_s:
            children = root.children(recursive=True)
            same = self._children is not None and {c.pid for c in children} == {c.pid for c in self._children}
            self._children_refresh_s = (min(2 * self._children_refresh_s, CHILDREN_REFRESH_MAX_S) if same
                                        else CHILDREN_REFRESH_S)
            self._children, self._children_listed_at = children, now
        return self._children or []


def _process(pid: int) -> psutil.Process:
    try:
        return psutil.Process(pid)
    except (psutil.NoSuchProcess, psutil.AccessDenied) as exc:
        raise _ProcessGone from exc
