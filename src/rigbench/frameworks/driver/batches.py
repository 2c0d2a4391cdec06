"""Batches for the shared loops: one epoch's device batches in resident or loader mode, the
host loader every framework may use, the evaluation batch size. Framework-free: the device
work goes through the trainer's primitives (frameworks/base.DataTrainer).

Two input modes (TrainOptions.input_mode):
  resident  the whole training set is put on the device once, before epoch 1 (not counted in
            any epoch); each epoch selects batches on the device from one permutation.
  loader    host batches from a HostLoader, copied to the device step by step. Per step,
            `input_s` is the host time waiting for the next host batch and `copy_s` the host
            time of the copy to the device *plus* scaling (on the CPU the "copy" is only that
            conversion), ended when the copy is done. The device is synchronised just before
            the copy so that the previous step's queued compute is not counted as copy time;
            the price is that copies never overlap compute in this mode, which a tuned
            production pipeline would allow.
In both modes every epoch follows the seed's numpy permutation, each rank of a data-parallel
trial takes its share of it (data/shard.py), and the last partial batch is dropped, so every
step has the same shape and there are floor(share / batch) steps per epoch.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from rigbench.errors import UnsupportedError
from rigbench.frameworks.base import DataTrainer, HostLoader
from rigbench.spec import TrainOptions

#: Evaluation batch size: large for speed, small enough for big images on small devices.
EVAL_BATCH = 512


@dataclass
class InputTiming:
    """Host seconds of one epoch's input pipeline (loader mode only; zero when resident)."""

    input_s: float = 0.0
    copy_s: float = 0.0


class NumpyLoader:
    """Host batches sliced from the numpy arrays in the main process (loader mode for every
    framework without a loader of its own)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, options: TrainOptions, framework: str):
        if options.workers:
            raise UnsupportedError(f"--workers is torch's DataLoader; {framework} reads its host batches in the "
                                   "main process (use --workers 0)")
        self.x, self.y = x, y

    def epoch(self, order: np.ndarray, batch_size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for start in range(0, len(order) - batch_size + 1, batch_size):
            idx = order[start:start + batch_size]
            yield self.x[idx], self.y[idx]

    def close(self) -> None:
        pass


def training_subset(x: np.ndarray, y: np.ndarray, limit: int | None,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The first `limit` samples after a seeded shuffle (a random, reproducible subset), or all."""
    if limit is None or limit >= len(x):
        return x, y
    keep = rng.permutation(len(x))[:limit]
    return x[keep], y[keep]


class EpochSource:
    """Where an epoch's batches come from: the resident set on the device, or a host loader."""

    def __init__(self, trainer: DataTrainer, x: np.ndarray, y: np.ndarray, options: TrainOptions):
        self.trainer = trainer
        self.resident: Any = None
        self.loader: HostLoader | None = None
        if options.input_mode == "resident":
            self.resident = trainer.put_data(x, y)
            trainer.synchronize()  # the copy happens before epoch 1 and is not timed
        else:
            self.loader = trainer.host_loader(x, y, options)

    def batches(self, order: np.ndarray, batch_size: int, timing: InputTiming) -> Iterator[Any]:
        """The epoch's device batches in `order`; loader-mode waits and copies added to `timing`."""
        trainer = self.trainer
        if self.loader is None:
            index = trainer.put_index(order)
            for start in range(0, len(order) - batch_size + 1, batch_size):
                yield trainer.take(self.resident, index, start, start + batch_size)
            return
        host = self.loader.epoch(order, batch_size)
        clock = time.perf_counter
        while True:
            asked = clock()
            try:
                images, labels = next(host)
            except StopIteration:
                return
            timing.input_s += clock() - asked
            trainer.synchronize()  # let the previous step finish, so its compute is not timed as copy
            copying = clock()
            batch = trainer.put_batch(images, labels)  # returns when the copy and scaling are done
            timing.copy_s += clock() - copying
            yield batch

    def close(self) -> None:
        """Drop the loader, so worker processes shut down now."""
        if self.loader is not None:
            self.loader.close()
            self.loader = None
