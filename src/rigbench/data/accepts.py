"""Which real data sets each workload can train on.

A data set fits a workload when its images can be brought to the workload's input shape
without changing what is learnt: MNIST-like 28x28 grey for the dense nets, CIFAR-10 for the
32x32 (and, resized, 64x64 DCGAN) convnets. `digits` fits both after to_workload_shape.

Byte-level text (BYTE_TEXT) fits only a byte-level language model: token inputs, next-token
targets and a vocabulary of exactly the 256 byte values (`byte_language_model`). `lstm` and
`gpt` take it: trained on text, a language model whose vocabulary is an option left to its
default (lstm's 10,000 words) or to a preset (gpt's small and medium: GPT-2's 50,304) gets
vocab=256 (`training_options`); a vocabulary the user named must be 256.
"""

from __future__ import annotations

from typing import Any

from rigbench.data.registry import get_dataset
from rigbench.errors import UsageError
from rigbench.workloads import BYTE_VOCAB, Workload, get_workload, resolved_options, shaped

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
    "lstm": BYTE_TEXT,  # as lstm:vocab=256 (training_options)
    "gpt": BYTE_TEXT,
    # vit's 32-pixel presets would take CIFAR-10 once a preset's image size goes through the
    # data path and is tested; so far it runs on the speed path only.
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


def training_options(workload_name: str, options: dict[str, Any], dataset_name: str) -> dict[str, Any]:
    """The workload options a training on `dataset_name` uses: `options`, plus vocab=256 on
    byte-level text where the workload's vocabulary is an option the user did not name and its
    default or preset is another size (lstm's 10,000 words, GPT-2's 50,304 tokens)."""
    workload = get_workload(workload_name)
    if (dataset_name in BYTE_TEXT and "vocab" in workload.options and "vocab" not in options
            and int(resolved_options(workload, options)["vocab"]) != BYTE_VOCAB):
        return {**options, "vocab": BYTE_VOCAB}
    return options


def check_compatible(workload_name: str, dataset_name: str, options: dict[str, Any] | None = None) -> None:
    """Raise UsageError unless `workload_name` with `options` (as training_options gives them)
    can train on `dataset_name`."""
    accepted = accepted_datasets(workload_name)
    get_dataset(dataset_name)
    workload = shaped(get_workload(workload_name), options or {})
    if dataset_name in BYTE_TEXT and dataset_name in accepted and not byte_language_model(workload):
        raise UsageError(f"{dataset_name!r} is byte-level text: train {workload_name} with vocab={BYTE_VOCAB}, "
                         f"not {workload.vocab} (leave vocab out and it is set)")
    if dataset_name in accepted:
        return
    if dataset_name in BYTE_TEXT:
        takers = _byte_text_takers()
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
