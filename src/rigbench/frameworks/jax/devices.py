"""What JAX offers on this machine: its versions, its devices, the device a rigbench id names,
and the CPU thread budget (the contract's `software`, `list_devices`, `environment`). jax is
imported inside the functions, so the package can load this module without jax.

Threads: XLA's CPU client sizes its thread pool (named tf_XLAEigen) when it starts, from
PJRT_NPROC when set, else from the CPUs the process may run on. `environment` sets PJRT_NPROC to
`threads`, so JAX runs exactly the threads asked for, as torch and TensorFlow do, above the
core count too (measured by `num_threads` once the backend runs); `pin_threads` also restricts
the process's CPU affinity to `threads` CPUs (data-parallel ranks on CPUs of their own). The
environment turns Eigen's multi-threading off for one thread and sizes the host BLAS pools
(numpy in the same process) to the same budget.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from rigbench.errors import UsageError
from rigbench.hw.cpu import cpu_name

if TYPE_CHECKING:
    import jax

    from rigbench.frameworks.base import DeviceInfo
    from rigbench.spec import TrialSpec

#: The adapter's name (the package re-exports it as the contract's NAME).
NAME = "jax"

#: jax platform -> rigbench device kind prefix (GPUs are "cuda:N" under CUDA and ROCm alike)
_PREFIX = {"cpu": "cpu", "gpu": "cuda", "cuda": "cuda", "rocm": "cuda"}


#: The share of a GPU's memory XLA's allocator may grow to. Its default, 0.75, caps the pool
#: whether or not it is preallocated, so a JAX max-batch search would stop at three quarters of
#: the card while torch and TensorFlow fill nearly all of it; 0.95 leaves the rest to the CUDA
#: context and the libraries' workspaces outside the pool. A fraction the user set wins.
MEMORY_FRACTION = "0.95"
#: The variables XLA reads it from (the second is the older name; both set is an error in jaxlib).
MEMORY_FRACTION_VARIABLES = ("XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION")


def environment(spec: TrialSpec) -> dict[str, str]:
    """Variables read once when jax starts: no up-front grab of GPU memory (JAX otherwise
    preallocates 75% of it) but a pool that may grow to MEMORY_FRACTION of it, as far as torch's
    would, and with `threads` the host thread pools (see the module doc)."""
    env = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    if not any(os.environ.get(name) for name in MEMORY_FRACTION_VARIABLES):
        env["XLA_PYTHON_CLIENT_MEM_FRACTION"] = MEMORY_FRACTION
    if spec.threads is None:
        return env
    env.update({var: str(spec.threads) for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                   "PJRT_NPROC")})
    if spec.threads == 1:
        flags = os.environ.get("XLA_FLAGS", "")
        env["XLA_FLAGS"] = f"{flags} --xla_cpu_multi_thread_eigen=false".strip()
    return env


def pin_threads(threads: int | None) -> None:
    """Restrict the process to `threads` of its CPUs, before the XLA CPU client starts and
    sizes its pool from them; no-op without a count or on a non-Linux host. The lowest
    numbered, or for a data-parallel rank the next `threads` after the lower local ranks'
    (wrapping round), so that ranks on one machine do not share CPUs while there are enough."""
    if threads is None or not hasattr(os, "sched_setaffinity"):
        return
    allowed = sorted(os.sched_getaffinity(0))
    start = _local_rank() * threads
    os.sched_setaffinity(0, {allowed[(start + i) % len(allowed)] for i in range(min(threads, len(allowed)))})


def _local_rank() -> int:
    """This process's local rank under a data-parallel launcher (rigbench/ranks.py), else 0."""
    from rigbench.ranks import RankInfo

    try:
        return RankInfo.from_env().local_rank
    except UsageError:  # not started as a rank
        return 0


def num_threads() -> int | None:
    """The size of XLA's CPU thread pool: its threads counted once the backend runs (Linux),
    else what XLA sizes it from: PJRT_NPROC, NPROC, or the CPUs this process may use."""
    counted = _pool_threads()
    if counted:
        return counted
    for var in ("PJRT_NPROC", "NPROC"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


def _pool_threads() -> int:
    """This process's threads of XLA's CPU pool (0 before the backend starts, or off Linux)."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 0
    count = 0
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm", encoding="utf-8") as fh:
                count += fh.read().strip().endswith("XLAEigen")
        except OSError:  # the thread ended meanwhile
            continue
    return count


#: Distributions of the GPU plugins that carry XLA's CUDA/ROCm backends (their versions decide
#: comparability on a GPU as jaxlib's does on the CPU: XLA itself is built into jaxlib).
_PLUGINS = ("jax-cuda12-plugin", "jax-cuda13-plugin", "jax-rocm6-plugin", "jax-rocm7-plugin")


def software() -> dict[str, Any]:
    """Versions that decide whether two JAX results are comparable. Read from the installed
    packages, without starting a backend: the runner asks before `build`, which must pin the
    threads before XLA's CPU client starts its pool."""
    from importlib import metadata

    import flax
    import jax
    import jaxlib
    import optax

    plugins = {}
    for name in _PLUGINS:
        try:
            plugins[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "flax": flax.__version__,
            "optax": optax.__version__, "gpu_plugins": plugins, "num_threads": num_threads()}


def device_id(device: jax.Device) -> str:
    return "cpu" if device.platform == "cpu" else f"{_PREFIX.get(device.platform, device.platform)}:{device.id}"


def _memory(device: jax.Device) -> int | None:
    try:
        stats = device.memory_stats() or {}
    except Exception:  # noqa: BLE001 - backends without statistics raise various errors
        stats = {}
    return stats.get("bytes_limit")


def device_name(device: jax.Device) -> str:
    """Human name: the GPU's kind (e.g. "NVIDIA H100 80GB HBM3") or the CPU's model."""
    if device.platform == "cpu":
        return cpu_name()
    return str(device.device_kind)


def _accelerators() -> list[jax.Device]:
    import jax

    try:
        return [d for d in jax.devices() if d.platform != "cpu"]
    except RuntimeError:  # no accelerator backend
        return []


def list_devices() -> list[DeviceInfo]:
    """The CPU, then the GPUs jax sees (cuda:N; kind rocm on a ROCm build)."""
    import jax
    import psutil

    cpu = jax.devices("cpu")[0]
    rows: list[DeviceInfo] = [{"id": "cpu", "kind": "cpu", "name": device_name(cpu),
                               "memory_bytes": psutil.virtual_memory().total, "framework": NAME}]
    for device in _accelerators():
        kind = "rocm" if "rocm" in str(device.client.platform_version).lower() else "cuda"
        rows.append({"id": device_id(device), "kind": kind, "name": device_name(device),
                     "memory_bytes": _memory(device), "framework": NAME})
    return rows


def resolve_device(device: str) -> jax.Device:
    """The jax.Device a rigbench id names; UsageError listing the known ids otherwise.
    A bare kind ("cuda") means index 0."""
    import jax

    kind, _, index = device.partition(":")
    wanted = "cpu" if kind == "cpu" else f"{kind}:{index or 0}"
    found = {device_id(d): d for d in (*jax.devices("cpu")[:1], *_accelerators())}
    if wanted not in found:
        raise UsageError(f"device {device!r} is not available to jax here: choose from {', '.join(found)}")
    return found[wanted]
