import gzip
import os

import numpy as np
import pytest

from rigbench.data import ChecksumError, CorruptFileError, ensure_files, load
from rigbench.data import cache as cache_module
from rigbench.data.idx import IMAGES_MAGIC, LABELS_MAGIC, read_idx
from rigbench.errors import UsageError
from tests.data_files import flip_byte, idx_bytes, mnist_arrays, truncate, write_mnist


@pytest.fixture
def tiny_mnist(tmp_path):
    arrays = mnist_arrays()
    info, _ = write_mnist(tmp_path / "mnist", arrays)
    return info, tmp_path / "mnist", arrays


@pytest.mark.parametrize("base", ["mnist", "fashion_mnist"])
def test_loads_back_exactly_what_was_written(tmp_path, base):
    arrays = mnist_arrays(seed=3)
    info, _ = write_mnist(tmp_path, arrays, base=base)
    x_train, y_train, x_test, y_test = data = load(info, tmp_path, download=False)
    assert x_train.dtype == np.uint8 and x_train.shape == (10, 1, 28, 28)
    assert y_train.dtype == np.int64 and y_test.shape == (4,)
    np.testing.assert_array_equal(x_train[:, 0], arrays[0])
    np.testing.assert_array_equal(y_train, arrays[1])
    np.testing.assert_array_equal(x_test[:, 0], arrays[2])
    np.testing.assert_array_equal(y_test, arrays[3])
    assert data.dataset == base and len(data.classes) == 10


def test_reads_raw_and_gzip(tmp_path):
    images = mnist_arrays()[0]
    (tmp_path / "raw").write_bytes(idx_bytes(images))
    (tmp_path / "zipped").write_bytes(gzip.compress(idx_bytes(images)))
    for name in ("raw", "zipped"):
        np.testing.assert_array_equal(read_idx(tmp_path / name, IMAGES_MAGIC), images)


def test_flipped_bytes_fail_the_checksum_and_the_file_is_kept(tiny_mnist):
    info, directory, _ = tiny_mnist
    target = directory / "train-images-idx3-ubyte.gz"
    flip_byte(target, 100)
    with pytest.raises(ChecksumError) as caught:
        ensure_files(info, directory, download=False)
    message = str(caught.value)
    assert str(target) in message and "md5" in message and "delete it" in message
    assert "\n" not in message and caught.value.expected == info.files[0].md5
    assert target.exists()  # the user's file is never deleted for them


def test_truncated_file_fails_the_checksum_then_the_format_check(tiny_mnist):
    info, directory, _ = tiny_mnist
    target = directory / "t10k-images-idx3-ubyte.gz"
    truncate(target)
    with pytest.raises(ChecksumError, match="t10k-images-idx3-ubyte.gz"):
        load(info, directory, download=False)
    with pytest.raises(CorruptFileError, match="t10k-images-idx3-ubyte.gz is corrupt or truncated") as caught:
        load(info, directory, download=False, verify=False)
    assert caught.value.file == str(target)


def test_structural_checks_name_the_file(tmp_path):
    images = mnist_arrays()[0]
    short = tmp_path / "short"
    short.write_bytes(idx_bytes(images)[:-1])
    with pytest.raises(CorruptFileError, match=r"short is corrupt.*7,855 bytes, a 10x28x28 IDX file has 7,856"):
        read_idx(short, IMAGES_MAGIC)
    longer = tmp_path / "long"
    longer.write_bytes(idx_bytes(images) + b"\0")
    with pytest.raises(CorruptFileError, match="7,857 bytes"):
        read_idx(longer, IMAGES_MAGIC)
    with pytest.raises(CorruptFileError, match="magic number 0x00000803, expected 0x00000801"):
        read_idx(short, LABELS_MAGIC)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    with pytest.raises(CorruptFileError, match="too short"):
        read_idx(empty, LABELS_MAGIC)
    bad_gzip = tmp_path / "bad.gz"
    bad_gzip.write_bytes(gzip.compress(idx_bytes(images))[:200])
    with pytest.raises(CorruptFileError, match="bad.gz is corrupt or truncated \\(the gzip stream ends early"):
        read_idx(bad_gzip, IMAGES_MAGIC)


def test_label_count_and_range_are_checked(tmp_path):
    x_train, y_train, x_test, y_test = mnist_arrays()
    info, _ = write_mnist(tmp_path / "a", (x_train, y_train[:-1], x_test, y_test))
    with pytest.raises(CorruptFileError, match="9 labels for 10 images"):
        load(info, tmp_path / "a", download=False)
    y_bad = y_train.copy()
    y_bad[0] = 10
    info, _ = write_mnist(tmp_path / "b", (x_train, y_bad, x_test, y_test))
    with pytest.raises(CorruptFileError, match="label 10 in a 10-class data set"):
        load(info, tmp_path / "b", download=False)


def test_verification_is_remembered_until_the_file_changes(tiny_mnist, monkeypatch):
    info, directory, _ = tiny_mnist
    calls = []
    real = cache_module.file_digests
    monkeypatch.setattr(cache_module, "file_digests", lambda p, a: calls.append(p.name) or real(p, a))
    ensure_files(info, directory, download=False)
    assert len(calls) == 4 and (directory / "train-images-idx3-ubyte.gz.verified").exists()
    ensure_files(info, directory, download=False)
    assert len(calls) == 4  # stamps hit: nothing hashed again
    labels = directory / "train-labels-idx1-ubyte.gz"
    flip_byte(labels, 30)
    # Rewriting changes the mtime, but maybe not within the file system's clock tick: make sure.
    stat = labels.stat()
    os.utime(labels, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    with pytest.raises(ChecksumError, match="train-labels"):
        ensure_files(info, directory, download=False)
    assert calls[-1] == "train-labels-idx1-ubyte.gz"


def test_missing_files_without_download_say_what_to_put_where(tiny_mnist):
    info, directory, _ = tiny_mnist
    (directory / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(UsageError) as caught:
        ensure_files(info, directory, download=False)
    message = str(caught.value)
    assert "t10k-labels-idx1-ubyte.gz" in message and str(directory) in message and "--data-dir" in message
    assert "train-images" not in message  # only what is missing
    assert info.file("test_labels").urls[0] in message


def test_files_unpacked_by_hand_are_named_where_the_published_ones_are_missing(tmp_path):
    """A folder of the four MNIST files gunzipped was reported "not there", as if empty."""
    from rigbench.data.registry import get_dataset

    info = get_dataset("mnist")
    for f in info.files:
        (tmp_path / f.filename.removesuffix(".gz")).write_bytes(b"unpacked")
    with pytest.raises(UsageError) as caught:
        ensure_files(info, tmp_path, download=False)
    message = str(caught.value)
    assert "not there, and downloading is off" in message and "\n" not in message
    assert message.endswith("; the folder holds t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, "
                            "train-images-idx3-ubyte, train-labels-idx1-ubyte instead, which rigbench does not "
                            "read: it reads the files named above exactly as published, checked against their digests")
    with pytest.raises(UsageError) as empty:
        ensure_files(info, tmp_path / "none", download=False)
    assert "instead" not in str(empty.value)
