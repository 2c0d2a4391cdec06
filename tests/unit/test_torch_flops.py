"""FLOP and parameter counting on the meta device."""

from __future__ import annotations

import time

import pytest

torch = pytest.importorskip("torch")

from rigbench.frameworks import torch as adapter  # noqa: E402
from rigbench.frameworks.torch import flops  # noqa: E402
from rigbench.workloads import WORKLOADS  # noqa: E402


def test_mlp_train_flops_exact():
    _, per_sample = adapter.count(WORKLOADS["mlp"], {})
    weights = [784 * 2048, 2048 * 2048, 2048 * 2048, 2048 * 10]
    # FlopCounterMode counts a matmul as 2*m*n*k (bias adds are not counted). Forward is
    # 2*W per layer; backward computes every weight gradient (2*W) and the input gradient
    # (2*W) of every layer except the first, whose input (the data) does not require grad.
    expected = 2 * sum(weights) + 2 * sum(weights) + 2 * sum(weights[1:])  # 56,877,056
    assert per_sample == pytest.approx(expected, rel=0.01)
    assert per_sample == pytest.approx(3 * 2 * sum(weights), rel=0.06)  # the textbook 3x, less layer 1


@pytest.mark.parametrize("hidden", [128, 256])
def test_lstm_meta_count_matches_analytic(hidden):
    params, per_sample = adapter.count(WORKLOADS["lstm"], {"hidden": hidden})
    analytic = flops.lstm_analytic_train_flops(seq=32, hidden=hidden, layers=2, vocab=10_000, batch=1)
    assert per_sample == pytest.approx(analytic, rel=0.05)
    assert per_sample > 0  # on CPU tensors FlopCounterMode would score the oneDNN LSTM as 0
    emb_and_decoder = 10_000 * hidden + hidden * 10_000 + 10_000
    lstm_layers = 2 * (4 * hidden * (hidden + hidden) + 2 * 4 * hidden)
    assert params == emb_and_decoder + lstm_layers


def test_dcgan_counts_both_updates():
    _, per_sample = adapter.count(WORKLOADS["dcgan"], {})
    # One D forward on 64x64 is ~0.1 GFLOP and one G forward ~0.4 GFLOP (pytorch/examples
    # sizes); a step runs G once and D three times, and backpropagates through all of them.
    assert 1.5e9 < per_sample < 4e9


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_every_workload_counts(name):
    params, per_sample = adapter.count(WORKLOADS[name], {})
    assert params > 0 and per_sample > 0


def test_counting_uses_no_real_memory():
    start = time.perf_counter()
    params, per_sample = adapter.count(WORKLOADS["catsdogs"], {})
    assert time.perf_counter() - start < 5  # a real batch-2 step takes several seconds here
    assert params == 21_436_577
    assert 30e9 < per_sample < 40e9  # ~3 x 11.9 GFLOP forward per 256x256 image
