"""The Keras-family adapter contract (tests/contract/keras_family.py, keras_networks.py) for tensorflow,
and TensorFlow's calibration kernels, which its child runs too (keras_child._calibrations)."""

from tests.contract.keras_family import *  # noqa: F403 - the checks and their `report` fixture
from tests.contract.keras_networks import *  # noqa: F403 - the networks against torch's

FRAMEWORK = "tensorflow"


def test_quick_and_full_calibrations_copy_the_same_buffer_on_the_cpu(report):
    """TensorFlow's calibration kernels under the shared driver, on this CPU: --quick copies the
    same buffer as the full run (TensorFlow used to keep its own 64 MiB quick buffer, which read
    23% low on a busy 2-core VM), and the kernel really streams that many bytes. The child's
    matmul plans are shrunk through analysis/matmul_peak.py to keep it quick."""
    from rigbench.analysis.matmul_peak import COPY_BYTES, copy_repeats

    out = report["calibration"]
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
        # the thread pools the child's prepare() sized (a worker's share of the cores)
        assert cal["device_type"] == "cpu" and cal["threads"] == report["threads"] and "tensorflow" in cal["software"]
    assert buffers == {"True": COPY_BYTES["cpu"], "False": COPY_BYTES["cpu"]}
    assert out["produced"] == [COPY_BYTES["cpu"]] * 2  # the kernel wrote the whole buffer
