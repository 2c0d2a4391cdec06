"""How many training samples a data set gives a workload, known without loading the data.

The parent asks before any trial starts (experiments/plan.check_batches_fill), so a batch the
training set cannot fill is refused at once instead of a child loading the data to find out.
Each answer is read where it is cheap and exact: the registry's count for the files checked
against their published digests, the listing of an image folder, the manifest or the files'
sizes (a zip's directory for WikiText-2) for byte-level text. None where it is not known here
(files not fetched yet): the trial's own check then decides (frameworks/driver).
"""

from __future__ import annotations

import os
import zipfile
from typing import Any

from rigbench.data.accepts import training_options
from rigbench.data.cache import dataset_dir
from rigbench.data.registry import TEXT_FORMATS, DatasetInfo, get_dataset
from rigbench.data.text import tail_cut, window_count
from rigbench.errors import UsageError
from rigbench.workloads import get_workload, resolved_options, shaped


def train_samples(workload_name: str, dataset_name: str, data_dir: str | os.PathLike[str] | None = None,
                  options: dict[str, Any] | None = None) -> int | None:
    """The training samples `workload_name` with `options` gets from `dataset_name` (text: windows
    of its sequence length), before any --max-train-samples; None when not known without loading."""
    info = get_dataset(dataset_name)
    if info.train_size is not None:  # fixed files: the digests make the registry's count theirs
        return info.train_size
    if info.format == "image_folder":
        from rigbench.data.image_folder import training_images

        return training_images(dataset_dir(info, data_dir))
    if info.format in TEXT_FORMATS:
        parts = _text_bytes(info, data_dir)
        if parts is None:
            return None
        return window_count(parts[0], _context(workload_name, dataset_name, options))
    return None


def check_text_windows(workload_name: str, dataset_name: str, data_dir: str | os.PathLike[str] | None = None,
                       options: dict[str, Any] | None = None) -> None:
    """UsageError, naming the option, when a text data set's training or validation part is
    shorter than one window of the workload's context plus its next byte: the child refused it
    only after loading the data (an `unsupported` trial, exit 1), and a training part too short
    read "pysrc has 0 training samples ...: lower --batch-size to at most 0". Nothing for other
    data sets, or text whose files are not here yet (the trial's own check then decides)."""
    info = get_dataset(dataset_name)
    parts = _text_bytes(info, data_dir) if info.format in TEXT_FORMATS else None
    if parts is None:
        return
    context = _context(workload_name, dataset_name, options)
    for part, n_bytes in zip(("training", "validation"), parts, strict=True):
        if n_bytes < context + 1:
            settable = "context" in resolved_options(get_workload(workload_name), options or {})
            fix = (f"give {workload_name}:context={min(parts) - 1:,} or less" if settable
                   else "train on a longer text")
            raise UsageError(f"the {part} part of {dataset_name} has {n_bytes:,} bytes, fewer than one window of "
                             f"{workload_name}'s {context:,} bytes plus its next byte: {fix}")


def _context(workload_name: str, dataset_name: str, options: dict[str, Any] | None) -> int:
    """The sequence length of `workload_name` with `options` on a byte-level text data set."""
    options = training_options(workload_name, options or {}, dataset_name)
    return int(shaped(get_workload(workload_name), options).input_shape[0])


def _text_bytes(info: DatasetInfo, data_dir: str | os.PathLike[str] | None) -> tuple[int, int] | None:
    """The lengths of a text data set's training and validation streams, as data/text_files.py
    and data/pysrc.py cut them; None where the files are not here (or not what they should be)."""
    if info.format == "pysrc":
        from rigbench.data.pysrc import load_manifest

        manifest = load_manifest()  # the files are checked against it byte for byte
        return manifest.bytes_in("train"), manifest.bytes_in("valid")
    from rigbench.data.text_files import VALID_FRACTION, WIKITEXT_MEMBERS

    directory = dataset_dir(info, data_dir)
    try:
        if info.format == "text_split":
            total = (directory / info.file("text").filename).stat().st_size
            return tail_cut(total, VALID_FRACTION), total - tail_cut(total, VALID_FRACTION)
        if info.format == "text_files":
            return ((directory / info.file("train_text").filename).stat().st_size,
                    (directory / info.file("valid_text").filename).stat().st_size)
        if info.format == "wikitext_zip":
            with zipfile.ZipFile(directory / info.file("archive").filename) as archive:
                return (archive.getinfo(WIKITEXT_MEMBERS["train"]).file_size,
                        archive.getinfo(WIKITEXT_MEMBERS["valid"]).file_size)
    except (OSError, KeyError, zipfile.BadZipFile):  # not fetched, or not what it should be: the trial says
        return None
    return None
