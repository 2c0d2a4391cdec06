"""What TensorFlow offers on this machine: its versions, its devices, the device a rigbench id
names, and the CPU thread budget (the contract's `software`, `list_devices`, `environment`).
tensorflow is imported inside the functions, so the package can load this module without it.

Threads: TensorFlow sizes its intra-op pool (the threads one op such as a matmul splits over)
and its inter-op pool (ops run side by side) once, when its runtime starts. With `threads`,
the environment asks for intra-op = `threads` and inter-op = 1 (TF_NUM_INTRAOP_THREADS,
TF_NUM_INTEROP_THREADS, read at start, so they hold even if counting starts the runtime
before `build`), and `set_threads` says the same through tf.config where it still can: one op
at a time over `threads` cores, the budget torch's single intra-op pool gets.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from rigbench.errors import UsageError
from rigbench.hw.cpu import cpu_name

if TYPE_CHECKING:
    from rigbench.frameworks.base import DeviceInfo
    from rigbench.spec import TrialSpec

#: The adapter's name (the package re-exports it as the contract's NAME).
NAME = "tensorflow"


def environment(spec: TrialSpec) -> dict[str, str]:
    """Variables read once when TensorFlow starts: Keras on TensorFlow, GPU memory taken as
    needed (TensorFlow otherwise maps nearly all of it up front), TensorFlow's start-up log
    quiet, NVML's GPU order, and with `threads` the thread pools (see the module doc)."""
    env = {"KERAS_BACKEND": "tensorflow", "TF_FORCE_GPU_ALLOW_GROWTH": "true", "TF_CPP_MIN_LOG_LEVEL": "2",
           "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    if spec.threads is None:
        return env
    env.update({var: str(spec.threads) for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                   "TF_NUM_INTRAOP_THREADS")})
    env["TF_NUM_INTEROP_THREADS"] = "1"
    return env


def set_threads(threads: int | None) -> None:
    """intra-op = `threads`, inter-op = 1, if the runtime has not started yet (otherwise the
    environment's variables already did it)."""
    if threads is None:
        return
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    except RuntimeError:  # the runtime has started: its pools were sized from the environment
        pass


def num_threads() -> int | None:
    """The intra-op thread count in effect: the setting, or (0 = TensorFlow's default) the CPUs
    this process may use."""
    import tensorflow as tf

    configured = tf.config.threading.get_intra_op_parallelism_threads() or int(
        os.environ.get("TF_NUM_INTRAOP_THREADS", "0"))
    if configured:
        return configured
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


def software() -> dict[str, Any]:
    """Versions that decide whether two TensorFlow results are comparable (without starting the
    runtime: the thread pools are not sized yet when the runner asks)."""
    import keras
    import tensorflow as tf

    build = tf.sysconfig.get_build_info()
    return {"tensorflow": tf.__version__, "keras": keras.__version__, "cuda": build.get("cuda_version"),
            "cudnn": build.get("cudnn_version"), "num_threads": num_threads()}


def _gpus() -> list[Any]:
    import tensorflow as tf

    return list(tf.config.list_physical_devices("GPU"))


def gpu_name(index: int) -> str:
    import tensorflow as tf

    details = tf.config.experimental.get_device_details(_gpus()[index])
    return str(details.get("device_name") or f"GPU {index}")


def list_devices() -> list[DeviceInfo]:
    """The CPU, then the GPUs TensorFlow sees (cuda:N; kind rocm on a ROCm build)."""
    import psutil
    import tensorflow as tf

    rows: list[DeviceInfo] = [{"id": "cpu", "kind": "cpu", "name": cpu_name(),
                               "memory_bytes": psutil.virtual_memory().total, "framework": NAME}]
    kind = "rocm" if tf.test.is_built_with_rocm() else "cuda"
    for i, _ in enumerate(_gpus()):
        rows.append({"id": f"cuda:{i}", "kind": kind, "name": gpu_name(i), "memory_bytes": None, "framework": NAME})
    return rows


def resolve_device(device: str) -> tuple[str, str, bool]:
    """(TensorFlow/Keras device name, human name, is a GPU) of a rigbench id; UsageError listing
    the known ids otherwise. A bare "cuda" means cuda:0."""
    kind, _, index = device.partition(":")
    known = ["cpu", *(f"cuda:{i}" for i, _ in enumerate(_gpus()))]
    wanted = "cpu" if kind == "cpu" else f"{kind}:{index or 0}"
    if wanted not in known:
        raise UsageError(f"device {device!r} is not available to tensorflow here: choose from {', '.join(known)}")
    if wanted == "cpu":
        return "cpu:0", cpu_name(), False
    i = int(wanted.partition(":")[2])
    return f"gpu:{i}", gpu_name(i), True
