"""The reference networks, as framework-neutral facts.

A workload says *what* is trained: input shape, task, reference data set, default batch and
optimiser, and where the network comes from. *How* it is built lives in each framework
adapter (e.g. rigbench/frameworks/torch/models.py), and measurement hygiene lives in the
runner, never here. Parameter counts and FLOPs are counted by the adapter from the real
model, not written down here.

To add a workload: add a `Workload(...)` to `_WORKLOADS` below and a builder in each
framework's models module (docs/ARCHITECTURE.md walks through it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rigbench.errors import UsageError


@dataclass(frozen=True)
class Dataset:
    """The data set a workload's shape comes from; its size turns speed into epoch time."""

    name: str
    train_size: int
    source: str


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    task: str  # classification | reconstruction | gan | language_model
    input_shape: tuple[int, ...]  # one sample, channels first; tokens for language models
    num_classes: int | None
    dataset: Dataset
    default_batch: int
    quick_batch: int  # small batch for `--quick` smoke runs on a CPU
    optimizer: str  # sgd | adam
    default_lr: float
    origin: str
    seed_docs: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)  # option -> default
    option_choices: dict[str, tuple[Any, ...]] = field(default_factory=dict)


MNIST = Dataset("mnist", 60_000, "LeCun et al. 1998, 60,000 training images 28x28")
CIFAR10 = Dataset("cifar10", 50_000, "Krizhevsky 2009, 50,000 training images 32x32")
# A language-model sample is one sequence of 32 tokens: 929,589 training tokens // 32.
PTB = Dataset("ptb", 929_589 // 32, "Penn Treebank (Mikolov's split): 929,589 training tokens "
              "= 29,049 sequences of 32 tokens")
CATSDOGS = Dataset("catsdogs", 20_000, "Kaggle Dogs vs. Cats as split in seed 001: 20,000 training images")

_WORKLOADS: tuple[Workload, ...] = (
    Workload(
        name="mlp", title="Back-propagation network (fully connected)", task="classification",
        input_shape=(1, 28, 28), num_classes=10, dataset=MNIST, default_batch=64, quick_batch=64,
        optimizer="sgd", default_lr=0.05,
        origin="Fully connected net in the shape of Shi et al. 2016's FCN-S (3 hidden layers of "
               "2048 units, minibatch 64) on 28x28 inputs with 10 classes",
        seed_docs=("000", "002"),
    ),
    Workload(
        name="autoencoder", title="Deep dense autoencoder", task="reconstruction",
        input_shape=(1, 28, 28), num_classes=None, dataset=MNIST, default_batch=64, quick_batch=64,
        optimizer="adam", default_lr=1e-3,
        origin="Hinton & Salakhutdinov 2006 (Science): 784-1000-500-250-30 encoder, mirrored decoder",
        seed_docs=("000",),
    ),
    Workload(
        name="cnn", title="Small CIFAR-10 convnet", task="classification",
        input_shape=(3, 32, 32), num_classes=10, dataset=CIFAR10, default_batch=128, quick_batch=64,
        optimizer="sgd", default_lr=0.01,
        origin="The CIFAR-10 CNN of the TensorFlow 2 tutorial used in Yin 2020 (seed 003): "
               "conv32-pool-conv64-pool-conv64-dense64-dense10",
        seed_docs=("003",),
    ),
    Workload(
        name="rcnn", title="Recurrent convolutional network", task="classification",
        input_shape=(3, 32, 32), num_classes=10, dataset=CIFAR10, default_batch=32, quick_batch=4,
        optimizer="sgd", default_lr=0.01,
        origin="Liang & Hu 2015 (CVPR), RCNN-K: conv 5x5, four recurrent conv layers unrolled "
               "T=3 steps, max pooling, global max pool, softmax",
        seed_docs=("000",),
        options={"width": 96, "steps": 3},
        option_choices={"width": (32, 64, 96, 128, 160), "steps": (1, 2, 3, 4)},
    ),
    Workload(
        name="lstm", title="LSTM language model", task="language_model",
        input_shape=(32,), num_classes=10_000, dataset=PTB, default_batch=128, quick_batch=32,
        optimizer="sgd", default_lr=1.0,
        origin="Two-layer LSTM word model on a 10,000-word vocabulary with sequences of 32 "
               "tokens and minibatch 128, as Shi et al. 2016's LSTM benchmark (Zaremba et al. 2014 style)",
        seed_docs=("002",),
        options={"hidden": 256},
        option_choices={"hidden": (128, 256, 512, 1024)},
    ),
    Workload(
        name="dcgan", title="DCGAN (one step = D update + G update)", task="gan",
        input_shape=(3, 64, 64), num_classes=None, dataset=CIFAR10, default_batch=64, quick_batch=8,
        optimizer="adam", default_lr=2e-4,
        origin="Radford, Metz & Chintala 2016: 64x64 DCGAN generator and discriminator "
               "(nz=100, 64 base filters), as trained in seed 000",
        seed_docs=("000",),
    ),
    Workload(
        name="resnet", title="CIFAR ResNet", task="classification",
        input_shape=(3, 32, 32), num_classes=10, dataset=CIFAR10, default_batch=128, quick_batch=16,
        optimizer="sgd", default_lr=0.1,
        origin="He et al. 2016, section 4.2: 6n+2 layers with 16/32/64 filters "
               "(depth 20 by default; 56 as in Shi et al. 2016's ResNet-56)",
        seed_docs=("002", "004"),
        options={"depth": 20},
        option_choices={"depth": (20, 32, 44, 56, 110)},
    ),
    Workload(
        name="catsdogs", title="Large-image CNN (cats vs dogs)", task="classification",
        input_shape=(3, 256, 256), num_classes=2, dataset=CATSDOGS, default_batch=16, quick_batch=2,
        optimizer="sgd", default_lr=0.01,
        origin="Seed 001's Keras cats-vs-dogs CNN, rebuilt from its published summary: 256x256 "
               "input, 15 conv (with batch norm), 6 max-pool, 3 dense; first conv block "
               "[m,256,256,32], sixth conv [m,128,64,64]",
        seed_docs=("001",),
    ),
)

WORKLOADS: dict[str, Workload] = {w.name: w for w in _WORKLOADS}


def get_workload(name: str) -> Workload:
    """Look a workload up by name; an unknown name lists the ones that exist."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise UsageError(
            f"unknown workload {name!r}: choose from {', '.join(WORKLOADS)}"
        ) from None


def parse_workload_ref(text: str) -> tuple[Workload, dict[str, Any]]:
    """`resnet:depth=56` -> (resnet workload, {'depth': 56}); validated against the choices."""
    name, _, opt_text = text.partition(":")
    workload = get_workload(name.strip())
    options: dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in opt_text.split(","))):
        key, eq, raw = item.partition("=")
        if not eq or key not in workload.options:
            known = ", ".join(f"{k}=" for k in workload.options) or "none"
            raise UsageError(f"workload {name!r} has no option {item!r} (options: {known})")
        default = workload.options[key]
        try:
            value = type(default)(raw)
        except ValueError:
            raise UsageError(f"option {key} of {name!r} takes a {type(default).__name__}, got {raw!r}") from None
        choices = workload.option_choices.get(key)
        if choices and value not in choices:
            raise UsageError(f"option {key}={raw} of {name!r} must be one of {', '.join(map(str, choices))}")
        options[key] = value
    return workload, options


def resolved_options(workload: Workload, options: dict[str, Any]) -> dict[str, Any]:
    """The workload's defaults overlaid with the given options."""
    return {**workload.options, **options}
