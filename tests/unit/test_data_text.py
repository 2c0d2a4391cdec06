"""Byte-level text: windows, the unigram baseline, the registry's text sets, who may take them."""

import math
import zipfile

import numpy as np
import pytest
from typer.testing import CliRunner

from rigbench import cli
from rigbench.data import (
    ACCEPTS,
    BYTE_VOCAB,
    DATASETS,
    CorruptFileError,
    RemoteFile,
    check_compatible,
    load,
    load_corpus,
    load_for_workload,
    next_byte_windows,
    reference_dataset,
    training_options,
    unigram_entropy,
)
from rigbench.data.accepts import BYTE_TEXT, byte_language_model
from rigbench.data.registry import TEXT_FORMATS
from rigbench.data.text import as_bytes, split_tail
from rigbench.errors import UsageError
from rigbench.workloads import WORKLOADS, Dataset, Workload, resolved_options, shaped
from rigbench.workloads.flops import trainable_params
from tests.data_files import flip_byte, text_dataset, wikitext_zip_bytes

TEXT = b"To be, or not to be, that is the question:\n" * 5  # 215 bytes


def test_windows_are_non_overlapping_and_targets_are_the_next_bytes():
    stream = np.arange(23, dtype=np.uint8)
    x, y = next_byte_windows(stream, 5)
    assert x.shape == y.shape == (4, 5) and x.dtype == y.dtype == np.uint8  # (23 - 1) // 5
    np.testing.assert_array_equal(x[1], [5, 6, 7, 8, 9])
    np.testing.assert_array_equal(y[1], [6, 7, 8, 9, 10])
    np.testing.assert_array_equal(x.ravel(), stream[:20])  # every input byte once, in order
    np.testing.assert_array_equal(y.ravel(), stream[1:21])  # bytes 21, 22 are dropped
    assert np.shares_memory(x, stream) and np.shares_memory(y, stream)  # views, no copy


def test_windows_of_an_exact_fit_and_of_too_little():
    x, y = next_byte_windows(np.arange(11, dtype=np.uint8), 5)  # 10 targets exactly
    assert x.shape == (2, 5) and y[-1, -1] == 10
    x, _ = next_byte_windows(np.arange(5, dtype=np.uint8), 5)  # no next byte for the last one
    assert x.shape == (0, 5)
    with pytest.raises(ValueError, match="seq_len"):
        next_byte_windows(np.arange(5, dtype=np.uint8), 0)


def test_split_tail_cuts_like_nanogpt():
    train, valid = split_tail(np.arange(1000, dtype=np.int64) % 256, 0.1)
    assert len(train) == 900 and len(valid) == 100 and valid[0] == 900 % 256


def test_unigram_entropy_by_hand():
    # "aab": p = 2/3, 1/3 -> H = ln 3 - (2/3) ln 2 nats = 0.918296 bits
    h = unigram_entropy(as_bytes(b"aab"))
    assert h.nats == pytest.approx(math.log(3) - 2 / 3 * math.log(2), abs=1e-12)
    assert h.bits == pytest.approx(0.9182958340544896, abs=1e-12)
    assert unigram_entropy(as_bytes(b"abcd")).bits == pytest.approx(2.0)
    assert unigram_entropy(as_bytes(bytes(range(256)))).bits == pytest.approx(8.0)  # the ceiling
    assert unigram_entropy(as_bytes(b"zzzz")).nats == 0.0
    assert unigram_entropy(as_bytes(b"abcd")).perplexity == pytest.approx(4.0)
    with pytest.raises(ValueError, match="empty"):
        unigram_entropy(as_bytes(b""))


def test_text_sets_are_registered_with_published_digests():
    names = [d.name for d in DATASETS.values() if d.format in TEXT_FORMATS]
    assert names == list(BYTE_TEXT) == ["pysrc", "tinyshakespeare", "wikitext2", "ptb"]
    (shakespeare,) = DATASETS["tinyshakespeare"].files
    assert shakespeare.urls == ("https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt",)
    assert shakespeare.sha256 == "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
    (wikitext,) = DATASETS["wikitext2"].files
    assert wikitext.sha256 == "ef7edb566e3e2b2d31b29c1fdb0c89a4cc683597484c3dc2517919c615435a11"
    assert all(u.endswith("/wikitext-2-raw-v1.zip") for u in wikitext.urls) and len(wikitext.urls) == 3
    ptb = {f.filename: (f.md5, f.sha256) for f in DATASETS["ptb"].files}
    assert ptb["ptb.train.txt"] == ("f26c4b92c5fdc7b3f8c7cdcb991d8420",
                                    "fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf")
    assert ptb["ptb.test.txt"][1] == "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0"
    assert DATASETS["pysrc"].files == ()  # nothing to download


