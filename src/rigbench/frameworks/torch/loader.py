"""torch's host loader for `rigbench train --input loader`: a DataLoader over the uint8 CPU
arrays, as real pipelines do, with worker processes (`--workers`) and pinned memory
(`--pin-memory`, copies to a CUDA device only). It follows the shared loop's order
(frameworks/driver/batches.py): the epoch's permutation is handed to its batch sampler, which
runs in the main process, so persistent workers see each epoch's order too.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch
from torch import Tensor

from rigbench.spec import TrainOptions


class _EpochOrder(torch.utils.data.Sampler[list[int]]):
    """Batches of the current epoch's order (set before each epoch), the last partial one dropped."""

    def __init__(self) -> None:
        self.order: np.ndarray = np.zeros(0, dtype=np.int64)
        self.batch_size = 1

    def __iter__(self) -> Iterator[list[int]]:
        for start in range(0, len(self.order) - self.batch_size + 1, self.batch_size):
            yield self.order[start:start + self.batch_size].tolist()

    def __len__(self) -> int:
        return len(self.order) // self.batch_size


class TorchLoader:
    """A DataLoader in the shared loop's order (base.HostLoader)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, options: TrainOptions, pin: bool):
        self.sampler = _EpochOrder()
        dataset = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
        self.loader: torch.utils.data.DataLoader | None = torch.utils.data.DataLoader(
            dataset, batch_sampler=self.sampler, num_workers=options.workers, pin_memory=pin,
            persistent_workers=options.workers > 0,  # start workers once, not every epoch
        )

    def epoch(self, order: np.ndarray, batch_size: int) -> Iterator[tuple[Tensor, Tensor]]:
        assert self.loader is not None, "epoch() after close()"
        self.sampler.order, self.sampler.batch_size = order, batch_size
        yield from self.loader

    def close(self) -> None:
        """Drop the loader, so persistent worker processes shut down now."""
        self.loader = None
