"""File digests, computed in one streaming pass for every algorithm asked for."""

from __future__ import annotations

import hashlib
from pathlib import Path

_CHUNK = 1 << 20


def file_digests(path: Path, algorithms: tuple[str, ...] | list[str]) -> dict[str, str]:
    """{algorithm: hex digest} of the file at `path`, reading it once."""
    hashers = {a: hashlib.new(a) for a in algorithms}
    if not hashers:
        return {}
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            for h in hashers.values():
                h.update(chunk)
    return {a: h.hexdigest() for a, h in hashers.items()}


def first_mismatch(found: dict[str, str], expected: dict[str, str]) -> tuple[str, str, str] | None:
    """(algorithm, expected, found) for the first digest that differs, or None if all match."""
    for algorithm, want in expected.items():
        got = found.get(algorithm)
        if got is None or got.lower() != want.lower():
            return algorithm, want, got or "unknown"
    return None
