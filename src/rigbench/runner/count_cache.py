"""Parameter and FLOP counts, cached on disk.

Counting runs a meta-device training step under a FLOP counter, whose first use in a
process costs seconds; every trial is a fresh process, so the counts are cached in
`<cache dir>/counts.json`. The key holds everything a count depends on: rigbench's version
(model definitions), the framework and its version, the workload and its options.
"""

from __future__ import annotations

import json
import os
from types import ModuleType
from typing import Any

from rigbench import __version__
from rigbench.fingerprint import cache_dir
from rigbench.workloads import Workload


def _key(framework: str, framework_version: str, workload: Workload, options: dict[str, Any]) -> str:
    opts = ",".join(f"{k}={options[k]}" for k in sorted(options))
    return f"rigbench={__version__}|{framework}={framework_version}|{workload.name}|{opts}"


def cached_count(adapter: ModuleType, workload: Workload, options: dict[str, Any]) -> tuple[int, float]:
    """`adapter.count(workload, options)`, from the cache when this exact count was made before."""
    software = adapter.software()
    key = _key(adapter.NAME, str(software.get(adapter.NAME)), workload, options)
    path = cache_dir() / "counts.json"
    try:
        cache = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        cache = {}
    if key in cache:
        params, flops = cache[key]
        return int(params), float(flops)
    params, flops = adapter.count(workload, options)
    cache[key] = [params, flops]
    try:  # a cache that cannot be written only costs time
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass
    return params, flops
