"""CIFAR-10's *binary* archive, read straight from the tar.gz with `tarfile`.

We use the binary version rather than the python one because the python version is a set
of pickles, and unpickling runs code chosen by whoever wrote the file. Each record is one
label byte and 3,072 pixel bytes: 1,024 red, then green, then blue, rows top to bottom,
which is exactly a [3, 32, 32] channels-first image. Nothing is extracted to disk.
"""

from __future__ import annotations

import tarfile
import zlib
from pathlib import Path

import numpy as np

from rigbench.data.errors import CorruptFileError

TRAIN_MEMBERS = tuple(f"data_batch_{i}.bin" for i in range(1, 6))
TEST_MEMBERS = ("test_batch.bin",)
FOLDER = "cifar-10-batches-bin"
RECORD = 1 + 3 * 32 * 32
NUM_CLASSES = 10


def load_cifar10_binary(archive: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train uint8 [N,3,32,32], y_train int64, x_test, y_test) from cifar-10-binary.tar.gz."""
    archive = Path(archive)
    blobs = _read_members(archive, TRAIN_MEMBERS + TEST_MEMBERS)
    x_train, y_train = _records(archive, [(n, blobs[n]) for n in TRAIN_MEMBERS])
    x_test, y_test = _records(archive, [(n, blobs[n]) for n in TEST_MEMBERS])
    return x_train, y_train, x_test, y_test


def _read_members(archive: Path, names: tuple[str, ...]) -> dict[str, bytes]:
    """The bytes of each wanted member, found by its name inside cifar-10-batches-bin/.

    Members are read in archive order in one pass: seeking backwards in a gzip stream
    means decompressing it again from the start.
    """
    wanted = {f"{FOLDER}/{n}": n for n in names}
    found: dict[str, bytes] = {}
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                name = wanted.get(member.name.removeprefix("./"))
                if name is None:
                    continue
                if not member.isfile():
                    raise CorruptFileError(str(archive), f"{member.name} is not a regular file")
                stream = tar.extractfile(member)
                assert stream is not None  # isfile() members always have a stream
                data = stream.read()
                if len(data) != member.size:
                    raise CorruptFileError(str(archive), f"{member.name} is cut short")
                found[name] = data
    except (tarfile.TarError, EOFError, zlib.error, OSError) as error:  # OSError: bad gzip
        raise CorruptFileError(str(archive), f"unreadable tar.gz: {error or type(error).__name__}") from None
    absent = [n for n in names if n not in found]
    if absent:
        raise CorruptFileError(str(archive), f"no {', '.join(f'{FOLDER}/{n}' for n in absent)} inside")
    return found


def _records(archive: Path, blobs: list[tuple[str, bytes]]) -> tuple[np.ndarray, np.ndarray]:
    """Images [N,3,32,32] and labels [N] from the concatenated records of several members."""
    for name, data in blobs:
        if not data or len(data) % RECORD:
            raise CorruptFileError(f"{archive}:{FOLDER}/{name}",
                                   f"{len(data):,} bytes is not a whole number of {RECORD}-byte records")
    records = np.frombuffer(b"".join(d for _, d in blobs), dtype=np.uint8).reshape(-1, RECORD)
    labels = records[:, 0].astype(np.int64)
    if labels.size and int(labels.max()) >= NUM_CLASSES:
        raise CorruptFileError(str(archive), f"label {int(labels.max())} in a {NUM_CLASSES}-class data set")
    images = records[:, 1:].reshape(-1, 3, 32, 32).copy()
    return images, labels
