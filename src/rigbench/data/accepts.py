"""Which real data sets each workload can train on.

A data set fits a workload when its images can be brought to the workload's input shape
without changing what is learnt: MNIST-like 28x28 grey for the dense nets, CIFAR-10 for the
32x32 (and, resized, 64x64 DCGAN) convnets. `digits` fits both after to_workload_shape.

Byte-level text (BYTE_TEXT) fits only a byte-level language model: token inputs, next-token
targets and a vocabulary of exactly the 256 byte values (`byte_language_model`). No workload
is one yet: `lstm` is declared with a 10,000-word vocabulary, so it takes none (a GPT-style
workload with vocab 256 would list BYTE_TEXT here; tests/unit/test_data_text.py holds every
taker of BYTE_TEXT to the rule).
"""

from __future__ import annotations

from rigbench.data.registry import get_dataset
from rigbench.data.text import BYTE_VOCAB
from rigbench.errors import UsageError
from rigbench.workloads import Workload, get_workload

_DENSE = ("mnist", "fashion_mnist", "digits")
_CONV = ("cifar10", "digits")
#: The byte-level text corpora, pysrc (no download) first: the reference one.
BYTE_TEXT = ("pysrc", "tinyshakespeare", "wikitext2", "ptb")

ACCEPTS: dict[str, tuple[str, ...]] = {
    "mlp": _DENSE,
    "autoencoder": _DENSE,
    "cnn": _CONV,
    "rcnn": _CONV,
    "resnet": _CONV,
    "dcgan": _CONV,
    "catsdogs": ("image_folder",),
    "lstm": (),  # a 10,000-word vocabulary: not a byte-level model, so BYTE_TEXT does not fit
    # The transformers are on the speed path only so far (issue 24 items 1-2): gpt's tiny preset
    # is byte-level and would take BYTE_TEXT, vit's 32-pixel presets CIFAR-10, once training
    # them (a preset's shape through the data path) is wired and tested.
    "gpt": (),
    "vit": (),
}


def byte_language_model(workload: Workload) -> bool:
    """True when `workload` can learn byte-level text: token inputs, next-token targets and
    cross-entropy over exactly the 256 byte values."""
    return (workload.layout == "tokens" and workload.targets == "next_tokens"
            and workload.loss == "next_token_ce" and workload.vocab == BYTE_VOCAB)


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
    if dataset_name in BYTE_TEXT:
        workload, takers = get_workload(workload_name), _byte_text_takers()
        raise UsageError(f"{dataset_name!r} is byte-level text, for a language model with token inputs, next-token "
                         f"targets and a vocabulary of {BYTE_VOCAB} ({workload_name!r}: {workload.layout} input, "
                         f"vocabulary {workload.vocab}): "
                         + (f"train {', '.join(takers)} on it" if takers else "no workload takes it yet"))
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


def _byte_text_takers() -> list[str]:
    return [name for name, accepted in ACCEPTS.items() if set(BYTE_TEXT) & set(accepted)]
