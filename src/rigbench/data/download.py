"""Resumable, checksum-verified downloads with urllib (no third-party HTTP client).

The bytes go to `<dest>.part`. When a `.part` exists, we ask for the rest with a `Range`
header and append if the server answers 206 (Partial Content); a plain 200 means the server
ignores ranges, so we start again from zero. Only a file whose digests match is renamed
into place, so `dest` never holds a partial or wrong file.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from rigbench.data.errors import ChecksumError, DownloadError
from rigbench.data.hashing import file_digests, first_mismatch

#: progress(bytes_done, bytes_total_or_None), called after each chunk.
Progress = Callable[[int, int | None], None]

_CHUNK = 1 << 20
_USER_AGENT = "rigbench-data/0.1 (urllib)"
_CONTENT_RANGE = re.compile(r"bytes (\d+)-\d+/(\d+|\*)")
# Network failures that leave the .part in place for a later resume. Other OSErrors
# (a full disk, no permission) are not network problems and propagate as they are.
_NETWORK_ERRORS = (urllib.error.URLError, http.client.HTTPException, TimeoutError, ConnectionError)


def part_path(dest: Path) -> Path:
    """Where the download of `dest` accumulates until it is verified."""
    return dest.with_name(dest.name + ".part")


def fetch(url: str, dest: str | os.PathLike[str], md5: str | None = None, sha256: str | None = None,
          progress: Progress | None = None, timeout: float = 30.0) -> Path:
    """Download `url` to `dest`, resuming a `.part` left by an earlier try; return `dest`.

    The digests given are checked before the file is renamed into place. A mismatch
    raises ChecksumError and leaves no `dest` (and no `.part`: its bytes are known bad).
    A network failure raises DownloadError (a UsageError) and keeps the `.part`.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = part_path(dest)
    expected = {a: d for a, d in (("md5", md5), ("sha256", sha256)) if d}
    resumed = _download(url, dest, part, progress, timeout)
    mismatch = first_mismatch(file_digests(part, tuple(expected)), expected)
    if mismatch and resumed:
        # The kept prefix may come from another version of the file: one clean retry.
        part.unlink()
        _download(url, dest, part, progress, timeout)
        mismatch = first_mismatch(file_digests(part, tuple(expected)), expected)
    if mismatch:
        received = part.stat().st_size  # an error page is a few hundred bytes: the size tells
        part.unlink()
        algorithm, want, got = mismatch
        raise ChecksumError(str(dest), want, got, algorithm,
                            hint=f"the download from {url} ({received:,} bytes) is not the published file; nothing "
                                 "was saved: run again, and if it fails the same way, fetch the file by hand from "
                                 "another source and put it there (docs/DATASETS.md, Fetching by hand)")
    os.replace(part, dest)
    return dest


def _download(url: str, dest: Path, part: Path, progress: Progress | None, timeout: float) -> bool:
    """Fill `part` with the whole body of `url`; True when it appended to an earlier `.part`."""
    offset = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": _USER_AGENT}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        request = urllib.request.Request(url, headers=headers)
        with contextlib.closing(urllib.request.urlopen(request, timeout=timeout)) as response:
            start, total = _start_and_total(response, offset)
            if start is None:
                if not offset:
                    raise DownloadError(url, str(dest), "server sent a byte range nobody asked for")
                # A byte range we did not ask for cannot be appended: start over from zero.
                part.unlink()
                return _download(url, dest, part, progress, timeout)
            with open(part, "ab" if start else "wb") as out:
                _copy(response, out, start, total, progress)
            return bool(start)
    except urllib.error.HTTPError as error:
        if error.code == 416 and offset:
            # Range Not Satisfiable: the .part already holds every byte (or more). Let the
            # checksum decide; a bad one triggers the caller's clean retry.
            return True
        raise DownloadError(url, str(dest), f"HTTP {error.code} {error.reason}") from None
    except _NETWORK_ERRORS as error:
        raise DownloadError(url, str(dest), _reason(error)) from None


def _start_and_total(response: http.client.HTTPResponse, offset: int) -> tuple[int | None, int | None]:
    """(where the body starts in the file, the file's full size); start None: unusable range."""
    if response.status == 206:
        match = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
        if not match or int(match.group(1)) != offset:
            return None, None
        whole = match.group(2)
        return offset, int(whole) if whole != "*" else None
    length = response.headers.get("Content-Length")
    return 0, int(length) if length and length.isdigit() else None


def _copy(response, out, done: int, total: int | None, progress: Progress | None) -> None:
    if progress is not None:  # before the first byte: a slow server is seen to be slow, not silent
        progress(done, total)
    # read1: whatever has arrived, up to a chunk; read(_CHUNK) waited for a whole MiB between
    # two calls of `progress` (50 s at 20 KB/s)
    while chunk := response.read1(_CHUNK):
        out.write(chunk)
        done += len(chunk)
        if progress is not None:
            progress(done, total)
    if total is not None and done < total:
        # The connection closed early without an exception: keep what we have, resume later.
        raise http.client.IncompleteRead(b"", total - done)


def _reason(error: BaseException) -> str:
    if isinstance(error, urllib.error.URLError):
        return str(error.reason)
    if isinstance(error, http.client.IncompleteRead):
        return "connection closed before the end of the file"
    return str(error) or type(error).__name__
