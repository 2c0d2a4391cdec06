"""Which real data sets each workload can train on.

A data set fits a workload when its images can be brought to the workload's input shape
without changing what is learnt: MNIST-like 28x28 grey for the dense nets, CIFAR-10 for the
32x32 (and, resized, 64x64 DCGAN) convnets. `digits` fits both after to_workload_shape.
"""

from __future__ import annotations

from rigbench.data.registry import get_dataset
from rigbench.errors import UsageError
from rigbench.workloads import get_workload

_DENSE = ("mnist", "fashion_mnist", "digits")
_CONV = ("cifar10", "digits")

ACCEPTS: dict[str, tuple[str, ...]] = {
    "mlp": _DENSE,
    "autoencoder": _DENSE,
    "cnn": _CONV,
    "rcnn": _CONV,
    "resnet": _CONV,
    "dcgan": _CONV,
    "catsdogs": ("image_folder",),
    "lstm": (),  # needs a tokenised text corpus (PTB); none is registered yet
}


def accepted_datasets(workload_name: str) -> tuple[str, ...]:
    """The data sets `workload_name` can train on, the reference one first."""
    get_workload(workload_name)  # an unknown workload lists the known ones
    return ACCEPTS.get(workload_name, ())


def check_compatible(workload_name: str, dataset_name: str) -> None:
    """Raise UsageError unless `workload_name` can train on `dataset_name`."""
    accepted = accepted_datasets(workload_name)
    get_dataset(dataset_name)
    if dataset_name in accepted:
        return
    if not accepted:
        raise UsageError(f"workload {workload_name!r} takes no real data set yet (only synthetic data)")
    raise UsageError(f"workload {workload_name!r} cannot train on {dataset_name!r}: "
                     f"use {', '.join(accepted)}")


def reference_dataset(workload_name: str) -> str:
    """The data set a workload trains on when none is named: the first it accepts."""
    accepted = accepted_datasets(workload_name)
    if not accepted:
        raise UsageError(f"workload {workload_name!r} takes no real data set yet (only synthetic data)")
    return accepted[0]
