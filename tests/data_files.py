"""Tiny data files in the exact upstream formats, written by the tests themselves."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import struct
import tarfile
import zipfile
from pathlib import Path

import numpy as np

from rigbench.data.registry import DATASETS, DatasetInfo, RemoteFile

CIFAR_MEMBERS = tuple(f"data_batch_{i}.bin" for i in range(1, 6)) + ("test_batch.bin",)


def md5_of(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def idx_bytes(array: np.ndarray) -> bytes:
    """An IDX file of uint8 `array` (ndim 1 for labels, 3 for images), uncompressed."""
    array = np.ascontiguousarray(array, dtype=np.uint8)
    magic = 0x00000800 | array.ndim
    return struct.pack(f">I{array.ndim}I", magic, *array.shape) + array.tobytes()


def mnist_arrays(n_train: int = 10, n_test: int = 4, seed: int = 0):
    """Random images [N,28,28] and labels 0..9 for a tiny MNIST-format data set."""
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8), rng.integers(0, 10, n_train, dtype=np.uint8),
            rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8), rng.integers(0, 10, n_test, dtype=np.uint8))


def write_mnist(directory: Path, arrays, base: str = "mnist", url_prefix: str = "http://127.0.0.1:9/"
                ) -> tuple[DatasetInfo, dict[str, bytes]]:
    """Write gzipped IDX files into `directory`; return a registry entry with their md5s."""
    directory.mkdir(parents=True, exist_ok=True)
    template = DATASETS[base]
    blobs: dict[str, bytes] = {}
    files = []
    for remote, array in zip(template.files, arrays):
        blob = gzip.compress(idx_bytes(array), mtime=0)
        (directory / remote.filename).write_bytes(blob)
        blobs[remote.filename] = blob
        files.append(dataclasses.replace(remote, urls=(url_prefix + remote.filename,), md5=md5_of(blob),
                                         size=len(blob)))
    return dataclasses.replace(template, files=tuple(files)), blobs


def cifar_records(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, bytes]:
    """n random CIFAR-10 binary records: (images [n,3,32,32], labels [n], record bytes)."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8)
    labels = rng.integers(0, 10, n, dtype=np.uint8)
    raw = b"".join(bytes([int(y)]) + x.tobytes() for x, y in zip(images, labels))
    return images, labels.astype(np.int64), raw


def cifar_tar_bytes(members: dict[str, bytes]) -> bytes:
    """A tar.gz holding cifar-10-batches-bin/<name> for each member (plus the meta file)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in {"batches.meta.txt": b"airplane\nautomobile\n", **members}.items():
            info = tarfile.TarInfo(f"cifar-10-batches-bin/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def write_cifar(directory: Path, per_member: int = 3) -> tuple[DatasetInfo, tuple[np.ndarray, ...], bytes]:
    """A tiny cifar-10-binary.tar.gz in `directory`, its registry entry and the arrays in it."""
    directory.mkdir(parents=True, exist_ok=True)
    parts = {name: cifar_records(per_member, seed) for seed, name in enumerate(CIFAR_MEMBERS)}
    blob = cifar_tar_bytes({name: raw for name, (_, _, raw) in parts.items()})
    (directory / "cifar-10-binary.tar.gz").write_bytes(blob)
    train = [parts[n] for n in CIFAR_MEMBERS[:5]]
    arrays = (np.concatenate([p[0] for p in train]), np.concatenate([p[1] for p in train]),
              parts["test_batch.bin"][0], parts["test_batch.bin"][1])
    remote = RemoteFile("cifar-10-binary.tar.gz", ("http://127.0.0.1:9/cifar-10-binary.tar.gz",), "archive",
                        md5=md5_of(blob), sha256=hashlib.sha256(blob).hexdigest())
    return dataclasses.replace(DATASETS["cifar10"], files=(remote,)), arrays, blob


def flip_byte(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def wikitext_zip_bytes(train: bytes, valid: bytes, test: bytes) -> bytes:
    """A wikitext-2-raw-v1.zip laid out as upstream: wikitext-2-raw/wiki.{train,valid,test}.raw."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for split, data in (("train", train), ("valid", valid), ("test", test)):
            z.writestr(zipfile.ZipInfo(f"wikitext-2-raw/wiki.{split}.raw", (1980, 1, 1, 0, 0, 0)), data)
    return buffer.getvalue()


def text_dataset(name: str, blobs: dict[str, bytes], url_prefix: str = "http://127.0.0.1:9/") -> DatasetInfo:
    """The registry entry of text data set `name` with its files served from `url_prefix` and the
    digests of `blobs` ({filename: bytes}) in place of the published ones (sha256, and md5 where
    the registry has one too)."""
    template = DATASETS[name]
    files = tuple(dataclasses.replace(
        f, urls=(url_prefix + f.filename,), sha256=hashlib.sha256(blobs[f.filename]).hexdigest(),
        md5=md5_of(blobs[f.filename]) if f.md5 else None, size=len(blobs[f.filename])) for f in template.files)
    return dataclasses.replace(template, files=files)
