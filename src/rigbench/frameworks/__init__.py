"""Registry of framework adapters.

An adapter is a subpackage (rigbench.frameworks.<name>) implementing the contract
documented in rigbench.frameworks.base (FrameworkAdapter); tests/contract/ runs every
installed one on every workload. The registry maps names to module paths so that listing
frameworks never imports one.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from rigbench.errors import UsageError

#: name -> (module path, the import name whose presence means it is installed)
FRAMEWORKS: dict[str, tuple[str, str]] = {
    "torch": ("rigbench.frameworks.torch", "torch"),
    "jax": ("rigbench.frameworks.jax", "jax"),
}


def framework_names() -> list[str]:
    return list(FRAMEWORKS)


def is_installed(name: str) -> bool:
    """True if the framework's package is importable; does not import it."""
    try:
        return importlib.util.find_spec(FRAMEWORKS[name][1]) is not None
    except (ImportError, ValueError):  # a broken or blocked install counts as absent
        return False


def installed_frameworks() -> list[str]:
    return [name for name in FRAMEWORKS if is_installed(name)]


def check_framework(name: str) -> None:
    """UsageError naming what to do when a framework is unknown or not installed."""
    if name not in FRAMEWORKS:
        raise UsageError(f"unknown framework {name!r}: choose from {', '.join(FRAMEWORKS)}")
    if not is_installed(name):
        raise UsageError(
            f"framework {name!r} is not installed: pip install 'rigbench[{name}]' "
            f"(for torch on a CPU-only machine: pip install torch==2.13.0)"
        )


def load_adapter(name: str) -> ModuleType:
    """Import an adapter module (only in child processes)."""
    check_framework(name)
    return importlib.import_module(FRAMEWORKS[name][0])
