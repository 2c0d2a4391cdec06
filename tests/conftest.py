import functools
import os
import subprocess
import sys

import pytest

# Tests run on pytest-xdist workers (pyproject's addopts). Each worker and the trials it starts
# would otherwise take a thread per core, and OpenMP threads that outnumber the cores spin
# against each other: a 12 s torch test took 63 s with two workers. Share the cores out.
if os.environ.get("PYTEST_XDIST_WORKER"):
    _workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    _threads = str(max(1, (os.cpu_count() or 1) // _workers))
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, _threads)

from rigbench.spec import MeasureOptions, TrialSpec


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path_factory, monkeypatch):
    """Never write into the user's real database or cache during tests."""
    base = tmp_path_factory.mktemp("rigbench-home")
    monkeypatch.setenv("RIGBENCH_DB", str(base / "default.db"))
    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(base / "cache"))


def quick_spec(workload="mlp", batch_size=8, **measure) -> TrialSpec:
    """A short trial on the CPU; `measure` overrides MeasureOptions.quick()."""
    extra = {k: measure.pop(k) for k in ("lr", "workload_options") if k in measure}
    return TrialSpec(workload=workload, device="cpu", batch_size=batch_size, threads=1,
                     measure=MeasureOptions.quick(**measure), **extra)


@functools.cache
def framework_rss_mib() -> float:
    """Resident memory of a fresh process that has imported torch and rigbench's adapter, as a
    trial's child has before its memory cap is set (runner/child.apply_memory_limit). About
    220 MiB with the CPU build, 660 MiB with a CUDA build: memory-limit tests add to it."""
    code = ("import psutil, torch, rigbench.frameworks.torch; "
            "print(psutil.Process().memory_info().rss)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return int(out.stdout) / 2**20
