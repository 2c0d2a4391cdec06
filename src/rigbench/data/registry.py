"""The data sets rigbench can train on, as facts: files, checksums, shapes, classes, sources.

Checksums are the published ones (torchvision's MNIST/Fashion-MNIST resources and the
CIFAR-10 page's md5 of the *binary* archive); docs/DATASETS.md says where each comes from.
Sizes are informational (progress bars, error messages): only the digests decide.
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

    @property
    def digests(self) -> dict[str, str]:
        """{algorithm: expected hex digest} for every digest we know."""
        return {a: d for a, d in (("md5", self.md5), ("sha256", self.sha256)) if d}


@dataclass(frozen=True)
class DatasetInfo:
    """A data set: where its files come from and what the loaded arrays look like.

    `image_shape` is (C, H, W) as stored, or None when the user's data decides it
    (image_folder, resized to the workload's input). `train_size`/`test_size` are None
    when they depend on the user's folder.
    """

    name: str
    title: str
    format: str  # idx | cifar10_binary | sklearn_digits | image_folder (which loader)
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
