"""What a Keras-on-a-backend adapter (keras-jax, keras-torch) takes from its backend's native
adapter: the environment with KERAS_BACKEND added, the native versions with Keras' beside them,
the native device list under its own name. Written once so the two adapters stay one line each.

Imports no framework at module level: `environment` runs before the framework starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rigbench.frameworks.base import DeviceInfo
    from rigbench.spec import TrialSpec
    from rigbench.workloads import Workload


def environment(native: Callable[[TrialSpec], dict[str, str]], backend: str, spec: TrialSpec) -> dict[str, str]:
    """The native adapter's environment, and Keras on `backend` (fixed when keras is first imported)."""
    return {**native(spec), "KERAS_BACKEND": backend}


def software(native: Callable[[], dict[str, Any]], name: str, backend: str) -> dict[str, Any]:
    """The native adapter's versions, Keras' version, and `name` naming both (the count cache's key)."""
    import keras

    info = native()
    return {**info, name: f"keras {keras.__version__} on {backend} {info[backend]}", "keras": keras.__version__}


def list_devices(native: Callable[[], list[DeviceInfo]], name: str) -> list[DeviceInfo]:
    """The devices the backend sees (the CPU first), as the Keras adapter's."""
    return [{**row, "framework": name} for row in native()]


def attention(backend: str, spec: TrialSpec, workload: Workload) -> str | None:
    """The attention kernel Keras runs for a transformer workload on `backend` (see
    keras/transformers.py); None for other workloads."""
    from rigbench.workloads.flops import transformer_shape

    shape = transformer_shape(workload, spec.workload_options)
    if shape is None:
        return None
    from rigbench.frameworks.keras import transformers

    return transformers.attention(backend, spec.device, spec.precision, shape)
