"""Registry of framework adapters.

An adapter is a subpackage (rigbench.frameworks.<name>) implementing the contract
documented in rigbench.frameworks.base (FrameworkAdapter); tests/contract/ runs every
installed one on every workload. The registry maps names to module paths so that listing
frameworks never imports one.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, cast

from rigbench.errors import UsageError

if TYPE_CHECKING:
    from rigbench.frameworks.base import FrameworkAdapter

#: name -> (module path, the import names whose presence means it is installed, the pip
#: extras that install them). The registry alone answers "is it installed?" (adapters do not):
#: the Keras-on-a-backend adapters need Keras and the backend both, JAX needs flax and optax too.
FRAMEWORKS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "torch": ("rigbench.frameworks.torch", ("torch",), "torch"),
    "jax": ("rigbench.frameworks.jax", ("jax", "flax", "optax"), "jax"),
    "tensorflow": ("rigbench.frameworks.tensorflow", ("tensorflow", "keras"), "tensorflow"),
    "keras-jax": ("rigbench.frameworks.keras_jax", ("keras", "jax"), "keras,jax"),
    "keras-torch": ("rigbench.frameworks.keras_torch", ("keras", "torch"), "keras,torch"),
}


def framework_names() -> list[str]:
    return list(FRAMEWORKS)


def is_installed(name: str) -> bool:
    """True if every package the framework needs is importable; does not import them."""
    try:
        return all(importlib.util.find_spec(module) is not None for module in FRAMEWORKS[name][1])
    except (ImportError, ValueError):  # a broken or blocked install counts as absent
        return False


def installed_frameworks() -> list[str]:
    return [name for name in FRAMEWORKS if is_installed(name)]


def check_framework_name(name: str) -> None:
    """UsageError when `name` is no framework rigbench knows (installed or not)."""
    if name not in FRAMEWORKS:
        raise UsageError(f"unknown framework {name!r}: choose from {', '.join(FRAMEWORKS)}")


def check_framework(name: str) -> None:
    """UsageError naming what to do when a framework is unknown or not installed."""
    check_framework_name(name)
    if not is_installed(name):
        # PyPI's Linux torch is the CUDA build (GBs): a CPU-only machine wants torch's CPU index
        cpu_torch = (" (a CPU-only machine: pip install torch --index-url https://download.pytorch.org/whl/cpu first)"
                     if "torch" in FRAMEWORKS[name][1] else "")
        raise UsageError(f"framework {name!r} is not installed: pip install 'rigbench[{FRAMEWORKS[name][2]}]'{cpu_torch}")


def load_adapter(name: str) -> FrameworkAdapter:
    """Import an adapter module (only in child processes); the module is the contract's
    FrameworkAdapter (tests/contract/ checks every installed one)."""
    check_framework(name)
    return cast("FrameworkAdapter", importlib.import_module(FRAMEWORKS[name][0]))
