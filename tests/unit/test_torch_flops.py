"""FLOP and parameter counting on the meta device."""

from __future__ import annotations

import resource

import pytest

torch = pytest.importorskip("torch")

from rigbench.frameworks import torch as adapter  # noqa: E402
from rigbench.workloads import WORKLOADS  # noqa: E402

# Every workload's count (the LSTM's too, which FlopCounterMode would score 0 on CPU
# tensors) is checked against its analytic figure in tests/contract/test_workloads.py.


def test_counting_uses_no_real_memory():
    # A real batch-2 catsdogs step holds ~1 GiB (activations, weights, gradients); on the meta
    # device nothing is allocated, so the process's peak resident size barely moves.
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    params, per_sample = adapter.count(WORKLOADS["catsdogs"], {})
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 256 * 1024
    assert params == 21_455_521
    assert 30e9 < per_sample < 32e9  # ~3 x 10.4 GFLOP forward per 256x256 image
