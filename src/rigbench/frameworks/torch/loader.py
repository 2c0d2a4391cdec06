"""torch's host loader for `rigbench train --input loader`: a DataLoader over the uint8 CPU
arrays, as real pipelines do, with worker processes (`--workers`) and pinned memory
(`--pin-memory`, copies to a CUDA device only). It follows the shared loop's order
(frameworks/driver/batches.py): the epoch's permutation is handed to its batch sampler, which
runs in the main process, so persistent workers see each epoch's order too.
"""

from __future__ import annotations

import os
import signal
import tempfile
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


def _ignore_stop_signals(_worker_id: int) -> None:
    """A worker ignores SIGTERM and SIGHUP (torch's own loop already ignores Ctrl-C's): sent to
    every process of a training run at once (systemd stopping rigbench, a closed terminal), they
    ended the workers, and the trial ended in the loader's error instead of reporting the epochs
    it had finished. The trial ends its workers itself (or its launcher kills their group). A
    handler that does nothing, not SIG_IGN: Python raises OSError for a signal already pending
    when its handler became SIG_IGN."""
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _ignored)


def _ignored(_signum: int, _frame: object) -> None:
    """A stop signal a loader worker leaves to the trial (_ignore_stop_signals)."""


#: The longest path of a Unix socket (Linux: 108 bytes with the NUL), and what multiprocessing
#: adds to the temporary directory for a worker's (pymp-XXXXXXXX/listener-XXXXXXXX).
SOCKET_PATH_MAX = 107
SOCKET_SUFFIX = 32


def short_temp_dir() -> None:
    """A worker hands each batch over a Unix socket under the temporary directory; past
    SOCKET_PATH_MAX its bind fails in the worker's feeder thread ("AF_UNIX path too long") and
    the loader waits for ever: a long TMPDIR (a CI job's, pytest's) hung `train --workers N`
    until its --timeout. This process's temporary directory is then /tmp, for its workers too
    (forked, or spawned: they read TMPDIR)."""
    if len(tempfile.gettempdir()) + SOCKET_SUFFIX > SOCKET_PATH_MAX and os.access("/tmp", os.W_OK):
        tempfile.tempdir = os.environ["TMPDIR"] = "/tmp"


class TorchLoader:
    """A DataLoader in the shared loop's order (base.HostLoader)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, options: TrainOptions, pin: bool):
        self.sampler = _EpochOrder()
        if options.workers > 0:
            short_temp_dir()
        dataset = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
        self.loader: torch.utils.data.DataLoader | None = torch.utils.data.DataLoader(
            dataset, batch_sampler=self.sampler, num_workers=options.workers, pin_memory=pin,
            persistent_workers=options.workers > 0,  # start workers once, not every epoch
            worker_init_fn=_ignore_stop_signals,
        )

    def epoch(self, order: np.ndarray, batch_size: int) -> Iterator[tuple[Tensor, Tensor]]:
        assert self.loader is not None, "epoch() after close()"
        self.sampler.order, self.sampler.batch_size = order, batch_size
        yield from self.loader

    def close(self) -> None:
        """Drop the loader, so persistent worker processes shut down now."""
        self.loader = None
