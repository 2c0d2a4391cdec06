"""benchmarks/step_pairs.py: the documented bare step built in this process, and interleaved
pairs of it with rigbench's step (the self-check's method that resolves 1%)."""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import step_pairs  # noqa: E402


def test_the_bare_step_is_the_documented_loop_and_it_trains():
    step, wait = step_pairs.bare_step("torch", "cnn", 8, 1)
    losses = [step().item() for _ in range(12)]  # one fixed batch: the loss must fall
    wait(losses[-1])
    assert losses[-1] < losses[0]


def test_pairs_alternate_and_stop_at_the_budget():
    found = step_pairs.pairs("torch", "cnn", 4, 1, budget_s=0.0, resolve=0.0)  # stops at the first check
    assert found["pairs"] == len(found["ours"]) == len(found["bare"]) == 200
    assert min(found["ours"]) > 0 and min(found["bare"]) > 0
    assert found["sync_s"] >= 0
