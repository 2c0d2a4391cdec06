"""Deterministic stratified train/test splits (numpy only)."""

from __future__ import annotations

import numpy as np


def stratified_split(labels: np.ndarray, test_fraction: float = 0.2,
                     seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(train_indices, test_indices): each class split by `test_fraction`, shuffled by `seed`.

    Every class keeps at least one training sample, so a class with a single image goes
    to train. Indices come back sorted, so the order of the data set is kept within each
    part and the result depends only on the labels, the fraction and the seed.
    """
    if not 0.0 <= test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in [0, 1), got {test_fraction}")
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    train: list[np.ndarray] = []
    test: list[np.ndarray] = []
    for cls in np.unique(labels):  # sorted, so the RNG draws happen in a fixed order
        idx = np.flatnonzero(labels == cls)
        shuffled = idx[rng.permutation(len(idx))]
        n_test = min(len(idx) - 1, round(len(idx) * test_fraction))
        test.append(shuffled[:n_test])
        train.append(shuffled[n_test:])
    empty = np.empty(0, dtype=np.int64)
    return (np.sort(np.concatenate(train or [empty])).astype(np.int64),
            np.sort(np.concatenate(test or [empty])).astype(np.int64))
