"""Readers of the downloaded text corpora: each file's bytes as they are, no decoding.

The files were checked against their published digests (cache.ensure_files) before these run;
what is checked here is the format: the archive opens, the members exist, and zipfile checks
each member's CRC-32 as it reads it.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

from rigbench.data.errors import CorruptFileError
from rigbench.data.registry import DatasetInfo
from rigbench.data.text import ByteCorpus, as_bytes, split_tail

#: A corpus that is one file (TinyShakespeare) keeps its last 10% for validation, as nanoGPT does.
VALID_FRACTION = 0.1

#: WikiText-2 (raw): the members of wikitext-2-raw-v1.zip read for training and validation.
#: wiki.test.raw stays unread: it is the held-out test set, for no choice to be tuned on.
WIKITEXT_MEMBERS = {"train": "wikitext-2-raw/wiki.train.raw", "valid": "wikitext-2-raw/wiki.valid.raw"}


def load_text_corpus(info: DatasetInfo, paths: dict[str, Path]) -> ByteCorpus:
    """The training and validation bytes of a downloaded text data set, by its format."""
    if info.format == "text_split":
        train, valid = split_tail(as_bytes(_read(paths["text"])), VALID_FRACTION)
        return ByteCorpus(info.name, train, valid)
    if info.format == "text_files":  # one file per split (PTB); the test file is not read
        return ByteCorpus(info.name, as_bytes(_read(paths["train_text"])), as_bytes(_read(paths["valid_text"])))
    if info.format == "wikitext_zip":
        parts = _read_members(paths["archive"], WIKITEXT_MEMBERS)
        return ByteCorpus(info.name, as_bytes(parts["train"]), as_bytes(parts["valid"]))
    raise ValueError(f"no text reader for format {info.format!r} of {info.name}")


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    if not data:
        raise CorruptFileError(str(path), "empty file")
    return data


def _read_members(archive: Path, members: dict[str, str]) -> dict[str, bytes]:
    """{key: bytes of member} from a zip, straight from the archive (nothing is extracted)."""
    try:
        with zipfile.ZipFile(archive) as z:
            names = set(z.namelist())
            missing = [m for m in members.values() if m not in names]
            if missing:
                raise CorruptFileError(str(archive), f"no member {', '.join(missing)}")
            return {key: z.read(member) for key, member in members.items()}
    except (zipfile.BadZipFile, zlib.error, EOFError) as error:  # BadZipFile: also a bad CRC-32
        raise CorruptFileError(str(archive), str(error) or type(error).__name__) from None
