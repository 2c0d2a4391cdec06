"""Initial weights compared across frameworks by their distributions: the frameworks name and
lay out their tensors differently, but a tensor size's set of (mean, std) must be the same.
Used by the JAX and Keras parity tests against torch's own initialisation."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pytest

#: Tensors smaller than this are skipped: their sample spread is too noisy to compare.
MIN_ELEMENTS = 1000


def spreads(values: Iterable[np.ndarray]) -> dict[int, list[tuple[float, float]]]:
    """size -> sorted [(mean, std)] of each tensor with at least MIN_ELEMENTS elements."""
    groups: dict[int, list[tuple[float, float]]] = {}
    for value in values:
        if value.size >= MIN_ELEMENTS:
            groups.setdefault(int(value.size), []).append((float(value.mean()), float(value.std())))
    return {size: sorted(found, key=lambda pair: (pair[1], pair[0])) for size, found in groups.items()}


def assert_same_spreads(ours: dict, theirs: dict) -> None:
    """Every size holds as many tensors, each std within 10% of its counterpart's and each mean
    within a tenth of that std. (JSON turns the sizes into strings: both sides are compared so.)"""
    ours, theirs = ({str(k): v for k, v in side.items()} for side in (ours, theirs))
    assert ours.keys() == theirs.keys()
    for size, spread in ours.items():
        assert len(spread) == len(theirs[size]), (size, spread, theirs[size])
        for (mean, std), (mean_t, std_t) in zip(spread, theirs[size], strict=True):
            assert std == pytest.approx(std_t, rel=0.1, abs=1e-6), (size, spread, theirs[size])
            assert mean == pytest.approx(mean_t, abs=0.1 * std_t + 1e-6), (size, spread, theirs[size])
