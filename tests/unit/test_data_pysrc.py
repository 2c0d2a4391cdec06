"""pysrc: the shipped manifest, checking a stdlib against it, the fixed split.

Checks run against fake stdlib folders made here (passed as data_dir); the real stdlib is only
read, in the one test that the shipped manifest matches this interpreter.
"""

import hashlib
import json
import sys

import pytest

from rigbench.data import CorpusMismatchError, ensure_files, load_corpus
from rigbench.data.pysrc import load_manifest, load_pysrc, read_checked, stdlib_root


def _fake_stdlib(tmp_path, n=23):
    """A stdlib folder of n small files and a manifest for it (every 10th file validation)."""
    root = tmp_path / "Lib"
    files = []
    for i in range(n):
        rel = f"pkg{i % 3}/mod{i:02d}.py"
        data = f"# module {i}\ndef f{i}():\n    return {i}\n".encode()
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        files.append({"path": rel, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data),
                      "split": "valid" if (i + 1) % 10 == 0 else "train"})
    manifest = tmp_path / "pysrc.json"
    made_from = [{"implementation": "CPython", "version": "3.11.7", "stdlib": "/x"}]
    manifest.write_text(json.dumps({"name": "pysrc", "revision": 1, "made_from": made_from, "files": files}))
    return root, load_manifest(manifest), files


def test_fake_stdlib_loads_in_manifest_order_split_by_file(tmp_path):
    root, manifest, files = _fake_stdlib(tmp_path)
    corpus = load_pysrc(root, manifest)
    train = b"".join((root / f["path"]).read_bytes() for f in files if f["split"] == "train")
    valid = b"".join((root / f["path"]).read_bytes() for f in files if f["split"] == "valid")
    assert bytes(corpus.train) == train and bytes(corpus.valid) == valid
    assert [f["path"] for f in files if f["split"] == "valid"] == ["pkg0/mod09.py", "pkg1/mod19.py"]
    again = load_pysrc(root, manifest)
    assert bytes(again.train) == train and bytes(again.valid) == valid  # the same bytes every time


def test_a_tampered_file_is_refused_by_name(tmp_path):
    root, manifest, _ = _fake_stdlib(tmp_path)
    (root / "pkg1/mod04.py").write_bytes(b"# patched by a distribution\n")
    with pytest.raises(CorpusMismatchError) as caught:
        load_pysrc(root, manifest)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"pysrc: 1 of 23 files under {root} are not the ones its manifest pins "
                              "(made from CPython 3.11.7): pkg1/mod04.py (changed); ")
    assert "nothing was loaded" in message and "--data-dir" in message and "--dataset" in message
    assert caught.value.differ == [("pkg1/mod04.py", "changed")]


def test_a_file_of_the_same_size_but_other_bytes_is_refused(tmp_path):
    root, manifest, _ = _fake_stdlib(tmp_path)
    data = bytearray((root / "pkg0/mod00.py").read_bytes())
    data[2] ^= 0x20  # same size: only the digest tells
    (root / "pkg0/mod00.py").write_bytes(bytes(data))
    with pytest.raises(CorpusMismatchError, match=r"pkg0/mod00.py \(changed\)"):
        read_checked(root, manifest)


def test_many_missing_files_are_counted_and_the_first_named(tmp_path):
    root, manifest, files = _fake_stdlib(tmp_path)
    for f in files[:8]:
        (root / f["path"]).unlink()
    with pytest.raises(CorpusMismatchError) as caught:
        load_pysrc(root, manifest)
    assert "8 of 23 files" in str(caught.value) and "pkg0/mod00.py (missing)" in str(caught.value)
    assert "and 3 more" in str(caught.value) and len(caught.value.differ) == 8


def test_ensure_files_checks_pysrc_against_the_shipped_manifest(tmp_path):
    total = len(load_manifest().files)
    with pytest.raises(CorpusMismatchError, match=f"pysrc: {total} of {total} files under {tmp_path} "):
        ensure_files("pysrc", tmp_path)  # what `rigbench train` checks in the parent
    with pytest.raises(CorpusMismatchError):
        load_corpus("pysrc", tmp_path, verify=False)  # the manifest is checked whatever verify says


def test_shipped_manifest_facts():
    manifest = load_manifest()  # from the package data
    paths = [f.path for f in manifest.files]
    assert paths == sorted(paths) and len(set(paths)) == len(paths) == 134
    assert {p.split("/")[0] for p in paths}.isdisjoint({"test", "tests", "idlelib", "tkinter", "lib2to3"})
    assert all(len(f.sha256) == 64 and f.size > 0 and p.endswith(".py") for f, p in zip(manifest.files, paths))
    assert [f.split == "valid" for f in manifest.files] == [(i + 1) % 10 == 0 for i in range(len(paths))]
    assert manifest.made_from == ("CPython 3.11.7", "CPython 3.11.2", "CPython 3.12.1", "CPython 3.13.0")
    assert (manifest.bytes_in("train"), manifest.bytes_in("valid")) == (631_627, 58_698)


def test_shipped_manifest_matches_this_interpreter():
    minors = {".".join(v.split()[1].split(".")[:2]) for v in load_manifest().made_from}
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if sys.implementation.name != "cpython" or here not in minors:
        pytest.skip(f"the manifest was made from CPython {', '.join(sorted(minors))}, not this Python {here}")
    corpus = load_corpus("pysrc")  # reads (never writes) this interpreter's stdlib
    assert (len(corpus.train), len(corpus.valid)) == (631_627, 58_698)
    assert stdlib_root().is_dir() and stdlib_root("/elsewhere/Lib").as_posix() == "/elsewhere/Lib"
