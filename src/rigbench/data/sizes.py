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
from rigbench.workloads import get_workload, shaped


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
        n_bytes = _train_bytes(info, data_dir)
        if n_bytes is None:
            return None
        options = training_options(workload_name, options or {}, dataset_name)
        return window_count(n_bytes, shaped(get_workload(workload_name), options).input_shape[0])
    return None


def _train_bytes(info: DatasetInfo, data_dir: str | os.PathLike[str] | None) -> int | None:
    """The length of a text data set's training stream, as data/text_files.py and data/pysrc.py cut it."""
    if info.format == "pysrc":
        from rigbench.data.pysrc import load_manifest

        return load_manifest().bytes_in("train")  # the files are checked against it byte for byte
    from rigbench.data.text_files import VALID_FRACTION, WIKITEXT_MEMBERS

    directory = dataset_dir(info, data_dir)
    try:
        if info.format == "text_split":
            return tail_cut((directory / info.file("text").filename).stat().st_size, VALID_FRACTION)
        if info.format == "text_files":
            return (directory / info.file("train_text").filename).stat().st_size
        if info.format == "wikitext_zip":
            with zipfile.ZipFile(directory / info.file("archive").filename) as archive:
                return archive.getinfo(WIKITEXT_MEMBERS["train"]).file_size
    except (OSError, KeyError, zipfile.BadZipFile):  # not fetched, or not what it should be: the trial says
        return None
    return None
