"""The reference networks, as framework-neutral facts.

A workload says *what* is trained and everything about it that is not framework code: input
shape and layout, task, loss kind, targets, optimiser and its arguments, latent size,
vocabulary, the parts updated per step, the held-out metric, whether lr-find applies, the
reference data set, and (in `workloads/flops.py`) its analytic training FLOPs and parameter
count. Adapters map these facts through small tables; only their model builders know a
workload by name. Measurement hygiene lives in the runner, never here.

To add a workload: add a `Workload(...)` to `_WORKLOADS` below, its formulas to
`workloads/flops.py` (the transformers' to `workloads/transformers.py`), its line to
`data/accepts.ACCEPTS` (the real data sets it trains on, `()` for none: without a line it can
neither `train` nor `lr-find` on any data set), and a builder to the `BUILDERS` table of each
model family's models module (frameworks/torch, jax, keras); the contract suite needs its line
in tests/contract/test_workloads.STEPS (docs/ARCHITECTURE.md, "Where to add…").

To change a workload's network (layers, widths, loss, optimiser...): bump its `revision`.
Every trial records the revision it measured (TrialSpec.workload_revision, part of the
configuration key), so results of two networks under one name are never compared, and a
score suite (analysis/score.py) names the revision of each of its workloads.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from rigbench.errors import UsageError


@dataclass(frozen=True)
class Dataset:
    """The data set a workload's shape comes from; its size turns speed into epoch time
    (`epoch_samples`). A text corpus also gives its training `tokens`: a language model's epoch
    is those tokens in sequences of the trial's own length, and `train_size` is the count at the
    reference sequence length its source quotes."""

    name: str
    train_size: int
    source: str
    tokens: int | None = None


@dataclass(frozen=True)
class Part:
    """A separately optimised part of a network, in the order a step updates them."""

    name: str  # the builder's name for it ("model", or e.g. "discriminator")
    key: str  # short label of its per-part metrics, e.g. "d" -> epoch extra "loss_d"


#: The one part of every single-update network.
WHOLE_MODEL = (Part("model", "model"),)

#: Loss kinds (an adapter maps each to its framework's function):
#:   cross_entropy       softmax cross-entropy of logits [B, classes] on class indices [B]
#:   bce_logits          binary cross-entropy with logits of one logit [B, 1] on 0/1 floats [B]
#:   mse                 mean squared error of the reconstruction against the input
#:   next_token_ce       cross-entropy of logits [B, T, vocab] on the next tokens [B, T]
#:   adversarial_bce     the GAN's pair: D on real (1) and G(z) (0), then G to make D say 1
LOSS_KINDS = ("cross_entropy", "bce_logits", "mse", "next_token_ce", "adversarial_bce")
#: Targets: class_index (int labels), binary (0/1 labels as floats), input (the input
#: itself), latent_noise (z ~ N(0, 1) [B, latent_size, 1, 1], fresh each step on real data),
#: next_tokens (the input sequence shifted by one token).
TARGETS = ("class_index", "binary", "input", "latent_noise", "next_tokens")
#: Input layouts: image (NCHW), flat (an image the network flattens itself: the dense nets),
#: tokens (int token ids [B, T]).
LAYOUTS = ("image", "flat", "tokens")
#: Input ranges of images: symmetric ((x/255 - 0.5) / 0.5 in [-1, 1]; synthetic N(0, 1)) or
#: unit (x/255 in [0, 1], the range of a sigmoid output; synthetic U(0, 1)).
INPUT_RANGES = ("symmetric", "unit")
#: Held-out metrics: accuracy (of the prediction the loss implies), reconstruction_mse
#: (held-out MSE, stored as `recon_mse`), perplexity (a language model: the held-out next-token
#: loss in nats per token, with exp(loss) and, on byte-level text, bits per byte derived from
#: it), none (a GAN: each part's mean training loss instead).
METRICS = ("accuracy", "reconstruction_mse", "perplexity", "none")

#: Optimiser arguments besides the learning rate.
SGD_MOMENTUM: dict[str, Any] = {"momentum": 0.9}
ADAM: dict[str, Any] = {"betas": (0.9, 0.999)}
#: Radford et al. 2016 train the DCGAN with Adam at beta1 = 0.5.
ADAM_DCGAN: dict[str, Any] = {"betas": (0.5, 0.999)}

#: Vocabulary of the LSTM language model (Penn Treebank as in Mikolov's split).
PTB_VOCAB = 10_000
#: The vocabulary of a byte-level language model: one token per byte value (data/text.py
#: reads every text corpus as bytes). `lstm:vocab=256` is the LSTM that trains on them.
BYTE_VOCAB = 256


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
    loss: str  # one of LOSS_KINDS
    targets: str  # one of TARGETS
    layout: str  # one of LAYOUTS
    metric: str  # one of METRICS
    optimizer_args: dict[str, Any]  # keyword arguments besides lr, e.g. SGD_MOMENTUM
    input_range: str = "symmetric"  # one of INPUT_RANGES (images only)
    parts: tuple[Part, ...] = WHOLE_MODEL  # updated in this order every step
    latent_size: int | None = None  # the generator's z (GANs)
    vocab: int | None = None  # token ids are in [0, vocab) (language models)
    lr_find: bool = True  # False where one loss on a real data set does not exist
    options: dict[str, Any] = field(default_factory=dict)  # option -> default
    option_choices: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    #: Named option sets (option "preset"): preset -> the options it sets; an option given
    #: beside the preset wins over it (see resolved_options).
    presets: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: In the run of `rigbench run` with no workload named. The transformers are not: they would
    #: add two trials to every default run (and `--quick` on a CPU), and the score suite's
    #: workloads are pinned apart from this (analysis/score.py); name them to run them.
    default_run: bool = True
    #: The network's revision: 1 for the network as first released, bumped on every change to
    #: what is trained (see the module docstring). A trial stored before revisions existed
    #: measured revision 1.
    revision: int = 1

    def __post_init__(self) -> None:
        for value, allowed in ((self.loss, LOSS_KINDS), (self.targets, TARGETS), (self.layout, LAYOUTS),
                               (self.metric, METRICS), (self.input_range, INPUT_RANGES)):
            if value not in allowed:
                raise ValueError(f"workload {self.name!r}: {value!r} is not one of {allowed}")

MNIST = Dataset("mnist", 60_000, "LeCun et al. 1998, 60,000 training images 28x28")
CIFAR10 = Dataset("cifar10", 50_000, "Krizhevsky 2009, 50,000 training images 32x32")


def _text_corpus(name: str, tokens: int, quoted_length: int, source: str) -> Dataset:
    """A text corpus: its tokens, and `train_size` the sequences of the length its source quotes."""
    return Dataset(name, tokens // quoted_length, source, tokens=tokens)


# A language-model sample is one sequence of 32 tokens: 929,589 training tokens // 32.
PTB = _text_corpus("ptb", 929_589, 32, "Penn Treebank (Mikolov's split): 929,589 training tokens "
                   "= 29,049 sequences of 32 tokens")
# A GPT sample is one sequence of `context` tokens. Its speed figures are for GPT-2's corpus, so
# the size is nominal: OpenWebText's ~9e9 GPT-2 tokens, 8,823,810 sequences of 1024 (GPT-2's
# context) and 16 times as many of the tiny preset's 64 (`epoch_samples`). rigbench trains it on
# byte-level text, `rigbench train gpt --dataset pysrc`, never on OpenWebText.
OPENWEBTEXT = _text_corpus("openwebtext", 9_035_582_198, 1024, "OpenWebText as nanoGPT prepares it: "
                           "9,035,582,198 GPT-2 training tokens = 8,823,810 sequences of 1024 tokens "
                           "(nominal: the speed path's tokens are synthetic; `rigbench train gpt` trains "
                           "on byte-level text such as pysrc)")
CATSDOGS = Dataset("catsdogs", 20_000, "Kaggle Dogs vs. Cats as the 'GPUs for deep learning' deck splits it: 20,000 training images")

_WORKLOADS: tuple[Workload, ...] = (
    Workload(
        name="mlp", title="Back-propagation network (fully connected)", task="classification",
        input_shape=(1, 28, 28), num_classes=10, dataset=MNIST, default_batch=64, quick_batch=64,
        optimizer="sgd", default_lr=0.05,
        loss="cross_entropy", targets="class_index", layout="flat", metric="accuracy",
        optimizer_args=SGD_MOMENTUM,
        origin="Fully connected net in the shape of Shi et al. 2016's FCN-S (3 hidden layers of "
               "2048 units, minibatch 64) on 28x28 inputs with 10 classes",
        seed_docs=("000", "002"),
    ),
    Workload(
        name="autoencoder", title="Deep dense autoencoder", task="reconstruction",
        input_shape=(1, 28, 28), num_classes=None, dataset=MNIST, default_batch=64, quick_batch=64,
        optimizer="adam", default_lr=1e-3,
        loss="mse", targets="input", layout="flat", metric="reconstruction_mse",
        optimizer_args=ADAM, input_range="unit",
        origin="Hinton & Salakhutdinov 2006 (Science): 784-1000-500-250-30 encoder, mirrored decoder",
        seed_docs=("000",),
    ),
    Workload(
        name="cnn", title="Small CIFAR-10 convnet", task="classification",
        input_shape=(3, 32, 32), num_classes=10, dataset=CIFAR10, default_batch=128, quick_batch=64,
        optimizer="sgd", default_lr=0.01,
        loss="cross_entropy", targets="class_index", layout="image", metric="accuracy",
        optimizer_args=SGD_MOMENTUM,
        origin="The CIFAR-10 CNN of the TensorFlow 2 tutorial used in Yin 2020: "
               "conv32-pool-conv64-pool-conv64-dense64-dense10",
        seed_docs=("003",),
    ),
    Workload(
        name="rcnn", title="Recurrent convolutional network", task="classification",
        input_shape=(3, 32, 32), num_classes=10, dataset=CIFAR10, default_batch=32, quick_batch=4,
        optimizer="sgd", default_lr=0.01,
        loss="cross_entropy", targets="class_index", layout="image", metric="accuracy",
        optimizer_args=SGD_MOMENTUM,
        origin="Liang & Hu 2015 (CVPR), RCNN-K: conv 5x5, four recurrent conv layers unrolled "
               "T=3 steps, max pooling, global max pool, softmax",
        seed_docs=("000",),
        options={"width": 96, "steps": 3},
        option_choices={"width": (32, 64, 96, 128, 160), "steps": (1, 2, 3, 4)},
    ),
    Workload(
        name="lstm", title="LSTM language model", task="language_model",
        input_shape=(32,), num_classes=PTB_VOCAB, dataset=PTB, default_batch=128, quick_batch=32,
        optimizer="sgd", default_lr=1.0,
        loss="next_token_ce", targets="next_tokens", layout="tokens", metric="perplexity",
        optimizer_args=SGD_MOMENTUM, vocab=PTB_VOCAB,
        origin="Two-layer LSTM word model on a 10,000-word vocabulary with sequences of 32 "
               "tokens and minibatch 128, as Shi et al. 2016's LSTM benchmark (Zaremba et al. 2014 style); "
               "vocab=256 is the same network on bytes, the one that trains on the text data sets",
        seed_docs=("002",),
        options={"hidden": 256, "vocab": PTB_VOCAB},
        option_choices={"hidden": (128, 256, 512, 1024), "vocab": (PTB_VOCAB, BYTE_VOCAB)},
    ),
    Workload(
        name="dcgan", title="DCGAN (one step = D update + G update)", task="gan",
        input_shape=(3, 64, 64), num_classes=None, dataset=CIFAR10, default_batch=64, quick_batch=8,
        optimizer="adam", default_lr=2e-4,
        loss="adversarial_bce", targets="latent_noise", layout="image", metric="none",
        optimizer_args=ADAM_DCGAN, latent_size=100, lr_find=False,
        parts=(Part("discriminator", "d"), Part("generator", "g")),
        origin="Radford, Metz & Chintala 2016: 64x64 DCGAN generator and discriminator "
               "(nz=100, 64 base filters), as the PyTorch-DirectML study trains it",
        seed_docs=("000",),
    ),
    Workload(
        name="resnet", title="CIFAR ResNet", task="classification",
        input_shape=(3, 32, 32), num_classes=10, dataset=CIFAR10, default_batch=128, quick_batch=16,
        optimizer="sgd", default_lr=0.1,
        loss="cross_entropy", targets="class_index", layout="image", metric="accuracy",
        optimizer_args=SGD_MOMENTUM,
        origin="He et al. 2016, section 4.2: 6n+2 layers with 16/32/64 filters "
               "(depth 20 by default; 56 as in Shi et al. 2016's ResNet-56)",
        seed_docs=("002", "004"),
        options={"depth": 20},
        option_choices={"depth": (20, 32, 44, 56, 110)},
    ),
    Workload(
        name="catsdogs", title="Large-image CNN (cats vs dogs)", task="classification",
        input_shape=(3, 256, 256), num_classes=2, dataset=CATSDOGS, default_batch=16, quick_batch=2,
        optimizer="adam", default_lr=1e-4,
        loss="bce_logits", targets="binary", layout="image", metric="accuracy",
        optimizer_args=ADAM, revision=2,
        origin="The 'GPUs for deep learning' deck's Keras cats-vs-dogs CNN as its linked notebook (GitHub "
               "saranshagarwal202/Cats_versus_Dogs) prints it: 256x256x3 input; 13 conv 3x3 'same' "
               "+ ReLU without batch norm (32x2, pool 2; 64x2, pool 2; 128x3, pool 2; 256x3, pool 3; "
               "512x3, pool 3); dense 2048, dropout 0.5, batch norm; dense 2048, dropout 0.4, batch "
               "norm; one output; Adam at 1e-4, binary cross-entropy. 21,455,521 trainable and "
               "8,192 non-trainable parameters (21,463,713 in all), as the notebook's summary says. "
               "The deck's slides say '15 conv, 6 pool', which contradicts their own parameter "
               "totals; the notebook is followed. The sigmoid output + binary cross-entropy is "
               "trained as one logit + cross-entropy with logits, the same function computed "
               "stably (no log of a saturated sigmoid). Revision 2: revision 1 was a 15-conv, "
               "6-pool reconstruction from the slides (21,436,577 parameters, 14.7% more FLOPs, "
               "SGD)",
        seed_docs=("001",),
    ),
)

#: GPT presets (layers, heads, width, context, vocab): tiny runs in seconds on 2 CPU cores on
#: a byte vocabulary; small and medium are GPT-2's 124M and 350M shapes with nanoGPT's vocabulary
#: padded from 50,257 to 50,304 (a multiple of 64).
GPT_PRESETS: dict[str, dict[str, Any]] = {
    "tiny": {"layers": 2, "heads": 4, "width": 128, "context": 64, "vocab": 256},
    "small": {"layers": 12, "heads": 12, "width": 768, "context": 1024, "vocab": 50_304},
    "medium": {"layers": 24, "heads": 16, "width": 1024, "context": 1024, "vocab": 50_304},
}
#: ViT presets (Dosovitskiy et al. 2021; Touvron et al. 2021's DeiT-Ti/-S widths), on CIFAR-10
#: sized images with 4x4 patches (64 patches) or on 224-pixel images with 16x16 patches (196).
#: "tiny" is ViT-Ti cut to 2 blocks so a CPU step takes well under a second; the full
#: 12-block ViT-Ti is "ti32" (CIFAR) or "ti224".
VIT_PRESETS: dict[str, dict[str, Any]] = {
    "tiny": {"layers": 2, "heads": 3, "width": 192, "mlp": 768, "image": 32, "patch": 4},
    "ti32": {"layers": 12, "heads": 3, "width": 192, "mlp": 768, "image": 32, "patch": 4},
    "s32": {"layers": 12, "heads": 6, "width": 384, "mlp": 1536, "image": 32, "patch": 4},
    "ti224": {"layers": 12, "heads": 3, "width": 192, "mlp": 768, "image": 224, "patch": 16},
    "s224": {"layers": 12, "heads": 6, "width": 384, "mlp": 1536, "image": 224, "patch": 16},
}

_WORKLOADS += (
    Workload(
        name="gpt", title="GPT decoder-only transformer", task="language_model",
        input_shape=(GPT_PRESETS["tiny"]["context"],), num_classes=GPT_PRESETS["tiny"]["vocab"],
        dataset=OPENWEBTEXT, default_batch=32, quick_batch=8,
        optimizer="adam", default_lr=3e-4,
        loss="next_token_ce", targets="next_tokens", layout="tokens", metric="perplexity",
        optimizer_args=ADAM, vocab=GPT_PRESETS["tiny"]["vocab"],
        origin="Radford et al. 2019 (GPT-2) as nanoGPT builds it: token + position embedding, "
               "pre-norm blocks (LayerNorm eps 1e-5, causal self-attention with the framework's "
               "fused kernel, MLP 4x with exact GELU), final LayerNorm, head tied to the token "
               "embedding, biases throughout; presets tiny (default), small (124M), medium (350M)",
        seed_docs=(),
        options={"preset": "tiny", **GPT_PRESETS["tiny"]},
        option_choices={"preset": tuple(GPT_PRESETS)},
        presets=GPT_PRESETS, default_run=False,
    ),
    Workload(
        name="vit", title="Vision Transformer", task="classification",
        input_shape=(3, 32, 32), num_classes=10, dataset=CIFAR10, default_batch=128, quick_batch=8,
        optimizer="adam", default_lr=1e-3,
        loss="cross_entropy", targets="class_index", layout="image", metric="accuracy",
        optimizer_args=ADAM,
        origin="Dosovitskiy et al. 2021 (ViT) at DeiT's Ti/S widths (Touvron et al. 2021): patch "
               "embedding, class token, learned position embedding, pre-norm blocks (LayerNorm "
               "eps 1e-5, fused attention, MLP with exact GELU), head on the class token; presets "
               "tiny (default: ViT-Ti with 2 blocks on 32x32), ti32, s32 (4x4 patches on "
               "CIFAR-10), ti224, s224 (16x16 patches on 224x224)",
        seed_docs=(),
        options={"preset": "tiny", **VIT_PRESETS["tiny"]},
        option_choices={"preset": tuple(VIT_PRESETS)},
        presets=VIT_PRESETS, default_run=False,
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
        if key in options:  # the last one won silently: `resnet:depth=56,depth=20` swept depth 20 alone
            raise UsageError(f"option {key} of {name!r} is given twice in {text!r}: give it once (to compare two "
                             f"values, name the workload once for each: {name}:{key}={options[key]} and {name}:{key}={raw})")
        default = workload.options[key]
        try:
            value = type(default)(raw)
        except ValueError:
            kind = {"int": "a whole number", "float": "a number"}.get(type(default).__name__, f"a {type(default).__name__}")
            raise UsageError(f"option {key} of {name!r} takes {kind}, got {raw!r}") from None
        choices = workload.option_choices.get(key)
        if choices and value not in choices:
            raise UsageError(f"option {key}={raw} of {name!r} must be one of {', '.join(map(str, choices))}")
        options[key] = value
    from rigbench.workloads.transformers import shape_of

    shape_of(workload.name, resolved_options(workload, options))  # UsageError for a shape it cannot build
    return workload, options


def resolved_options(workload: Workload, options: dict[str, Any]) -> dict[str, Any]:
    """The workload's defaults, overlaid with the named preset's options, overlaid with the
    given options (so `gpt:preset=small,layers=6` is GPT-2 small with 6 layers)."""
    preset = workload.presets.get(str(options.get("preset", workload.options.get("preset"))), {})
    return {**workload.options, **preset, **options}


def shaped(workload: Workload, options: dict[str, Any]) -> Workload:
    """The workload with the input shape and vocabulary its options choose (a GPT's context
    and vocabulary, a ViT's image size), which the adapters' batches read from the workload;
    the workload itself where no option changes them."""
    resolved = resolved_options(workload, options)
    changes: dict[str, Any] = {}
    if "context" in resolved:
        changes["input_shape"] = (int(resolved["context"]),)
    if "vocab" in resolved:
        changes["vocab"] = changes["num_classes"] = int(resolved["vocab"])
    if "image" in resolved:
        changes["input_shape"] = (3, int(resolved["image"]), int(resolved["image"]))
    return replace(workload, **changes) if changes else workload


def epoch_samples(workload: Workload, options: dict[str, Any]) -> int:
    """Samples in one epoch of the workload's reference data set with these options: a text
    corpus's tokens in sequences of the length the options give (gpt at context 64 has 16 times
    the sequences of context 1024, each a sixteenth as long), else the set's `train_size`."""
    tokens = workload.dataset.tokens
    if tokens is None or workload.layout != "tokens":
        return workload.dataset.train_size
    return tokens // shaped(workload, options).input_shape[0]
