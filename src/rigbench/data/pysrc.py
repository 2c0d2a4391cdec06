"""`pysrc`: Python standard-library sources as a byte-level corpus that needs no download.

The corpus is defined by a manifest shipped with rigbench (`manifests/pysrc.json`): relative
paths, SHA-256 digests and sizes of the chosen `.py` files, and which are validation. It was
made by benchmarks/make_pysrc_manifest.py from files that are byte-identical in every CPython
it names (3.11, 3.12 and 3.13, one of them Debian's patched build), so it is the same corpus
on any of them. The bytes are read from the running interpreter's stdlib, or from `data_dir`
(for example the `Lib/` folder of a CPython source release).

Every file is checked on every load (0.7 MB: milliseconds). Where any file is missing or
different, nothing is loaded: CorpusMismatchError lists them. Training on what happens to be
there would be another corpus under the same name, and its losses would be compared with
runs on the real one.
"""

from __future__ import annotations

import hashlib
import json
import os
import sysconfig
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from rigbench.data.errors import CorpusMismatchError
from rigbench.data.text import ByteCorpus, as_bytes

NAME = "pysrc"
_MANIFEST = "pysrc.json"  # in the rigbench.data.manifests package data


@dataclass(frozen=True)
class ManifestFile:
    path: str  # relative to the stdlib folder, "/"-separated
    sha256: str
    size: int
    split: str  # train | valid


@dataclass(frozen=True)
class Manifest:
    revision: int
    made_from: tuple[str, ...]  # "CPython 3.11.7", ...: the interpreters whose stdlib all hold these bytes
    files: tuple[ManifestFile, ...]

    def bytes_in(self, split: str) -> int:
        return sum(f.size for f in self.files if f.split == split)


def load_manifest(path: str | os.PathLike[str] | None = None) -> Manifest:
    """The shipped manifest, or the one at `path` (tests, a regenerated one)."""
    if path is None:
        text = resources.files("rigbench.data").joinpath("manifests", _MANIFEST).read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    raw = json.loads(text)
    files = tuple(ManifestFile(f["path"], f["sha256"], int(f["size"]), f["split"]) for f in raw["files"])
    bad = [f.path for f in files if f.split not in ("train", "valid")]
    if bad or not files:
        raise ValueError(f"pysrc manifest: no files, or a split other than train/valid: {bad[:3]}")
    made_from = tuple(f"{p['implementation']} {p['version']}" for p in raw["made_from"])
    return Manifest(int(raw["revision"]), made_from, files)


def stdlib_root(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where the sources are read: `data_dir` if given, else this interpreter's stdlib folder."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    return Path(sysconfig.get_paths()["stdlib"])


def read_checked(root: Path, manifest: Manifest) -> dict[str, bytes]:
    """{relative path: bytes} of every manifest file under `root`, each checked against its digest.

    Raises CorpusMismatchError naming every file that is missing or different.
    """
    contents: dict[str, bytes] = {}
    differ: list[tuple[str, str]] = []
    for f in manifest.files:
        try:
            data = (root / f.path).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            differ.append((f.path, "missing"))
            continue
        if len(data) != f.size or hashlib.sha256(data).hexdigest() != f.sha256:
            differ.append((f.path, "changed"))
            continue
        contents[f.path] = data
    if differ:
        made_from = ", ".join(manifest.made_from)
        raise CorpusMismatchError(
            NAME, str(root), differ, len(manifest.files), made_from,
            advice="this is not the pinned corpus, so nothing was loaded: run under one of those Pythons, pass "
                   "--data-dir pointing at the Lib folder of one of their source releases, or choose another "
                   "--dataset (docs/DATASETS.md, pysrc)")
    return contents


def load_pysrc(data_dir: str | os.PathLike[str] | None = None, manifest: Manifest | None = None) -> ByteCorpus:
    """The pysrc corpus: the manifest's files, checked, concatenated in manifest order per split."""
    manifest = manifest or load_manifest()
    contents = read_checked(stdlib_root(data_dir), manifest)
    parts = {split: b"".join(contents[f.path] for f in manifest.files if f.split == split)
             for split in ("train", "valid")}
    return ByteCorpus(NAME, as_bytes(parts["train"]), as_bytes(parts["valid"]))
