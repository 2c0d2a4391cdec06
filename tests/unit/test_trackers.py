"""Tracker sampling (real processes), window summaries, and the NVML wrapper (fake NVML)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from rigbench.hw import nvml as hw_nvml
from rigbench.trackers import nvml as nv
from rigbench.trackers import proc_reading
from rigbench.trackers.sampler import CHILDREN_REFRESH_MAX_S, CHILDREN_REFRESH_S, Tracker
from rigbench.trackers.summary import MIB, summarize
from tests.unit.fakes import GIB, OTHER_PID, FakeNVML

# Allocates (and touches) ~200 MB, then spins for 1.5 s and prints the busy window and
# the CPU time it got in it (the ground truth the tracker must match: on a loaded machine
# a spinning process gets less than a full core).
BUSY_CHILD = """
import time
block = b"\\x01" * (200 * 1024 * 1024)
start, cpu0 = time.time(), time.process_time()
while time.time() - start < 1.5:
    pass
print(start, time.time(), time.process_time() - cpu0)
"""

# Spends its time in a grandchild: CPU and RSS must be counted for the whole tree. It spins for
# 7 s: the tree may be listed CHILDREN_REFRESH_MAX_S after the grandchild appears, and on a
# loaded 2-core machine 5 s once left no sample after that (the suite at load 3).
PARENT_OF_BUSY = f"""
import subprocess, sys
subprocess.run([sys.executable, "-c", {BUSY_CHILD.replace("1.5", "7.0")!r}])
"""


def _track(cmd: str, interval: float = 0.05) -> tuple[list[dict], str]:
    child = subprocess.Popen([sys.executable, "-c", cmd], stdout=subprocess.PIPE, text=True)
    tracker = Tracker(child.pid, interval=interval)
    tracker.start()
    out, _ = child.communicate(timeout=30)
    return tracker.stop(), out


def _window(out: str) -> tuple[float, float, float]:
    """(start, end, cores the child really used in between) from its last output line."""
    start, end, cpu_s = map(float, out.split()[-3:])
    return start, end, cpu_s / (end - start)


def _check_cpu(mean_cores: float, true_cores: float) -> None:
    """The tracker's mean matches the child's own CPU time; > 0.5 core when it got one."""
    assert mean_cores == pytest.approx(true_cores, abs=0.25)
    if true_cores > 0.7:  # not starved by other load on the machine
        assert mean_cores > 0.5


# --- real processes -------------------------------------------------------------------

def test_tracks_busy_process_cpu_and_rss():
    samples, out = _track(BUSY_CHILD)
    start, end, true_cores = _window(out)
    inside = [s for s in samples if start < s["t"] <= end]
    assert len(inside) >= 10
    _check_cpu(sum(s["proc_cpu_cores"] for s in inside) / len(inside), true_cores)
    ncpu = os.cpu_count()
    for s in inside:  # the two CPU units agree, and percentages stay in range
        assert s["proc_cpu_pct"] == pytest.approx(s["proc_cpu_cores"] * 100 / ncpu)
        assert 0 <= s["sys_cpu_pct"] <= 100
        # other processes' share is the machine's less the tree's, never below 0
        assert s["others_cpu_pct"] == pytest.approx(max(0.0, s["sys_cpu_pct"] - s["proc_cpu_pct"]))
    summary = summarize(samples, start, end, interval_slack=0.05)
    assert summary["rss_peak_mib"] > 150
    assert summary["gpu_util_pct_mean"] is None and summary["gpu_mem_peak_mib"] is None
    assert "gpu_util_pct" not in samples[0]


def test_counts_descendants_of_the_tracked_process():
    samples, out = _track(PARENT_OF_BUSY)
    start, end, true_cores = _window(out)
    # A new descendant is seen at the next listing of the tree (at most CHILDREN_REFRESH_MAX_S
    # later), so judge the window after that.
    start += CHILDREN_REFRESH_MAX_S + 0.1
    summary = summarize(samples, start, end, interval_slack=0.05)
    assert summary["samples_in_window"] >= 5
    _check_cpu(summary["cpu_util_pct_mean"] * os.cpu_count() / 100, true_cores)
    assert summary["rss_peak_mib"] > 150


@pytest.mark.parametrize("reap", [True, False], ids=["reaped", "zombie"])
def test_process_exit_ends_sampling_quietly(reap):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    tracker = Tracker(child.pid, interval=0.05)
    tracker.start()
    if reap:
        child.wait(timeout=10)
    deadline = time.monotonic() + 5
    while tracker._thread.is_alive() and time.monotonic() < deadline:  # ends on its own
        time.sleep(0.02)
    assert not tracker._thread.is_alive()
    samples = tracker.stop()
    child.wait(timeout=10)
    assert samples and all(s["rss_bytes"] > 0 for s in samples)
    assert [s["t"] for s in samples] == sorted(s["t"] for s in samples)


def test_a_live_process_that_reads_no_memory_yet_is_still_sampled(monkeypatch):
    # Linux sums a process's memory counters lazily: one just started by exec can read 0 pages
    # for a moment. The tracker once took that for an exit at its first reading and stored no
    # CPU or memory figure for the whole trial (one cold trial in about 30 on the dev VM).
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.0)"])
    real, zeros = proc_reading.read, {"left": 3}

    def first_reads_empty(proc):
        reading = real(proc)
        if proc.pid == child.pid and zeros["left"] > 0:
            zeros["left"] -= 1
            return proc_reading.Reading(reading.cpu_s, 0, False)
        return reading

    monkeypatch.setattr(proc_reading, "read", first_reads_empty)
    tracker = Tracker(child.pid, interval=0.05)
    tracker.start()
    child.wait(timeout=10)
    samples = tracker.stop()
    assert zeros["left"] == 0  # the empty readings were taken, the first of them by the baseline
    assert samples and all(s["rss_bytes"] > 0 for s in samples)  # none stored from them


def test_missing_process_gives_no_samples():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=10)
    tracker = Tracker(child.pid, interval=0.05)
    tracker.start()
    assert tracker.stop() == []


def test_stop_is_prompt_and_thread_is_daemon():
    tracker = Tracker(os.getpid(), interval=10.0)
    tracker.start()
    assert tracker._thread.daemon
    began = time.monotonic()
    assert tracker.stop() == []
    assert time.monotonic() - began < 1.0


# --- GPU path with a fake NVML --------------------------------------------------------

def _track_self(nvml, gpu_index: int | None = 0, n: int = 3) -> list[dict]:
    """Track this process until it has `n` samples (waiting on a count, not a time,
    keeps the test steady on a loaded machine)."""
    tracker = Tracker(os.getpid(), interval=0.05, gpu_index=gpu_index, nvml=nvml)
    tracker.start()
    deadline = time.monotonic() + 10
    while len(tracker.samples) < n and time.monotonic() < deadline:
        time.sleep(0.02)
    return tracker.stop()


def test_tracker_gpu_path_uses_the_tracked_pid_memory():
    samples = _track_self(FakeNVML(os.getpid()))
    assert len(samples) >= 2
    for s in samples:
        assert s["gpu_util_pct"] == 42
        assert s["gpu_mem_bytes"] == 1 * GIB  # ours, not the other process's 3 GiB
        assert s["gpu_mem_device_bytes"] == 5 * GIB
        assert s["gpu_mem_is_process"] == 1.0
        assert s["gpu_power_w"] == pytest.approx(123.456)
    summary = summarize(samples, samples[0]["t"] - 0.05, samples[-1]["t"], interval_slack=0)
    assert summary["gpu_mem_peak_mib"] == 1024
    assert summary["gpu_util_pct_p95"] == 42
    assert summary["gpu_power_w_mean"] == pytest.approx(123.456)
    assert summary["gpu_power_w_peak"] == pytest.approx(123.456)
    assert summary["gpu_other_processes_max"] == 1  # the fake's other tenant
    assert summary["gpu_others_sm_pct_mean"] == 25  # and its kernels' share, not ours


def test_tracker_without_working_nvml_samples_cpu_only():
    for nvml in (FakeNVML(os.getpid(), init_fails=True), None):  # None: real pynvml, no GPU here
        samples = _track_self(nvml, gpu_index=0)
        assert samples and "proc_cpu_pct" in samples[0]
        if nvml is not None or hw_nvml.load_nvml() is None:
            assert "gpu_util_pct" not in samples[0]


def test_tracker_with_bad_gpu_index_samples_cpu_only():
    samples = _track_self(FakeNVML(os.getpid()), gpu_index=7)
    assert samples and "gpu_util_pct" not in samples[0]


def test_unexpected_gpu_error_keeps_cpu_sampling():
    class Broken(FakeNVML):
        def nvmlDeviceGetUtilizationRates(self, handle):
            raise RuntimeError("driver went away")

    tracker = Tracker(os.getpid(), interval=0.05, gpu_index=0, nvml=Broken(os.getpid()))
    with tracker:
        deadline = time.monotonic() + 10
        while len(tracker.samples) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
    samples = tracker.samples
    assert len(samples) >= 2 and all("gpu_util_pct" not in s for s in samples)
    assert isinstance(tracker.error, RuntimeError)


def test_gpu_sample_falls_back_to_device_memory():
    fake = FakeNVML(123, procs_fail=True, power_fails=True)
    s = nv.gpu_sample(fake, ("handle", 0), 123)
    assert s["gpu_mem_bytes"] == 5 * GIB == s["gpu_mem_device_bytes"]
    assert s["gpu_mem_is_process"] == 0.0
    assert s["gpu_power_w"] is None
    assert s["gpu_util_pct"] == 42


def test_gpu_sample_process_list_cases():
    h = ("handle", 0)
    assert nv.gpu_sample(FakeNVML(123), h, 123)["gpu_mem_bytes"] == 1 * GIB
    assert nv.gpu_sample(FakeNVML(123), h, [123, OTHER_PID])["gpu_mem_bytes"] == 4 * GIB
    # no compute process yet: our usage is 0, not the device's
    assert nv.gpu_sample(FakeNVML(123, procs=[]), h, 123)["gpu_mem_bytes"] == 0
    # others listed but not us (container pid namespace): device-wide fallback
    only_other = nv.gpu_sample(FakeNVML(123), h, 456)
    assert only_other["gpu_mem_bytes"] == 5 * GIB and only_other["gpu_mem_is_process"] == 0.0
    # driver reports no per-process figure (usedGpuMemory None): fallback
    unknown = FakeNVML(123, procs=[SimpleNamespace(pid=123, usedGpuMemory=None)])
    assert nv.gpu_sample(unknown, h, 123)["gpu_mem_bytes"] == 5 * GIB



def test_gpu_sample_counts_the_other_processes_on_the_gpu_where_ours_is_listed():
    h = ("handle", 0)
    assert nv.gpu_sample(FakeNVML(123), h, 123)["gpu_other_procs"] == 1  # OTHER_PID shares it
    assert nv.gpu_sample(FakeNVML(123), h, [123, OTHER_PID])["gpu_other_procs"] == 0  # both ours
    assert nv.gpu_sample(FakeNVML(123, procs=[]), h, 123)["gpu_other_procs"] == 0  # nobody yet
    assert nv.gpu_sample(FakeNVML(123), h, 456)["gpu_other_procs"] is None  # a container: cannot tell
    assert nv.gpu_sample(FakeNVML(123, procs_fail=True), h, 123)["gpu_other_procs"] is None


def test_other_processes_compute_is_read_from_where_the_last_reading_left_off():
    fake, h = FakeNVML(123), ("handle", 0)
    others = nv.OthersCompute(fake, h)  # the first read moves past what ran before the trial
    assert fake.util_reads == [0]
    assert others.read({123}) == 25  # the other tenant's 25%, not our 40%
    assert fake.util_reads[-1] == 6_000_000, "the second read starts at the first one's newest sample"
    assert others.read({123, OTHER_PID}) == 0  # both ours
    assert nv.OthersCompute(FakeNVML(123, util={123: 40, 7: 70, 8: 60}), h).read({123}) == 100  # capped
    assert nv.OthersCompute(FakeNVML(123, util={}), h).read({123}) == 0.0  # NOT_FOUND: nobody ran a kernel
    assert nv.OthersCompute(FakeNVML(123, util_fails=True), h).read({123}) is None

    class OldPynvml(FakeNVML):  # no such function: None, and the other readings go on
        nvmlDeviceGetProcessUtilization = None

    old = OldPynvml(123)
    sample = nv.gpu_sample(old, h, 123, nv.OthersCompute(old, h))
    assert sample["gpu_others_sm_pct"] is None and sample["gpu_mem_bytes"] == 1 * GIB


def test_gpu_sample_reads_other_processes_compute_only_where_ours_is_told_apart():
    h = ("handle", 0)
    fake = FakeNVML(123)
    assert nv.gpu_sample(fake, h, 123, nv.OthersCompute(fake, h))["gpu_others_sm_pct"] == 25
    assert nv.gpu_sample(fake, h, 123)["gpu_others_sm_pct"] is None  # no reader given
    # a container: our pid 456 is not listed, so our own kernels would read as another's
    assert nv.gpu_sample(fake, h, 456, nv.OthersCompute(fake, h))["gpu_others_sm_pct"] is None


def test_load_nvml_and_list_gpus_with_fake():
    assert hw_nvml.load_nvml(FakeNVML(1, init_fails=True)) is None
    fake = hw_nvml.load_nvml(FakeNVML(1))
    gpus = hw_nvml.list_gpus(fake)
    assert [g["index"] for g in gpus] == [0, 1]
    assert gpus[0] == {"index": 0, "name": "Fake GPU", "memory_bytes": 16 * GIB,
                       "uuid": "GPU-fake-0", "driver": "550.54.15", "cuda_driver": "12.4"}
    assert hw_nvml.list_gpus(None) == []


def test_real_pynvml_degrades_without_gpu():
    nvml = hw_nvml.load_nvml()
    assert nvml is None or hw_nvml.list_gpus(nvml) is not None  # never raises


@pytest.mark.parametrize("env, n, expected", [
    ({}, 0, 0),
    ({}, 3, 3),
    ({"CUDA_VISIBLE_DEVICES": "2,0"}, 0, 2),
    ({"CUDA_VISIBLE_DEVICES": "2,0"}, 1, 0),
    ({"CUDA_VISIBLE_DEVICES": " 3 , 1 "}, 1, 1),
    ({"CUDA_VISIBLE_DEVICES": "1,-1,0"}, 0, 1),  # CUDA stops at the first invalid entry
    ({"CUDA_VISIBLE_DEVICES": "GPU-8f1e-aaaa"}, 1, 1),  # UUIDs: unchanged
])
def test_nvml_index_for_cuda_device(env, n, expected):
    assert hw_nvml.nvml_index_for_cuda_device(n, env=env) == expected


@pytest.mark.parametrize("env, n", [
    ({"CUDA_VISIBLE_DEVICES": "2,0"}, 2),
    ({"CUDA_VISIBLE_DEVICES": ""}, 0),
    ({"CUDA_VISIBLE_DEVICES": "-1"}, 0),
    ({"CUDA_VISIBLE_DEVICES": "1,-1,0"}, 1),
    ({}, -1),
])
def test_nvml_index_for_invisible_cuda_device_raises(env, n):
    with pytest.raises(ValueError):
        hw_nvml.nvml_index_for_cuda_device(n, env=env)


# --- summarize --------------------------------------------------------------------------

def _samples(**overrides) -> list[dict]:
    """Samples at t = 1..10 (interval 1); sample i has proc_cpu_pct 10*i, rss i MiB."""
    out = []
    for i in range(1, 11):
        s = {"t": float(i), "proc_cpu_pct": 10.0 * i, "proc_cpu_cores": 0.2 * i,
             "sys_cpu_pct": 5.0 * i, "rss_bytes": float(i * MIB)}
        s.update({k: v(i) for k, v in overrides.items()})
        out.append(s)
    return out


def test_summarize_window_is_exclusive_at_start_inclusive_at_end_plus_slack():
    samples = _samples()
    # kept: start < t <= end + slack -> t in (2, 6] = 3, 4, 5, 6
    r = summarize(samples, start=2.0, end=5.0, interval_slack=1.0)
    assert r["samples_in_window"] == 4
    assert r["cpu_util_pct_mean"] == pytest.approx(45.0)
    assert r["cpu_util_pct_p95"] == pytest.approx(58.5)  # 50 + 0.85 * (60 - 50)
    assert r["system_cpu_pct_mean"] == pytest.approx(22.5)
    assert r["system_cpu_pct_p95"] == pytest.approx(29.25)
    assert r["rss_peak_mib"] == pytest.approx(6.0)
    # no slack: (2, 5] = 3, 4, 5
    r0 = summarize(samples, start=2.0, end=5.0, interval_slack=0.0)
    assert r0["samples_in_window"] == 3
    assert r0["cpu_util_pct_mean"] == pytest.approx(40.0)
    assert r0["rss_peak_mib"] == pytest.approx(5.0)


def test_summarize_default_slack_is_the_median_sample_spacing():
    samples = _samples()
    assert summarize(samples, 2.0, 5.0) == summarize(samples, 2.0, 5.0, interval_slack=1.0)


def test_summarize_peak_ignores_samples_outside_the_window():
    samples = _samples(rss_bytes=lambda i: float(1000 * MIB if i in (2, 8) else i * MIB))
    r = summarize(samples, start=2.0, end=6.0, interval_slack=1.0)  # t = 3..7
    assert r["rss_peak_mib"] == pytest.approx(7.0)


def test_summarize_gpu_keys_absent_are_none_and_partial_values_are_used():
    r = summarize(_samples(), 2.0, 5.0, interval_slack=1.0)
    for key in ("gpu_util_pct_mean", "gpu_util_pct_p95", "gpu_mem_peak_mib", "gpu_power_w_mean",
                "gpu_power_w_peak"):
        assert r[key] is None
    gpu = _samples(gpu_util_pct=lambda i: 100.0 - i, gpu_mem_bytes=lambda i: float(i * GIB),
                   gpu_power_w=lambda i: None if i % 2 else 200.0 + i)
    r = summarize(gpu, 2.0, 5.0, interval_slack=1.0)  # t = 3, 4, 5, 6
    assert r["gpu_util_pct_mean"] == pytest.approx(95.5)
    assert r["gpu_mem_peak_mib"] == pytest.approx(6 * 1024)
    assert r["gpu_power_w_mean"] == pytest.approx(205.0)  # mean of 204 and 206; None skipped
    assert r["gpu_power_w_peak"] == pytest.approx(206.0)  # watts as sampled, not MiB


def test_summarize_empty_window_falls_back_to_next_sample():
    samples = _samples()
    r = summarize(samples, start=2.2, end=2.5, interval_slack=0.0)
    assert r["samples_in_window"] == 0
    assert r["cpu_util_pct_mean"] == pytest.approx(30.0)  # the sample at t = 3
    assert r["cpu_util_pct_p95"] == pytest.approx(30.0)
    assert r["rss_peak_mib"] == pytest.approx(3.0)
    # with the default slack the same sample lies inside the window
    assert summarize(samples, 2.2, 2.5)["samples_in_window"] == 1


def test_summarize_nothing_after_the_window_gives_none():
    r = summarize(_samples(), start=20.0, end=21.0)
    assert r["samples_in_window"] == 0
    assert all(v is None for k, v in r.items() if k != "samples_in_window")
    assert summarize([], 0.0, 1.0)["cpu_util_pct_mean"] is None


class _Tree:
    """A tracked root whose descendants the test sets (psutil.Process stand-ins with a pid)."""

    def __init__(self) -> None:
        self.pids: list[int] = []
        self.listings = 0

    def children(self, recursive: bool) -> list:
        self.listings += 1
        return [type("Child", (), {"pid": pid})() for pid in self.pids]


def test_an_unchanged_tree_is_listed_less_often_and_a_change_resets_the_wait(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr("rigbench.trackers.sampler.time.monotonic", lambda: clock[0])
    tracker, tree = Tracker(os.getpid()), _Tree()

    def listed_at(t: float) -> bool:
        clock[0], before = t, tree.listings
        tracker._list_children(tree)
        return tree.listings > before

    assert listed_at(0.0)  # the first listing
    assert not listed_at(CHILDREN_REFRESH_S - 0.01) and listed_at(CHILDREN_REFRESH_S)  # the same: wait doubles
    assert not listed_at(3 * CHILDREN_REFRESH_S - 0.01) and listed_at(3 * CHILDREN_REFRESH_S)
    t = 3 * CHILDREN_REFRESH_S
    for _ in range(5):  # the wait stops growing at the maximum
        t += CHILDREN_REFRESH_MAX_S
        assert not listed_at(t - 0.01) and listed_at(t)
    tree.pids = [12345]  # a new descendant: seen at the next listing, and the wait starts over
    t += CHILDREN_REFRESH_MAX_S
    assert listed_at(t) and [c.pid for c in tracker._list_children(tree)] == [12345]
    assert listed_at(t + CHILDREN_REFRESH_S)
