import numpy as np
import pytest

from rigbench.data import ChecksumError, CorruptFileError, load
from rigbench.data.cifar10 import RECORD, load_cifar10_binary
from tests.data_files import CIFAR_MEMBERS, cifar_records, cifar_tar_bytes, flip_byte, truncate, write_cifar


def test_loads_back_exactly_what_was_written(tmp_path):
    info, expected, _ = write_cifar(tmp_path, per_member=3)
    data = load(info, tmp_path, download=False)
    assert data.x_train.shape == (15, 3, 32, 32) and data.x_test.shape == (3, 3, 32, 32)
    assert data.x_train.dtype == np.uint8 and data.y_train.dtype == np.int64
    for got, want in zip(data, expected):
        np.testing.assert_array_equal(got, want)
    assert data.classes[0] == "airplane" and len(data.classes) == 10


def test_flipped_bytes_fail_the_checksum(tmp_path):
    info, _, _ = write_cifar(tmp_path)
    archive = tmp_path / "cifar-10-binary.tar.gz"
    flip_byte(archive, 500)
    with pytest.raises(ChecksumError, match="cifar-10-binary.tar.gz: md5 is [0-9a-f]{32}, expected"):
        load(info, tmp_path, download=False)
    assert archive.exists()


def test_truncated_archive_is_corrupt_not_a_numpy_error(tmp_path):
    info, _, _ = write_cifar(tmp_path)
    truncate(tmp_path / "cifar-10-binary.tar.gz", 0.6)
    with pytest.raises(ChecksumError):
        load(info, tmp_path, download=False)
    with pytest.raises(CorruptFileError, match="cifar-10-binary.tar.gz is corrupt or truncated"):
        load(info, tmp_path, download=False, verify=False)


def test_truncated_member_names_the_member(tmp_path):
    members = {name: cifar_records(2, i)[2] for i, name in enumerate(CIFAR_MEMBERS)}
    members["data_batch_3.bin"] = members["data_batch_3.bin"][:-10]
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(cifar_tar_bytes(members))
    with pytest.raises(CorruptFileError, match=rf"data_batch_3.bin is corrupt .*{2 * RECORD - 10:,} bytes is not a whole"):
        load_cifar10_binary(archive)


def test_missing_member_and_bad_label(tmp_path):
    members = {name: cifar_records(1, i)[2] for i, name in enumerate(CIFAR_MEMBERS)}
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(cifar_tar_bytes({k: v for k, v in members.items() if k != "test_batch.bin"}))
    with pytest.raises(CorruptFileError, match="no cifar-10-batches-bin/test_batch.bin inside"):
        load_cifar10_binary(archive)
    members["data_batch_1.bin"] = b"\x0c" + members["data_batch_1.bin"][1:]
    archive.write_bytes(cifar_tar_bytes(members))
    with pytest.raises(CorruptFileError, match="label 12"):
        load_cifar10_binary(archive)


def test_not_a_tar_at_all(tmp_path):
    bogus = tmp_path / "cifar-10-binary.tar.gz"
    bogus.write_bytes(b"<html>503 Service Unavailable</html>")
    with pytest.raises(CorruptFileError, match="unreadable tar.gz"):
        load_cifar10_binary(bogus)
