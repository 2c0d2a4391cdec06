"""The real-data trials of `rigbench recommend`: an lr-find and a one-epoch `train --input
loader` run on the first data set the workload accepts whose files are here (never downloaded),
at the batch the recommendation picks (experiments/recommend_trials.data_trials).

Their batch must fill one batch of that data set's training split, as `train` and `lr-find`
require (plan.check_batches_fill): the trial's own check (frameworks/driver) would end it
`unsupported` after the max-batch search and the speed trials had run. `check_data_batches`
refuses, before the first trial, a batch of the grid the recommendation will pick from;
`short_of` tells `data_trials` when the batch it picked (a stored trial's, which no flag chose)
is one the set cannot fill, so that the trials are said missing rather than run.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

from rigbench.analysis import recommend as rules
from rigbench.errors import UsageError
from rigbench.experiments.plan import prepare_data
from rigbench.spec import Result
from rigbench.workloads import Workload


def offline_dataset(workload: str) -> str | None:
    """The first real data set the workload accepts whose files are here (never downloads)."""
    from rigbench.data import accepted_datasets
    from rigbench.data.errors import ChecksumError, CorruptFileError

    for name in accepted_datasets(workload):
        if name == "image_folder":
            continue  # needs a directory from the user
        if name == "digits" and importlib.util.find_spec("sklearn") is None:
            continue
        try:
            return prepare_data(workload, name, download=False)
        except (UsageError, ChecksumError, CorruptFileError, OSError):
            continue
    return None


def needs_lr_find(ref: Workload, results: Sequence[Result]) -> bool:
    """An lr-find is run where the workload takes one and none with a suggestion is stored."""
    return ref.lr_find and rules.lr_find_result(results) is None  # else it would end `unsupported`


def needs_loader(results: Sequence[Result], device: str) -> bool:
    """A loader epoch is run on `device` where none of it ended ok there."""
    return not any(r.spec.train is not None and r.spec.train.input_mode == "loader"
                   and r.spec.device == device and r.status == "ok" for r in results)


def short_of(ref: Workload, options: dict[str, Any], dataset: str, batch: int) -> int | None:
    """The training samples of `dataset` for `ref` with `options` where they do not fill one
    batch of `batch`; None where they do, or where the count is not known without loading."""
    from rigbench.data import train_samples, training_options

    n = train_samples(ref.name, dataset, None, training_options(ref.name, options, dataset))
    return n if n is not None and n < batch else None


def check_data_batches(ref: Workload, options: dict[str, Any], devices: Sequence[str], batches: Sequence[int],
                       results: Sequence[Result]) -> None:
    """UsageError, before the first trial, where the recommendation's data trials will run (an
    lr-find is needed, or a loader epoch on every device it may pick) on a data set here offline
    that cannot fill a batch of its grid (`batches`), at which they may run."""
    if not (needs_lr_find(ref, results) or all(needs_loader(results, d) for d in devices)):
        return
    dataset = offline_dataset(ref.name)
    if dataset is None:  # no data trial runs: the recommendation says what is missing
        return
    for batch in sorted(batches):
        n = short_of(ref, options, dataset, batch)
        if n is not None:
            raise UsageError(f"{dataset} has {n:,} training samples, fewer than one batch of {batch}, and recommend's "
                             f"lr-find and loader epoch train on it at the batch it picks: lower --batch-size to at "
                             f"most {n:,}, or fetch a larger data set for {ref.name} (rigbench lr-find {ref.name} "
                             "--dataset ... downloads one)")
