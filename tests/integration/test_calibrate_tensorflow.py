"""TensorFlow's calibration kernels under the shared driver, on this CPU: --quick copies the same
buffer as the full run (TensorFlow used to keep its own 64 MiB quick buffer, which read 23% low
on a busy 2-core VM), and the kernel really streams that many bytes. Runs in a child
(`python -m tests.integration.test_calibrate_tensorflow`): TensorFlow and Keras' backend are
fixed per process. The matmul plans are shrunk through analysis/matmul_peak.py to keep it quick."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.timeout(240),
              pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs tensorflow")]


def child() -> dict[str, Any]:
    """Both calibrations (quick, full) of the CPU with TensorFlow's kernels; each copy kernel's
    output size in bytes, as the kernel produced it."""
    from rigbench.analysis import matmul_peak
    from rigbench.frameworks import tensorflow as adapter
    from rigbench.frameworks.driver.calibration import calibrate

    adapter.prepare(1)
    for plans in (matmul_peak.QUICK, matmul_peak.FULL):
        plans["cpu"] = matmul_peak.MatmulPlan((64, 128), 2, 0.01, matmul_peak.MAX_SINGLE_S)
    kernels = adapter.calibration_kernels("cpu")
    produced: list[int] = []
    copy = kernels.copy

    def measured_copy(nbytes: int) -> Any:
        fn = copy(nbytes)
        produced.append(int(fn().numpy().nbytes))
        return fn
    kernels.copy = measured_copy
    found = {str(quick): calibrate(kernels, "cpu", ["fp32", "tf32"], quick=quick) for quick in (True, False)}
    return {"calibrations": found, "produced": produced}


def test_quick_and_full_copy_the_same_buffer_on_the_cpu():
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "KERAS_BACKEND": "tensorflow"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "tests.integration.test_calibrate_tensorflow"], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=200)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    out = json.loads(lines[-1].removeprefix("RESULT "))
    from rigbench.analysis.matmul_peak import COPY_BYTES, copy_repeats

    buffers = {}
    for quick, cal in out["calibrations"].items():
        rows = {(m["kind"], m["precision"]): m for m in cal["measurements"]}
        bandwidth = rows[("memory_bandwidth", None)]
        assert bandwidth["status"] == "ok" and bandwidth["value"] > 1e8
        assert bandwidth["detail"]["repeats"] == copy_repeats(quick == "True")
        buffers[quick] = bandwidth["detail"]["buffer_bytes"]
        fp32 = rows[("matmul", "fp32")]
        assert fp32["status"] == "ok" and [s["n"] for s in fp32["detail"]["sizes"]] == [64, 128]
        assert fp32["detail"]["dtype"] == "float32"
        assert rows[("matmul", "tf32")]["status"] == "unsupported"
        assert {rows[(k, None)]["status"] for k in ("h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned")} == {"n/a"}
        assert cal["device_type"] == "cpu" and cal["threads"] == 1 and "tensorflow" in cal["software"]
    assert buffers == {"True": COPY_BYTES["cpu"], "False": COPY_BYTES["cpu"]}
    assert out["produced"] == [COPY_BYTES["cpu"]] * 2  # the kernel wrote the whole buffer


if __name__ == "__main__":
    print("RESULT " + json.dumps(child()), flush=True)
