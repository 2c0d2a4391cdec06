"""Ask a framework, in a child process, what it can see: `python -m rigbench.runner.probe NAME`.

Prints JSON: {"framework", "software", "devices": [...]}. Running this in a child keeps the CLI's process free of framework imports and GPU contexts
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
from rigbench.spec import TrialSpec

PROBE_TIMEOUT_S = 300


def probe_here(name: str) -> dict[str, Any]:
    adapter = load_adapter(name)
    # the framework starts as in a trial (e.g. Keras picks its backend from the environment)
    os.environ.update(adapter.environment(TrialSpec(workload="mlp", batch_size=1, framework=name)))
    return {"framework": name, "software": adapter.software(), "devices": adapter.list_devices()}


@cache
def probe(name: str) -> dict[str, Any]:
    """Probe framework `name` in a child process (cached for this process)."""
    check_framework(name)
    cmd = [sys.executable, "-m", "rigbench.runner.probe", name]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise UsageError(f"probing {name} took longer than {PROBE_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"{name} failed to start in a child process: {last}")
    return json.loads(proc.stdout)


if __name__ == "__main__":
    print(json.dumps(probe_here(sys.argv[1])))
