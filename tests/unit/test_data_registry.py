import pytest

from rigbench.data import (
    ACCEPTS,
    DATASETS,
    accepted_datasets,
    check_compatible,
    dataset_dir,
    get_dataset,
    list_datasets,
)
from rigbench.errors import UsageError
from rigbench.workloads import WORKLOADS


def test_every_dataset_is_registered_with_its_facts():
    assert [d.name for d in list_datasets()] == ["mnist", "fashion_mnist", "cifar10", "digits", "image_folder",
                                              "pysrc", "tinyshakespeare", "wikitext2", "ptb"]
    for info in DATASETS.values():
        assert info.title and info.source
        for f in info.files:
            assert f.urls and all(u.startswith(("http://", "https://")) for u in f.urls)
            assert f.urls[0].endswith(f.filename) and f.digests, f.filename
    assert DATASETS["mnist"].image_shape == (1, 28, 28) and len(DATASETS["mnist"].classes) == 10
    assert DATASETS["cifar10"].train_size == 50_000 and DATASETS["cifar10"].test_size == 10_000


def test_published_checksums():
    mnist = {f.filename: f.md5 for f in DATASETS["mnist"].files}
    assert mnist["train-images-idx3-ubyte.gz"] == "f68b3c2dcbeaaa9fbdd348bbdeb94873"
    assert mnist["t10k-labels-idx1-ubyte.gz"] == "ec29112dd5afa0611ce80d1b7f02629c"
    assert DATASETS["mnist"].files[0].urls[0] == "https://ossci-datasets.s3.amazonaws.com/mnist/train-images-idx3-ubyte.gz"
    fashion = {f.filename: f.md5 for f in DATASETS["fashion_mnist"].files}
    assert fashion["train-images-idx3-ubyte.gz"] == "8d4fb7e6c68d591d4c3dfef9ec88bf0d"
    assert fashion["t10k-labels-idx1-ubyte.gz"] == "bb300cfdad3c16e7a12a480ee83cd310"
    (archive,) = DATASETS["cifar10"].files
    # the *binary* archive; torchvision's python (pickle) one has md5 c58f30108f718f92721af3b95e74349a
    assert archive.urls == ("https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz",)
    assert archive.md5 == "c32a1d4ab5d03f1284b67883e8d87530"


def test_unknown_dataset_lists_the_known_ones():
    with pytest.raises(UsageError, match="unknown data set 'imagenet': choose from mnist, fashion_mnist, cifar10"):
        get_dataset("imagenet")


def test_dataset_dir_defaults_to_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RIGBENCH_CACHE_DIR", str(tmp_path / "c"))
    assert dataset_dir("mnist") == tmp_path / "c" / "data" / "mnist"
    assert dataset_dir("mnist", tmp_path / "mine") == tmp_path / "mine"


def test_every_workload_says_what_it_accepts():
    assert set(ACCEPTS) == set(WORKLOADS)
    for workload, names in ACCEPTS.items():
        assert set(names) <= set(DATASETS), workload
    assert accepted_datasets("mlp")[0] == "mnist" and accepted_datasets("cnn")[0] == "cifar10"


def test_check_compatible():
    check_compatible("mlp", "fashion_mnist")
    check_compatible("resnet", "digits")
    check_compatible("catsdogs", "image_folder")
    with pytest.raises(UsageError, match="'mlp' cannot train on 'cifar10': use mnist, fashion_mnist, digits"):
        check_compatible("mlp", "cifar10")
    with pytest.raises(UsageError, match="'catsdogs' cannot train on 'mnist': use image_folder"):
        check_compatible("catsdogs", "mnist")
    with pytest.raises(UsageError, match="'lstm' cannot train on 'mnist': use pysrc, tinyshakespeare, wikitext2, ptb"):
        check_compatible("lstm", "mnist")
    with pytest.raises(UsageError, match="'vit' takes no real data set yet"):
        check_compatible("vit", "mnist")
    with pytest.raises(UsageError, match="unknown workload 'bert'"):
        check_compatible("bert", "mnist")
    with pytest.raises(UsageError, match="unknown data set 'svhn'"):
        check_compatible("cnn", "svhn")