def test_a_file_without_a_published_digest_cannot_be_registered():
    with pytest.raises(ValueError, match="no published digest"):
        RemoteFile("x.txt", ("https://example.org/x.txt",), "text")


def test_no_workload_takes_byte_text_unless_it_is_a_byte_language_model():
    assert BYTE_VOCAB == 256
    for name, accepted in ACCEPTS.items():
        if set(accepted) & set(BYTE_TEXT):  # each taker, with the options a training on text gives it
            assert byte_language_model(shaped(WORKLOADS[name], training_options(name, {}, "pysrc"))), name
    assert set(ACCEPTS["lstm"]) == set(ACCEPTS["gpt"]) == set(BYTE_TEXT)
    assert not byte_language_model(WORKLOADS["lstm"])  # as declared: a 10,000-word vocabulary
    with pytest.raises(UsageError, match="'ptb' is byte-level text"):
        check_compatible("mlp", "ptb")


def test_a_language_model_trains_on_bytes_with_vocab_256_unless_told_otherwise():
    # lstm's default and gpt's presets have other vocabularies: trained on text they get 256 ...
    assert training_options("lstm", {}, "pysrc") == {"vocab": 256}
    assert training_options("lstm", {"hidden": 128}, "ptb") == {"hidden": 128, "vocab": 256}
    assert training_options("gpt", {"preset": "small"}, "pysrc") == {"preset": "small", "vocab": 256}
    # ... gpt's default (tiny) is byte-level already, and an image set changes nothing
    assert training_options("gpt", {}, "pysrc") == {}
    assert training_options("mlp", {}, "digits") == {}
    check_compatible("lstm", "pysrc", {"vocab": 256})
    # a vocabulary the user named is never overridden: another size is refused, naming the fix
    assert training_options("lstm", {"vocab": 10000}, "pysrc") == {"vocab": 10000}
    with pytest.raises(UsageError, match="train lstm with vocab=256, not 10000"):
        check_compatible("lstm", "pysrc", {"vocab": 10000})
    with pytest.raises(UsageError, match="train gpt with vocab=256, not 50304"):
        check_compatible("gpt", "pysrc", {"preset": "small", "vocab": 50304})


def test_the_lstm_on_bytes_is_the_same_network_with_a_byte_vocabulary():
    words, byte_level = shaped(WORKLOADS["lstm"], {}), shaped(WORKLOADS["lstm"], {"vocab": 256})
    assert (words.vocab, byte_level.vocab, byte_level.num_classes) == (10000, 256, 256)
    hidden = 256  # embedding + gates + decoder: only the vocabulary's rows and columns change
    gates = 2 * (4 * hidden * 2 * hidden + 2 * 4 * hidden)
    lstm = WORKLOADS["lstm"]
    assert trainable_params(lstm, resolved_options(lstm, {"vocab": 256})) == 256 * hidden + gates + hidden * 256 + 256
    assert trainable_params(lstm, resolved_options(lstm, {})) == 10000 * hidden + gates + hidden * 10000 + 10000


@pytest.fixture
def byte_lm(monkeypatch):
    """A byte-level language model workload that accepts the text sets, for the loader's path."""
    workload = Workload(
        name="bytelm", title="test byte LM", task="language_model", input_shape=(16,), num_classes=None,
        dataset=Dataset("pysrc", 1, "test"), default_batch=4, quick_batch=4, optimizer="adam", default_lr=1e-3,
        origin="test", seed_docs=(), loss="next_token_ce", targets="next_tokens", layout="tokens", metric="perplexity",
        optimizer_args={}, vocab=BYTE_VOCAB)
    monkeypatch.setitem(WORKLOADS, "bytelm", workload)
    monkeypatch.setitem(ACCEPTS, "bytelm", BYTE_TEXT)
    return workload


