"""A data-parallel rank's share of an epoch (numpy only: the data layer imports no framework).

Every rank draws the same epoch permutation from the same seed and takes every
world_size-th sample of it, starting at its rank, as torch's DistributedSampler does; the
permutation is first cut to a multiple of world_size, so every rank has the same number of
samples and so the same number of steps (a rank with one step more would wait in an
all-reduce that never comes).
"""

from __future__ import annotations

import numpy as np


def shard_order(order: np.ndarray, rank: int, world_size: int) -> np.ndarray:
    """Rank `rank`'s samples of the epoch permutation `order` (all of it for one rank)."""
    if world_size < 1:
        raise ValueError(f"world_size must be at least 1, not {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, {world_size}), not {rank}")
    if world_size == 1:
        return order
    usable = len(order) - len(order) % world_size
    return order[:usable][rank::world_size]
