"""A GPU trial whose speed is its host's (analysis/host_bound.py), and the note `rigbench compare`
gives such a pair. Figures are the two H200 leases' stored trials (docs/results/gpu-h200-frameworks.md)."""

from __future__ import annotations

import numpy as np

from rigbench.analysis.compare import compare_results
from rigbench.analysis.host_bound import host_bound
from rigbench.spec import Metrics, Result, TrialSpec

SOFTWARE = {"python": "3.12.3", "torch": "2.11.0+cu130"}


def gpu_trial(gpu_pct, cpu_ms, step_ms, rid=1, run_id="a", device="cuda:0", world_size=1, n=200):
    spec = TrialSpec(workload="resnet", device=device, batch_size=128, world_size=world_size)
    times = list(np.random.default_rng(rid).normal(step_ms / 1e3, step_ms / 1e5, n))
    metrics = Metrics(samples_per_s=128e3 / step_ms, step_time_ms_median=step_ms, cpu_ms_per_step=cpu_ms,
                      gpu_util_pct_mean=gpu_pct, steps_measured=n)
    return Result(id=rid, run_id=run_id, created_at="2026-01-01T00:00:00+00:00", spec=spec, status="ok",
                  device_name="NVIDIA H200", software=SOFTWARE, metrics=metrics, step_times_s=times)


def test_the_gpu_idle_while_the_cpu_launches_the_whole_step_is_host_bound():
    assert host_bound(gpu_trial(43.4, 10.83, 10.91))      # resnet, first lease
    assert host_bound(gpu_trial(82.3, 6.06, 5.95))        # resnet, second lease
    assert not host_bound(gpu_trial(99.9, 141.0, 141.7))  # GPT compiled: the CPU spins in the sync, GPU busy
    assert not host_bound(gpu_trial(80.2, 2.2, 5.64))     # JAX's lstm: the host idles half the step
    assert not host_bound(gpu_trial(43.4, 10.83, 10.91, device="cpu"))
    assert not host_bound(gpu_trial(43.4, 21.7, 10.91, world_size=2))  # ranks sum their CPU time


def test_compare_says_a_change_between_host_bound_trials_is_the_hosts():
    """Equal GPUs, 1.83x apart: the pair keeps its verdict, with a note naming both sides' figures."""
    a, b = gpu_trial(43.4, 10.83, 10.91), gpu_trial(82.3, 6.06, 5.95, rid=2, run_id="b")
    [pair] = compare_results([a], [b], same_machine=False).pairs
    assert pair.verdict == "faster"
    [note] = [n for n in pair.notes if n.startswith("host-bound")]
    assert note.startswith("host-bound on both sides (A: GPU busy 43%, CPU 10.83 ms in a 10.91 ms step; "
                           "B: GPU busy 82%, CPU 6.06 ms in a 5.95 ms step)"), note
    c = gpu_trial(99.9, 6.0, 6.0, rid=3, run_id="c")
    [pair] = compare_results([a], [c], same_machine=False).pairs
    assert any(n.startswith("host-bound in A only (A: GPU busy 43%") for n in pair.notes), pair.notes
    [pair] = compare_results([c], [gpu_trial(99.0, 6.0, 6.1, rid=4, run_id="d")], same_machine=False).pairs
    assert not any(n.startswith("host-bound") for n in pair.notes), pair.notes
    # the H100 bundle's trials predate the CPU time per step: that side cannot say, and is not called free of it
    old = gpu_trial(20.0, None, 4.0, rid=5, run_id="e")
    [pair] = compare_results([old], [b], same_machine=False).pairs
    assert any(n.startswith("host-bound in B; A cannot say (no GPU busy or CPU time per step stored) (B: GPU busy 82%")
               for n in pair.notes), pair.notes
