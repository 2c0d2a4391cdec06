"""Ask a framework, in a child process, what it can see: `python -m rigbench.runner.probe NAME [--count]`.

Prints JSON: {"framework", "software", "devices": [...], "counts": {workload: [params, flops]}},
with the parameters counted by the adapter and the workload's analytic training FLOPs per sample.
Running this in a child keeps the CLI's process free of framework imports and GPU contexts
(a CUDA context alone takes hundreds of MiB of GPU memory).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from typing import Any

from rigbench.errors import UsageError
from rigbench.frameworks import check_framework, load_adapter
from rigbench.runner.count_cache import cached_count
from rigbench.spec import TrialSpec
from rigbench.workloads import WORKLOADS, resolved_options
from rigbench.workloads.flops import train_flops_per_sample

PROBE_TIMEOUT_S = 300


def probe_here(name: str, count: bool) -> dict[str, Any]:
    adapter = load_adapter(name)
    # the framework starts as in a trial (e.g. Keras picks its backend from the environment)
    os.environ.update(adapter.environment(TrialSpec(workload="mlp", batch_size=1, framework=name)))
    out: dict[str, Any] = {"framework": name, "software": adapter.software(),
                           "devices": adapter.list_devices()}
    if count:
        out["counts"] = {
            w.name: [cached_count(adapter, w, resolved_options(w, {}))[0], train_flops_per_sample(w)]
            for w in WORKLOADS.values()
        }
    return out


@cache
def probe(name: str, count: bool = False) -> dict[str, Any]:
    """Probe framework `name` in a child process (cached for this process)."""
    check_framework(name)
    cmd = [sys.executable, "-m", "rigbench.runner.probe", name] + (["--count"] if count else [])
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise UsageError(f"probing {name} took longer than {PROBE_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"{name} failed to start in a child process: {last}")
    return json.loads(proc.stdout)


if __name__ == "__main__":
    args = sys.argv[1:]
    print(json.dumps(probe_here(args[0], count="--count" in args)))
