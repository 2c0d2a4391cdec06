"""Byte-level text for language models: the corpus, its training windows, its unigram baseline.

Every text data set is read as raw bytes, so the vocabulary is the 256 byte values for all of
them: no tokenizer to ship, pin or disagree about, and bits per byte compare across corpora.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rigbench.workloads import BYTE_VOCAB  # token ids of a byte-level model: one per byte value


@dataclass(frozen=True)
class ByteCorpus:
    """A text data set as two uint8 byte streams (token ids 0..255), training and validation."""

    name: str
    train: np.ndarray  # uint8 [n_train_bytes]
    valid: np.ndarray  # uint8 [n_valid_bytes]

    def __post_init__(self) -> None:
        for part in (self.train, self.valid):
            if part.dtype != np.uint8 or part.ndim != 1:
                raise ValueError(f"{self.name}: a byte stream is uint8 [n], got {part.dtype} {part.shape}")


def as_bytes(data: bytes) -> np.ndarray:
    """`data` as a writable uint8 array (np.frombuffer on bytes would be read-only)."""
    return np.frombuffer(bytearray(data), dtype=np.uint8)


def next_byte_windows(stream: np.ndarray, seq_len: int) -> tuple[np.ndarray, np.ndarray]:
    """(inputs, targets), both uint8 [N, seq_len]: non-overlapping windows of `stream` and the
    same windows shifted by one byte, the next-byte targets.

    Window i is stream[i*T : (i+1)*T] and its targets stream[i*T+1 : (i+1)*T+1], so every byte
    but the first is a target exactly once and N = (len - 1) // T; the last (len - 1) % T bytes
    are dropped. Both are views of `stream` (no copy). They stay uint8: the framework casts them
    to its index type on the device, as it scales images there.
    """
    n = window_count(len(stream), seq_len)
    inputs = stream[: n * seq_len].reshape(n, seq_len)
    targets = stream[1 : n * seq_len + 1].reshape(n, seq_len)
    return inputs, targets


def window_count(n_bytes: int, seq_len: int) -> int:
    """How many next-byte windows of `seq_len` a stream of `n_bytes` gives: (n - 1) // T."""
    if seq_len < 1:
        raise ValueError(f"seq_len must be at least 1, got {seq_len}")
    return max(0, (n_bytes - 1) // seq_len)


def split_tail(stream: np.ndarray, valid_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """(train, valid): the first bytes and the last `valid_fraction` of them, for a corpus that is
    one file."""
    cut = tail_cut(len(stream), valid_fraction)
    return stream[:cut], stream[cut:]


def tail_cut(n_bytes: int, valid_fraction: float) -> int:
    """Where split_tail cuts `n_bytes`: int(n * (1 - fraction)), as nanoGPT cuts TinyShakespeare at 90%."""
    if not 0.0 < valid_fraction < 1.0:
        raise ValueError(f"valid_fraction must be in (0, 1), got {valid_fraction}")
    return int(n_bytes * (1.0 - valid_fraction))


@dataclass(frozen=True)
class UnigramBaseline:
    """The entropy of the byte frequencies: the loss of a model that ignores all context.

    A language model whose validation loss is not below `nats` has learnt nothing a byte
    histogram does not know. Perplexity is exp(nats); bits per byte is nats / ln 2.
    """

    nats: float
    bits: float

    @property
    def perplexity(self) -> float:
        return math.exp(self.nats)


def unigram_entropy(stream: np.ndarray) -> UnigramBaseline:
    """Entropy of the byte distribution of `stream` (normally the training bytes), in nats and
    in bits per byte: -sum p log p over the byte values that occur."""
    if len(stream) == 0:
        raise ValueError("the entropy of an empty byte stream is undefined")
    counts = np.bincount(np.asarray(stream, dtype=np.uint8), minlength=BYTE_VOCAB)
    p = counts[counts > 0] / len(stream)
    nats = float(-(p * np.log(p)).sum())
    return UnigramBaseline(nats=nats, bits=nats / math.log(2.0))
