import pytest

from rigbench.errors import UsageError
from rigbench.units import format_bytes, parse_positive_ints, parse_size, split_list
from rigbench.workloads import WORKLOADS, parse_workload_ref


@pytest.mark.parametrize("text,expected", [
    ("2GiB", 2 * 1024**3), ("512MiB", 512 * 1024**2), ("1.5GB", 1_500_000_000),
    ("1000", 1000), ("64 kib", 65536),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "2 parsecs", "GiB", "-1GiB", "0"])
def test_parse_size_rejects(text):
    with pytest.raises(UsageError):
        parse_size(text)


def test_lists_from_repeats_and_commas():
    assert split_list(["16,64", "128", " 8 , "]) == ["16", "64", "128", "8"]
    assert parse_positive_ints(["16,64"], "--batch-size") == [16, 64]
    with pytest.raises(UsageError, match="--batch-size must be at least 1"):
        parse_positive_ints(["0"], "--batch-size")
    with pytest.raises(UsageError, match="whole numbers"):
        parse_positive_ints(["x"], "--batch-size")


def test_format_bytes():
    assert format_bytes(None) == "-"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(3 * 2**30) == "3.0 GiB"


def test_every_issue_workload_is_registered():
    assert set(WORKLOADS) == {"mlp", "autoencoder", "cnn", "rcnn", "lstm", "dcgan", "resnet", "catsdogs"}
    assert WORKLOADS["cnn"].dataset.train_size == 50_000
    # a language-model sample is a 32-token sequence, so the epoch is counted in sequences
    assert WORKLOADS["lstm"].dataset.train_size == 929_589 // 32 == 29_049
    assert all(w.origin and w.dataset.train_size > 0 for w in WORKLOADS.values())


def test_workload_refs_with_options():
    w, opts = parse_workload_ref("resnet:depth=56")
    assert w.name == "resnet" and opts == {"depth": 56}
    with pytest.raises(UsageError, match="unknown workload 'nope': choose from mlp"):
        parse_workload_ref("nope")
    with pytest.raises(UsageError, match="must be one of"):
        parse_workload_ref("resnet:depth=21")
    with pytest.raises(UsageError, match="has no option"):
        parse_workload_ref("cnn:depth=20")
