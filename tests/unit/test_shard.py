"""A data-parallel rank's share of an epoch (data/shard.py)."""

from __future__ import annotations

import numpy as np
import pytest

from rigbench.data.shard import shard_order


@pytest.mark.parametrize(("size", "world_size"), [(10, 3), (12, 4), (7, 2), (5, 5), (3, 4)])
def test_shares_are_disjoint_equal_and_cover_the_truncated_order(size, world_size):
    order = np.random.default_rng(0).permutation(size)
    shares = [shard_order(order, r, world_size) for r in range(world_size)]
    usable = size - size % world_size
    assert {len(s) for s in shares} == {usable // world_size}  # same samples, so same steps
    together = np.concatenate(shares)
    assert len(set(together.tolist())) == len(together)  # disjoint
    assert sorted(together.tolist()) == sorted(order[:usable].tolist())


def test_rank_r_takes_every_world_size_th_sample_from_r():
    order = np.array([9, 8, 7, 6, 5, 4, 3])
    assert shard_order(order, 0, 3).tolist() == [9, 6]
    assert shard_order(order, 1, 3).tolist() == [8, 5]
    assert shard_order(order, 2, 3).tolist() == [7, 4]  # 3, past the multiple of 3, is left out


def test_one_rank_takes_the_whole_order():
    order = np.array([3, 1, 2])
    assert shard_order(order, 0, 1) is order


@pytest.mark.parametrize(("rank", "world_size", "bad"), [(2, 2, "rank"), (-1, 2, "rank"), (0, 0, "world_size")])
def test_bad_arguments_are_named(rank, world_size, bad):
    with pytest.raises(ValueError, match=f"^{bad} must"):
        shard_order(np.arange(4), rank, world_size)
