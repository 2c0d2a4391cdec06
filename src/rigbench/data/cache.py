"""Where a data set's files live, and making sure they are there and intact.

The directory is `--data-dir` when given, else `cache_dir()/data/NAME`. A file that is
present is checked against its published digests once; the result is remembered in a
`<file>.verified` stamp (size, mtime, digests), so a 170 MB archive is not hashed again on
every run. Touching or replacing the file changes size or mtime and forces a fresh check.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from rigbench.data.download import fetch, part_path
from rigbench.data.errors import ChecksumError, DownloadError
from rigbench.data.hashing import file_digests, first_mismatch
from rigbench.data.registry import DatasetInfo, RemoteFile, get_dataset
from rigbench.errors import UsageError
from rigbench.paths import cache_dir

#: progress(filename, bytes_done, bytes_total_or_None) while downloading.
FileProgress = Callable[[str, int, int | None], None]

_STAMP_SUFFIX = ".verified"


def dataset_dir(dataset: DatasetInfo | str, data_dir: str | os.PathLike[str] | None = None) -> Path:
    """`data_dir` if given, else `cache_dir()/data/<name>` (RIGBENCH_CACHE_DIR moves it)."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    info = get_dataset(dataset) if isinstance(dataset, str) else dataset
    return cache_dir() / "data" / info.name


def ensure_files(dataset: DatasetInfo | str, data_dir: str | os.PathLike[str] | None = None,
                 download: bool = True, verify: bool = True,
                 progress: FileProgress | None = None) -> dict[str, Path]:
    """{role: path} of every file of `dataset`, present and (unless verify=False) checked.

    A present file with the wrong digest raises ChecksumError and is left alone. Missing
    files are downloaded when `download` is true; otherwise, or when the network fails, a
    UsageError lists each missing file, the directory it belongs in and its URLs. An image folder
    is checked as image_folder.check_image_folder says, and {} comes back. `pysrc` has
    no files to fetch: its stdlib sources are checked against the manifest (CorpusMismatchError),
    whatever `verify` says, and {} comes back.
    """
    info = get_dataset(dataset) if isinstance(dataset, str) else dataset
    if info.format == "image_folder":  # the user's files: nothing to fetch, their folder checked
        from rigbench.data.image_folder import check_image_folder

        check_image_folder(dataset_dir(info, data_dir), default=data_dir is None)
        return {}
    if info.format == "pysrc":  # nothing to fetch: check the stdlib (or data_dir) against the manifest
        from rigbench.data.pysrc import load_manifest, read_checked, stdlib_root

        read_checked(stdlib_root(data_dir), load_manifest())  # always: its digests are what pysrc is
        return {}
    directory = dataset_dir(info, data_dir)
    paths = {f.role: directory / f.filename for f in info.files}
    missing = [f for f in info.files if not paths[f.role].is_file()]
    for f in info.files:
        if f not in missing and verify:
            verify_file(paths[f.role], f)
    if missing and not download:
        raise UsageError(_missing_message(info, directory, missing, "not there, and downloading is off"))
    move = ("give --data-dir a folder you can write" if data_dir is not None
            else "set RIGBENCH_CACHE_DIR to a folder you can write (or give --data-dir)")
    if missing:
        _make_folder(directory, move)
    for i, f in enumerate(missing):
        try:
            _download(f, paths[f.role], progress)
        except DownloadError as error:
            raise UsageError(_missing_message(info, directory, missing[i:], error.reason)) from None
        except OSError as exc:  # not the network: a read-only folder, a full disk
            raise UsageError(f"cannot write {paths[f.role]} ({exc.strerror}): {move}") from None
        if verify:
            verify_file(paths[f.role], f)  # already checked by fetch: this writes the stamp
    return paths


def _make_folder(directory: Path, how_to_move: str) -> None:
    """Create the folder downloads go to; UsageError naming it and how to move it (a
    read-only home, a path through a file) instead of a traceback from deep in the download."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the data folder {directory} ({exc.strerror}): {how_to_move}") from None


def verify_file(path: Path, remote: RemoteFile) -> None:
    """Raise ChecksumError unless `path` has `remote`'s digests; remembered in a stamp."""
    expected = remote.digests
    if not expected:
        return
    stat = path.stat()
    if _read_stamp(path) == _stamp(stat, expected):
        return
    found = file_digests(path, tuple(expected))
    mismatch = first_mismatch(found, expected)
    if mismatch:
        algorithm, want, got = mismatch
        size = f" ({stat.st_size:,} bytes, published {remote.size:,})" if remote.size else ""
        raise ChecksumError(str(path), want, got, algorithm,
                            hint=f"it is damaged or a different version{size}: delete it and run again "
                                 f"to re-fetch it from {remote.urls[0]}")
    _write_stamp(path, _stamp(stat, expected))


def _download(remote: RemoteFile, dest: Path, progress: FileProgress | None) -> None:
    """Try each mirror in turn; the last failure is raised.

    A `.part` left by one mirror may be continued from another: the mirrors serve the
    same bytes, and the digests are checked before anything is kept. A mirror whose file
    has the wrong digest (a changed copy, a proxy's error page) is passed over like one that
    does not answer: it stopped the download before, the other mirrors untried.
    """
    callback = (lambda done, total: progress(remote.filename, done, total)) if progress else None
    last: DownloadError | ChecksumError | None = None
    for url in remote.urls:
        try:
            fetch(url, dest, md5=remote.md5, sha256=remote.sha256, progress=callback)
            return
        except (DownloadError, ChecksumError) as error:
            last = error
    assert last is not None
    raise last


def _missing_message(info: DatasetInfo, directory: Path, missing: list[RemoteFile], reason: str) -> str:
    """One line: what to fetch by hand, from where, and where to put it."""
    wanted = "; ".join(f"{f.filename} from {' or '.join(f.urls)}" for f in missing)
    return (f"cannot get the {info.name} data set ({reason}): put {wanted} into {directory}, "
            f"or pass --data-dir pointing at a folder that holds them (docs/DATASETS.md){_found_instead(info, directory)}")


def _found_instead(info: DatasetInfo, directory: Path) -> str:
    """What the folder holds instead, where it holds anything: the MNIST files unpacked, or
    CIFAR-10's python version, were reported as "not there" as if the folder were empty. A
    download's `.part` is said to be continued, not called a file rigbench does not read."""
    expected = {f.filename for f in info.files}
    parts = {part_path(directory / name).name for name in expected}
    try:
        files = sorted((p.name, p.stat().st_size) for p in directory.iterdir() if p.is_file())
    except OSError:
        return ""
    others = [name for name, _ in files if name not in expected | parts and not name.endswith(_STAMP_SUFFIX)]
    kept = [f"{name} ({size:,} bytes)" for name, size in files if name in parts]
    said = (f"; the partial download {', '.join(kept)} is kept: the next run without --offline continues it"
            if kept else "")
    if not others:
        return said
    shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
    return (f"{said}; the folder holds {shown} instead, which rigbench does not read: it reads the files named "
            "above exactly as published, checked against their digests")


def _stamp(stat: os.stat_result, expected: dict[str, str]) -> dict[str, object]:
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
            **{a: d.lower() for a, d in sorted(expected.items())}}


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + _STAMP_SUFFIX)


def _read_stamp(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(_stamp_path(path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_stamp(path: Path, stamp: dict[str, object]) -> None:
    """Best effort: a read-only data directory just means hashing again next time."""
    with contextlib.suppress(OSError):
        _stamp_path(path).write_text(json.dumps(stamp, sort_keys=True))
