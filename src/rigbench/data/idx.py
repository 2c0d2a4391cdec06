"""The IDX format of MNIST and Fashion-MNIST, read with numpy (gzip or raw).

An IDX file is a 4-byte magic number (two zero bytes, a type code, the number of
dimensions), one big-endian uint32 per dimension, then the values. Only unsigned bytes
(type 0x08) occur here: 0x00000803 for images [N, rows, cols], 0x00000801 for labels [N].
Every size is checked, so a truncated download says which file is bad instead of failing
in a numpy reshape.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

import numpy as np

from rigbench.data.errors import CorruptFileError

IMAGES_MAGIC = 0x00000803
LABELS_MAGIC = 0x00000801
_GZIP_MAGIC = b"\x1f\x8b"


def read_idx(path: str | Path, magic: int) -> np.ndarray:
    """The uint8 array in the IDX file at `path`, which must carry `magic`."""
    path = Path(path)
    raw = _read_bytes(path)
    if len(raw) < 4:
        raise CorruptFileError(str(path), f"{len(raw)} bytes, too short for an IDX header")
    (found,) = struct.unpack(">I", raw[:4])
    if found != magic:
        raise CorruptFileError(str(path), f"IDX magic number 0x{found:08x}, expected 0x{magic:08x}")
    ndim = magic & 0xFF
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise CorruptFileError(str(path), "the IDX header is cut short")
    dims = struct.unpack(f">{ndim}I", raw[4:header])
    expected = header + int(np.prod(dims, dtype=np.int64))
    if len(raw) != expected:
        shape = "x".join(map(str, dims))
        raise CorruptFileError(str(path), f"{len(raw):,} bytes, a {shape} IDX file has {expected:,}")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def load_idx_pair(images_path: str | Path, labels_path: str | Path,
                  num_classes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(images uint8 [N,1,H,W], labels int64 [N]) from an images file and its labels file."""
    images = read_idx(images_path, IMAGES_MAGIC)
    labels = read_idx(labels_path, LABELS_MAGIC)
    if len(images) != len(labels):
        raise CorruptFileError(str(labels_path), f"{len(labels):,} labels for {len(images):,} images "
                                                 f"in {Path(images_path).name}")
    if num_classes is not None and labels.size and int(labels.max()) >= num_classes:
        raise CorruptFileError(str(labels_path), f"label {int(labels.max())} in a {num_classes}-class data set")
    # A copy: frombuffer arrays are read-only views of the decompressed bytes.
    return images[:, None, :, :].copy(), labels.astype(np.int64)


def _read_bytes(path: Path) -> bytes:
    """The file's content, gunzipped when it starts with the gzip magic (whatever its name)."""
    with open(path, "rb") as f:
        raw = f.read()
    if not raw.startswith(_GZIP_MAGIC):
        return raw
    try:
        return gzip.decompress(raw)
    except EOFError:
        raise CorruptFileError(str(path), "the gzip stream ends early") from None
    except (gzip.BadGzipFile, zlib.error) as error:
        raise CorruptFileError(str(path), f"bad gzip data: {error}") from None
