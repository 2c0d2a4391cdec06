"""Real data sets for training: registry, verified downloads, and numpy loaders.

Framework-free on purpose (numpy only, plus scikit-learn for `digits` and Pillow for
image folders): the CLI process may list, download and check data without importing a
framework, and each framework adapter turns the arrays into its own tensors.

The entry point for `rigbench train` is `load_for_workload`:

    data = load_for_workload("mlp", "fashion_mnist", data_dir=None, download=True)
    x_train, y_train, x_test, y_test = data       # uint8 [N,C,H,W], int64 [N]
    data.classes                                  # class names, label i = classes[i]

Text data sets (pysrc, tinyshakespeare, wikitext2, ptb) are byte streams (data/text.py): for a
language model they come as next-byte windows of its sequence length, uint8 [N, T] inputs and
targets, with `data.corpus` holding the streams (unigram_entropy(data.corpus.train) is the
baseline a model must beat).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from rigbench.data.accepts import ACCEPTS, accepted_datasets, check_compatible, reference_dataset, training_options
from rigbench.data.cache import FileProgress, dataset_dir, ensure_files, verify_file
from rigbench.data.download import fetch
from rigbench.data.errors import ChecksumError, CorpusMismatchError, CorruptFileError, DownloadError
from rigbench.data.registry import DATASETS, TEXT_FORMATS, DatasetInfo, RemoteFile, get_dataset, list_datasets
from rigbench.data.sizes import check_text_windows, train_samples
from rigbench.data.text import BYTE_VOCAB, ByteCorpus, UnigramBaseline, next_byte_windows, unigram_entropy
from rigbench.data.transforms import resize_images, to_channels, to_workload_shape
from rigbench.errors import UsageError
from rigbench.workloads import get_workload, shaped

__all__ = [
    "ACCEPTS", "BYTE_VOCAB", "DATASETS", "ByteCorpus", "ChecksumError", "CorpusMismatchError",
    "CorruptFileError", "DatasetInfo", "DownloadError", "LoadedData", "RemoteFile", "UnigramBaseline",
    "accepted_datasets", "check_classes", "check_compatible", "check_text_windows", "dataset_dir", "ensure_files", "fetch", "get_dataset",
    "list_datasets", "load", "load_corpus", "load_for_workload", "next_byte_windows", "reference_dataset",
    "resize_images", "to_channels", "to_workload_shape", "train_samples", "training_options", "unigram_entropy", "verify_file",
]


@dataclass(frozen=True)
class LoadedData:
    """A loaded data set; unpacks as (x_train, y_train, x_test, y_test).

    Images are uint8 [N, C, H, W] (0..255, channels first), labels int64 [N] indexing
    `classes`. Scaling to floats is left to the framework side, on the device.

    Text is next-byte windows (text.next_byte_windows): x and y uint8 [N, T], token ids
    0..255, y the bytes that follow x's; the "test" pair is the validation part; `classes` is
    empty and `corpus` holds the two byte streams the windows are views of.
    """

    dataset: str
    classes: tuple[str, ...]
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    corpus: ByteCorpus | None = None  # text only

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter((self.x_train, self.y_train, self.x_test, self.y_test))


def load(dataset: str | DatasetInfo, data_dir: str | os.PathLike[str] | None = None, *,
         shape: tuple[int, ...] | None = None, download: bool = True, verify: bool = True,
         progress: FileProgress | None = None) -> LoadedData:
    """Load `dataset` from `data_dir` (default: the cache), fetching missing files if allowed.

    `shape` (C, H, W) converts the images (grey <-> RGB, bilinear resize); None keeps the
    stored shape. An image folder has no stored shape, so it needs `shape`. A text data set
    needs `shape` (T,): the windows' length.
    `verify=False` skips the checksums but never the format checks (nor pysrc's manifest).
    """
    info = get_dataset(dataset) if isinstance(dataset, str) else dataset
    if info.format in TEXT_FORMATS:
        if shape is None or len(shape) != 1:
            raise ValueError(f"{info.name} is text: pass shape=(sequence length,), got {shape}")
        corpus = load_corpus(info, data_dir, download=download, verify=verify, progress=progress)
        return _windows(corpus, shape[0])
    if info.format == "image_folder":
        if shape is None or len(shape) != 3:
            raise ValueError(f"an image folder has no fixed size: pass shape=(C, H, W), got {shape}")
        from rigbench.data.image_folder import find_classes, load_image_folder

        root = dataset_dir(info, data_dir)
        arrays = load_image_folder(root, (shape[1], shape[2]), channels=shape[0])
        return LoadedData(info.name, find_classes(root), *arrays)
    arrays = _load_fixed(info, data_dir, download, verify, progress)
    x_train, y_train, x_test, y_test = arrays
    if shape is not None and tuple(shape) != x_train.shape[1:]:
        x_train, x_test = to_workload_shape(x_train, shape), to_workload_shape(x_test, shape)
    return LoadedData(info.name, info.classes or (), x_train, y_train, x_test, y_test)


def load_for_workload(workload_name: str, dataset_name: str | None = None,
                      data_dir: str | os.PathLike[str] | None = None, *, download: bool = True,
                      verify: bool = True, progress: FileProgress | None = None,
                      options: dict[str, Any] | None = None) -> LoadedData:
    """The data for training `workload_name` with `options` (a GPT's context, say), already in
    its input shape; text in windows of its sequence length.

    `dataset_name` defaults to the workload's reference data set (the first it accepts).
    Raises UsageError when the workload cannot use the data set, or when the data has more
    classes than the network has outputs.
    """
    dataset_name = dataset_name or reference_dataset(workload_name)
    options = training_options(workload_name, options or {}, dataset_name)
    workload = shaped(get_workload(workload_name), options)
    check_compatible(workload_name, dataset_name, options)
    data = load(dataset_name, data_dir, shape=workload.input_shape, download=download, verify=verify,
                progress=progress)
    check_classes(workload_name, dataset_name, data.classes, options)
    return data


def check_classes(workload_name: str, dataset_name: str, classes: tuple[str, ...],
                  options: dict[str, Any] | None = None) -> None:
    """UsageError when the data has more `classes` than the workload has outputs (an image
    folder's class folders are the user's: the parent checks them before any trial)."""
    workload = shaped(get_workload(workload_name), options or {})
    if workload.num_classes is not None and len(classes) > workload.num_classes:
        raise UsageError(f"{dataset_name} has {len(classes)} classes ({', '.join(classes)}) but "
                         f"workload {workload_name!r} has {workload.num_classes} outputs: "
                         f"keep at most {workload.num_classes} classes")


def load_corpus(dataset: str | DatasetInfo, data_dir: str | os.PathLike[str] | None = None, *,
                download: bool = True, verify: bool = True, progress: FileProgress | None = None) -> ByteCorpus:
    """The training and validation byte streams of a text data set.

    pysrc is read from this interpreter's stdlib, or from `data_dir`, and always checked
    against its manifest; the others are fetched into `data_dir` (default: the cache) if allowed.
    """
    info = get_dataset(dataset) if isinstance(dataset, str) else dataset
    if info.format == "pysrc":
        from rigbench.data.pysrc import load_pysrc

        return load_pysrc(data_dir)
    if info.format not in TEXT_FORMATS:
        raise UsageError(f"{info.name} is not a text data set: text is {', '.join(_text_names())}")
    from rigbench.data.text_files import load_text_corpus

    paths = ensure_files(info, data_dir, download=download, verify=verify, progress=progress)
    return load_text_corpus(info, paths)


def _text_names() -> list[str]:
    return [d.name for d in DATASETS.values() if d.format in TEXT_FORMATS]


def _windows(corpus: ByteCorpus, seq_len: int) -> LoadedData:
    """LoadedData of non-overlapping next-byte windows; each part must fill one window."""
    for part, stream in (("training", corpus.train), ("validation", corpus.valid)):
        if len(stream) < seq_len + 1:
            raise UsageError(f"the {part} part of {corpus.name} has {len(stream):,} bytes, fewer than one "
                             f"window of {seq_len} plus its next byte")
    x_train, y_train = next_byte_windows(corpus.train, seq_len)
    x_test, y_test = next_byte_windows(corpus.valid, seq_len)
    return LoadedData(corpus.name, (), x_train, y_train, x_test, y_test, corpus=corpus)


def _load_fixed(info: DatasetInfo, data_dir, download: bool, verify: bool,
                progress: FileProgress | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The four arrays of a registry data set with fixed files (or none, for digits)."""
    if info.format == "sklearn_digits":
        from rigbench.data.digits import load_digits_arrays

        return load_digits_arrays()
    paths = ensure_files(info, data_dir, download=download, verify=verify, progress=progress)
    if info.format == "idx":
        from rigbench.data.idx import load_idx_pair

        n = len(info.classes) if info.classes else None
        x_train, y_train = load_idx_pair(paths["train_images"], paths["train_labels"], n)
        x_test, y_test = load_idx_pair(paths["test_images"], paths["test_labels"], n)
        return x_train, y_train, x_test, y_test
    if info.format == "cifar10_binary":
        from rigbench.data.cifar10 import load_cifar10_binary

        return load_cifar10_binary(paths["archive"])
    raise ValueError(f"no loader for format {info.format!r} of {info.name}")