def test_load_for_workload_gives_windows_of_its_sequence_length(byte_lm, monkeypatch, tmp_path):
    (tmp_path / "input.txt").write_bytes(TEXT)
    monkeypatch.setitem(DATASETS, "tinyshakespeare", text_dataset("tinyshakespeare", {"input.txt": TEXT}))
    data = load_for_workload("bytelm", "tinyshakespeare", tmp_path, download=False)
    x_train, y_train, x_test, y_test = data
    assert x_train.shape == y_train.shape == ((193 - 1) // 16, 16)  # int(215 * 0.9) = 193 training bytes
    assert x_test.shape == ((22 - 1) // 16, 16) and data.classes == ()
    assert bytes(data.corpus.train) + bytes(data.corpus.valid) == TEXT
    assert bytes(x_train[0]) == TEXT[:16] and bytes(y_train[0]) == TEXT[1:17]
    assert reference_dataset("bytelm") == "pysrc"  # the one that needs no download
    with pytest.raises(UsageError, match="'tinyshakespeare' is byte-level text.*: train lstm, gpt, bytelm on it"):
        check_compatible("mlp", "tinyshakespeare")


def test_a_part_shorter_than_one_window_is_refused(byte_lm, monkeypatch, tmp_path):
    (tmp_path / "input.txt").write_bytes(TEXT[:100])  # 10 validation bytes < 16 + 1
    monkeypatch.setitem(DATASETS, "tinyshakespeare", text_dataset("tinyshakespeare", {"input.txt": TEXT[:100]}))
    with pytest.raises(UsageError, match="validation part of tinyshakespeare has 10 bytes, fewer than one window"):
        load_for_workload("bytelm", "tinyshakespeare", tmp_path, download=False)


def test_text_needs_a_sequence_length(tmp_path):
    with pytest.raises(ValueError, match=r"tinyshakespeare is text: pass shape=\(sequence length,\)"):
        load("tinyshakespeare", tmp_path, download=False)
    with pytest.raises(UsageError, match="mnist is not a text data set"):
        load_corpus("mnist", tmp_path, download=False)


def test_ptb_reads_train_and_valid_files(monkeypatch, tmp_path):
    blobs = {"ptb.train.txt": b" the cat sat \n", "ptb.valid.txt": b" a dog \n", "ptb.test.txt": b" unread \n"}
    for name, blob in blobs.items():
        (tmp_path / name).write_bytes(blob)
    corpus = load_corpus(text_dataset("ptb", blobs), tmp_path, download=False)
    assert bytes(corpus.train) == blobs["ptb.train.txt"] and bytes(corpus.valid) == blobs["ptb.valid.txt"]


def test_wikitext_reads_the_raw_members_and_checks_their_crc(tmp_path):
    blob = wikitext_zip_bytes(b" = Valkyria = \n" * 20, b" = Tower = \n", b" = Test = \n")
    (tmp_path / "wikitext-2-raw-v1.zip").write_bytes(blob)
    info = text_dataset("wikitext2", {"wikitext-2-raw-v1.zip": blob})
    corpus = load_corpus(info, tmp_path, download=False)
    assert bytes(corpus.train) == b" = Valkyria = \n" * 20 and bytes(corpus.valid) == b" = Tower = \n"
    # A damaged member, with the registry's digest made to match the damage: the CRC catches it.
    with zipfile.ZipFile(tmp_path / "wikitext-2-raw-v1.zip") as z:
        offset = z.getinfo("wikitext-2-raw/wiki.train.raw").header_offset + 30 + len("wikitext-2-raw/wiki.train.raw")
    flip_byte(tmp_path / "wikitext-2-raw-v1.zip", offset + 2)
    damaged = (tmp_path / "wikitext-2-raw-v1.zip").read_bytes()
    with pytest.raises(CorruptFileError, match="wikitext-2-raw-v1.zip is corrupt"):
        load_corpus(text_dataset("wikitext2", {"wikitext-2-raw-v1.zip": damaged}), tmp_path, download=False)


def test_wikitext_without_its_members_is_corrupt(tmp_path):
    with zipfile.ZipFile(tmp_path / "wikitext-2-raw-v1.zip", "w") as z:
        z.writestr("other.txt", b"x")
    blob = (tmp_path / "wikitext-2-raw-v1.zip").read_bytes()
    with pytest.raises(CorruptFileError, match="no member wikitext-2-raw/wiki.train.raw"):
        load_corpus(text_dataset("wikitext2", {"wikitext-2-raw-v1.zip": blob}), tmp_path, download=False)


def test_train_help_lists_the_text_sets():
    done = CliRunner().invoke(cli.app, ["train", "--help"], terminal_width=200)
    assert done.exit_code == 0
    for name in BYTE_TEXT:
        assert name in done.output
