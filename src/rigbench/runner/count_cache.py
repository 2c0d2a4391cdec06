"""Parameter and FLOP counts, cached on disk.

Counting runs a meta-device training step under a FLOP counter, whose first use in a
process costs seconds; every trial is a fresh process, so the counts are cached in
`<cache dir>/counts.json`. The key holds everything a count depends on: rigbench's version
(model definitions), the framework and its version, the workload, its network revision
(Workload.revision: a rebuilt network under an unchanged version) and its options. The
memory-traffic estimate (roofline) is cached in the same file under `<key>|traffic@<precision>`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rigbench import __version__
from rigbench.paths import cache_dir
from rigbench.workloads import Workload

if TYPE_CHECKING:
    from rigbench.frameworks.base import FrameworkAdapter


def _key(framework: str, framework_version: str, workload: Workload, options: dict[str, Any]) -> str:
    opts = ",".join(f"{k}={options[k]}" for k in sorted(options))
    return f"rigbench={__version__}|{framework}={framework_version}|{workload.name}@{workload.revision}|{opts}"


def _cached(key: str, compute: Callable[[], list[float]]) -> list[float]:
    """The cache's value for `key`, or `compute()` stored under it."""
    path = cache_dir() / "counts.json"
    try:
        cache = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        cache = {}
    if key in cache:
        return cache[key]
    value = cache[key] = list(compute())
    try:  # a cache that cannot be written only costs time
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass
    return value


def _adapter_key(adapter: FrameworkAdapter, workload: Workload, options: dict[str, Any]) -> str:
    software = adapter.software()
    return _key(adapter.NAME, str(software.get(adapter.NAME)), workload, options)


def cached_count(adapter: FrameworkAdapter, workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """`adapter.count(workload, options)`, from the cache when this exact count was made before."""
    params, flops = _cached(_adapter_key(adapter, workload, options),
                            lambda: list(adapter.count(workload, options)))
    return int(params), float(flops)


#: The element sizes a precision's step moves (frameworks/torch/traffic.py): tf32 stores fp32.
TRAFFIC_PRECISIONS = {"tf32": "fp32"}


def cached_traffic(adapter: FrameworkAdapter, workload: Workload, options: dict[str, Any],
                   precision: str = "fp32") -> tuple[float, float] | None:
    """`adapter.count_traffic(workload, options, precision)` = (bytes per step, bytes per
    sample), cached under its own key (`<count key>|traffic@<precision>`), so that count entries
    written before it existed still load; None for an adapter that cannot estimate traffic.
    Entries under the former key, `<count key>|traffic`, were counted at fp32 on the meta
    device (attention unfused) and are not read."""
    if not hasattr(adapter, "count_traffic"):
        return None
    moved = TRAFFIC_PRECISIONS.get(precision, precision)
    per_step, per_sample = _cached(_adapter_key(adapter, workload, options) + f"|traffic@{moved}",
                                   lambda: list(adapter.count_traffic(workload, options, moved)))
    return float(per_step), float(per_sample)
