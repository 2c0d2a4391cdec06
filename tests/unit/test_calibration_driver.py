"""The shared calibration driver (frameworks/driver/calibration.py) on fake kernels, pure Python:
its rows against hand numbers. A fake matmul of size n takes a fixed 2*n^3 / RATE seconds per
call on the fake clock, so every measured size reads RATE; a fake copy takes COPY_S. The
plans and buffers are analysis/matmul_peak.py's, for --quick and the full run alike."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from rigbench.analysis import matmul_peak
from rigbench.analysis.matmul_peak import COPY_BYTES, RULE, copy_repeats, matmul_plan
from rigbench.frameworks.driver.calibration import COPY_WARMUPS, calibrate

RATE = 100e9  # FLOP/s of every fake matmul
COPY_S = 0.05  # seconds of one fake on-device copy
TRANSFER_S = 0.02  # seconds of one fake host<->device copy


class Call:
    """A fake thunk: what `timed` charges per call, and what it was."""

    def __init__(self, label: str, seconds: float) -> None:
        self.label, self.seconds = label, seconds

    def __call__(self) -> None:
        raise AssertionError("the driver times thunks through kernels.timed, never calls them itself")


class FakeError(Exception):
    pass


class FakeKernels:
    """CalibrationKernels with a fake clock: timed(fn, k) = k x fn's seconds. `fail` maps a
    (precision, n) to the exception its allocation raises; `problems` maps a precision to why
    it cannot run."""

    errors = (FakeError,)

    def __init__(self, accelerator: bool = False, rate: float = RATE, fail: dict[tuple[str, int], Exception] | None = None,
                 problems: dict[str, str] | None = None, budget: Callable[[int], int] = lambda nbytes: nbytes) -> None:
        self.accelerator = accelerator
        self.device_type = "cuda" if accelerator else "cpu"
        self.device_name = "Fake GPU" if accelerator else "Fake CPU"
        self.rate, self.fail, self.problems, self.budget = rate, fail or {}, problems or {}, budget
        self.timed_calls: list[tuple[str, int]] = []
        self.allocated: list[tuple[str, Any]] = []
        self.transfer_calls: list[str] = []

    def is_oom(self, exc: BaseException) -> bool:
        return "out of memory" in str(exc)

    def precision_problem(self, precision: str) -> str | None:
        return self.problems.get(precision)

    def dtype_name(self, precision: str) -> str:
        return f"fake-{precision}"

    def matmul(self, precision: str, n: int) -> Callable[[], object]:
        self.allocated.append(("matmul", (precision, n)))
        if (precision, n) in self.fail:
            raise self.fail[(precision, n)]
        return Call(f"{precision} n={n}", 2 * n**3 / self.rate)

    def copy(self, nbytes: int) -> Callable[[], object]:
        self.allocated.append(("copy", nbytes))
        return Call("copy", COPY_S)

    def timed(self, fn: Callable[[], object], iterations: int) -> float:
        assert isinstance(fn, Call)
        self.timed_calls.append((fn.label, iterations))
        return iterations * fn.seconds

    def copy_budget(self, nbytes: int) -> int:
        return self.budget(nbytes)

    def transfer(self, nbytes: int, direction: str, pinned: bool) -> Callable[[], float] | str:
        self.allocated.append((f"{direction} pinned={pinned}", nbytes))
        if pinned:
            return "Fake offers no pinned host buffers"

        def once() -> float:
            self.transfer_calls.append(direction)
            return TRANSFER_S
        return once

    def software(self) -> dict[str, Any]:
        return {"fake": "1.0", "num_threads": 2}


def rows_of(found: dict[str, Any]) -> dict[tuple[str, str | None], dict[str, Any]]:
    return {(m["kind"], m["precision"]): m for m in found["measurements"]}


@pytest.mark.parametrize("quick", [True, False])
def test_the_matmul_row_is_the_median_rate_at_the_largest_size_within_the_budget(quick):
    kernels, said = FakeKernels(), []
    found = calibrate(kernels, "cpu", ["fp32"], quick=quick, on_progress=said.append)
    plan = matmul_plan("cpu", quick)
    row = rows_of(found)[("matmul", "fp32")]
    # 2 * 4096^3 / 100 GFLOP/s = 1.37 s: within 4 x the 1 s budget, so timed once, then dropped
    fits = [n for n in plan.sizes if 2 * n**3 / RATE <= plan.max_single_s]
    assert fits[-1] == 2048 and 4096 in plan.sizes
    assert row["status"] == "ok" and row["unit"] == "FLOP/s"
    assert row["value"] == pytest.approx(2 * 2048**3 / (2 * 2048**3 / RATE), rel=1e-12)
    detail = row["detail"]
    assert [s["n"] for s in detail["sizes"]] == fits
    assert detail["peak_n"] == 2048
    assert detail["stopped"] == "n=4096 skipped: one matmul took 1.4 s (limit 1 s)"
    assert {k: detail[k] for k in ("repeats", "repeat_s", "max_single_s", "rule", "dtype")} == {
        "repeats": plan.repeats, "repeat_s": plan.repeat_s, "max_single_s": plan.max_single_s, "rule": RULE,
        "dtype": "fake-fp32"}
    for size in detail["sizes"]:
        n, single = size["n"], 2 * size["n"] ** 3 / RATE
        assert size["single_s"] == single
        assert size["iterations"] == max(1, math.ceil(plan.repeat_s / single))
        assert len(size["seconds_per_matmul"]) == plan.repeats
        assert size["flops_per_s"] == pytest.approx(RATE, rel=1e-12)
        # first call untimed, one single timed call, a warm-up repeat, then the timed repeats
        calls = [c for label, c in kernels.timed_calls if label == f"fp32 n={n}"]
        assert calls == [1, 1] + [size["iterations"]] * (1 + plan.repeats)
    # the size over the budget: its first call and one timed call, nothing more
    assert [c for label, c in kernels.timed_calls if label == "fp32 n=4096"] == [1, 1]
    assert said[:len(fits)] == [f"matmul fp32 n={n}: 0.1 TFLOP/s" for n in fits]


def test_a_size_predicted_far_over_the_budget_is_not_even_allocated():
    kernels = FakeKernels(rate=1e9)  # 2 * 1024^3 / 1 GFLOP/s = 2.1 s: timed once; 2048: 17 s, skipped
    row = rows_of(calibrate(kernels, "cpu", ["bf16"], quick=True))[("matmul", "bf16")]
    assert [s["n"] for s in row["detail"]["sizes"]] == [512]
    assert row["detail"]["stopped"] == "n=1024 skipped: one matmul took 2.1 s (limit 1 s)"
    kernels = FakeKernels(rate=0.1e9)  # 1024 predicted at 21 s > 4 x 1 s: never allocated
    row = rows_of(calibrate(kernels, "cpu", ["bf16"], quick=True))[("matmul", "bf16")]
    assert row["detail"]["stopped"] == "n=1024 skipped: one matmul would take about 21 s (limit 1 s)"
    assert [a for a in kernels.allocated if a[0] == "matmul"] == [("matmul", ("bf16", 512))]


@pytest.mark.parametrize("quick", [True, False])
def test_the_memory_bandwidth_buffer_is_the_same_for_quick_and_full(quick):
    kernels, said = FakeKernels(), []
    row = rows_of(calibrate(kernels, "cpu", [], quick=quick, on_progress=said.append))[("memory_bandwidth", None)]
    nbytes, repeats = COPY_BYTES["cpu"], copy_repeats(quick)
    assert ("copy", nbytes) in kernels.allocated
    assert row["status"] == "ok" and row["unit"] == "B/s"
    assert row["value"] == pytest.approx(2 * nbytes / COPY_S, rel=1e-12)
    assert row["detail"] == {"buffer_bytes": nbytes, "bytes_per_copy": 2 * nbytes,
                             "counted": "bytes read + bytes written", "seconds": [COPY_S] * repeats,
                             "repeats": repeats, "rule": "median of repeats"}
    assert [c for label, c in kernels.timed_calls if label == "copy"] == [COPY_WARMUPS] + [1] * repeats
    assert said == [f"memory bandwidth: {2 * nbytes / COPY_S / 1e9:.3g} GB/s"]


def test_a_cpu_has_no_host_copies_and_the_result_names_the_device():
    kernels = FakeKernels()
    found = calibrate(kernels, "cpu", ["fp32"], quick=True)
    rows = rows_of(found)
    for kind in ("h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned"):
        assert rows[(kind, None)] == {"kind": kind, "precision": None, "unit": "B/s", "value": None, "status": "n/a",
                                      "detail": {"reason": "host memory: the CPU needs no copy"}}
    assert not [a for a in kernels.allocated if a[0].startswith(("h2d", "d2h"))]
    assert [m["kind"] for m in found["measurements"]] == [
        "matmul", "memory_bandwidth", "h2d_pageable", "h2d_pinned", "d2h_pageable", "d2h_pinned"]
    assert {k: v for k, v in found.items() if k != "measurements"} == {
        "device": "cpu", "device_name": "Fake CPU", "device_type": "cpu", "threads": 2, "quick": True,
        "software": {"fake": "1.0", "num_threads": 2}}


def test_an_accelerator_copies_both_ways_within_its_budget_and_says_why_not_pinned():
    kernels, said = FakeKernels(accelerator=True, rate=1e15, budget=lambda nbytes: nbytes // 2 + 3), []
    found = calibrate(kernels, "cuda:0", ["fp32"], quick=False, on_progress=said.append)
    rows, repeats = rows_of(found), copy_repeats(False)
    nbytes = COPY_BYTES["accelerator"] // 2  # the budget, down to whole float32 elements
    assert [s["n"] for s in rows[("matmul", "fp32")]["detail"]["sizes"]] == list(matmul_plan("accelerator", False).sizes)
    assert rows[("memory_bandwidth", None)]["detail"]["buffer_bytes"] == nbytes
    for direction in ("h2d", "d2h"):
        row = rows[(f"{direction}_pageable", None)]
        assert row["status"] == "ok" and row["value"] == pytest.approx(nbytes / TRANSFER_S, rel=1e-12)
        assert row["detail"] == {"buffer_bytes": nbytes, "counted": "bytes copied (one direction)",
                                 "seconds": [TRANSFER_S] * repeats, "repeats": repeats, "rule": "median of repeats",
                                 "pinned": False}
        assert kernels.transfer_calls.count(direction) == COPY_WARMUPS + repeats
        assert rows[(f"{direction}_pinned", None)]["status"] == "unsupported"
        assert rows[(f"{direction}_pinned", None)]["detail"] == {"reason": "Fake offers no pinned host buffers"}
    assert said[-2:] == [f"{k}: {nbytes / TRANSFER_S / 1e9:.3g} GB/s" for k in ("h2d_pageable", "d2h_pageable")]
    assert found["device_type"] == "cuda" and found["device_name"] == "Fake GPU"


def test_a_precision_the_device_lacks_is_unsupported_without_a_kernel():
    kernels = FakeKernels(problems={"tf32": "tf32 is an NVIDIA GPU format"})
    row = rows_of(calibrate(kernels, "cpu", ["tf32"], quick=True))[("matmul", "tf32")]
    assert row == {"kind": "matmul", "precision": "tf32", "unit": "FLOP/s", "value": None, "status": "unsupported",
                   "detail": {"reason": "tf32 is an NVIDIA GPU format"}}
    assert not [a for a in kernels.allocated if a[0] == "matmul"]


@pytest.mark.parametrize(("error", "status"), [(FakeError("out of memory\ntrace"), "failed"),
                                               (FakeError("no kernel for Half\ntrace"), "unsupported")])
def test_an_error_at_the_first_size_fails_or_is_unsupported(error, status):
    first = matmul_plan("cpu", True).sizes[0]
    row = rows_of(calibrate(FakeKernels(fail={("fp16", first): error}), "cpu", ["fp16"], quick=True))[("matmul", "fp16")]
    assert row["status"] == status and row["value"] is None
    assert row["detail"] == {"reason": f"fp16 matmul on cpu: {str(error).splitlines()[0]}"}


def test_an_error_past_the_first_size_ends_the_climb():
    kernels = FakeKernels(fail={("fp32", 1024): FakeError("out of memory\ntrace")})
    row = rows_of(calibrate(kernels, "cpu", ["fp32"], quick=True))[("matmul", "fp32")]
    assert row["status"] == "ok" and row["detail"]["peak_n"] == 512
    assert row["detail"]["stopped"] == "n=1024: out of memory"


def test_other_exceptions_are_not_swallowed():
    with pytest.raises(KeyError):
        calibrate(FakeKernels(fail={("fp32", 512): KeyError("a bug")}), "cpu", ["fp32"], quick=True)


def test_a_copy_that_cannot_allocate_is_a_failed_row():
    class NoMemory(FakeKernels):
        def copy(self, nbytes: int) -> Callable[[], object]:
            raise FakeError("out of memory: tried to allocate")
    row = rows_of(calibrate(NoMemory(), "cpu", [], quick=True))[("memory_bandwidth", None)]
    assert row["status"] == "failed" and row["value"] is None
    assert row["detail"] == {"reason": "out of memory: tried to allocate"}


def test_the_plans_are_read_from_the_rule_at_each_call(monkeypatch):
    # tests and benchmarks shrink the plans through analysis/matmul_peak.py, never through a copy
    monkeypatch.setitem(matmul_peak.QUICK, "cpu", matmul_peak.MatmulPlan((64, 128), 2, 0.01, 1.0))
    monkeypatch.setitem(matmul_peak.COPY_BYTES, "cpu", 4096)
    rows = rows_of(calibrate(FakeKernels(), "cpu", ["fp32"], quick=True))
    assert [s["n"] for s in rows[("matmul", "fp32")]["detail"]["sizes"]] == [64, 128]
    assert rows[("memory_bandwidth", None)]["detail"]["buffer_bytes"] == 4096


def test_pageable_copy_times_only_the_copy_and_makes_each_d2h_source_fresh():
    from rigbench.frameworks.driver.calibration import pageable_copy

    put, made, fetched = [], [], []
    h2d = pageable_copy(64, "h2d", to_device=put.append, fresh=lambda host, v: made.append(v), to_host=fetched.append)
    assert h2d() >= 0 and len(put) == 1 and put[0].nbytes == 64 and not made
    d2h = pageable_copy(64, "d2h", to_device=put.append, fresh=lambda host, v: host + v, to_host=fetched.append)
    d2h(), d2h()
    assert [float(a[0]) for a in fetched] == [1.0, 2.0]  # a new value each call: nothing cached is reused
