"""Regenerate the `pysrc` manifest: which standard-library sources make the corpus, by SHA-256.

The corpus must be the same bytes on every machine, so a file is kept only when it is
byte-identical in the standard library of EVERY interpreter given with --python. The shipped
manifest was made from four CPython builds on the dev VM (pyenv 3.11.7, 3.12.1, 3.13.0 and
Debian's patched 3.11.2), which also keeps out the files a distribution patches and the ones
each bug-fix release touches. docs/DATASETS.md describes the result.

The rule, applied to the first interpreter's `sysconfig.get_paths()["stdlib"]`:
- non-empty `.py` files, found by walking the folder (symlinks not followed);
- not under a folder that is optional or packaged apart by installers and distributions
  (test, tests, idlelib, tkinter, turtledemo, lib2to3, distutils, ensurepip, venv,
  site-packages, dist-packages, __phello__) nor a build's own (config-*, __pycache__), and no
  `_sysconfigdata*` file (written by the build);
- not a character-mapping codec (its first line says "Character Mapping Codec"): tables of
  code points, mostly generated, not Python as people write it, and trivially predictable;
- byte-identical in every other interpreter's stdlib;
- in path order; every 10th file (the 10th, 20th, ...) is validation, the rest training.

Usage (from the repository root):
    python benchmarks/make_pysrc_manifest.py --python python3.11 --python /usr/bin/python3.11 \\
        --python python3.12 --python python3.13 [-o src/rigbench/data/manifests/pysrc.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

EXCLUDED_DIRS = frozenset({"test", "tests", "idlelib", "tkinter", "turtledemo", "lib2to3", "distutils",
                           "ensurepip", "venv", "site-packages", "dist-packages", "__phello__", "__pycache__"})
VALIDATION_EVERY = 10
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "src" / "rigbench" / "data" / "manifests" / "pysrc.json"
_PROBE = ("import json, platform, sysconfig; print(json.dumps({'implementation': platform.python_implementation(), "
          "'version': platform.python_version(), 'stdlib': sysconfig.get_paths()['stdlib']}))")


def interpreter(executable: str) -> dict[str, str]:
    """{implementation, version, stdlib} of the interpreter at `executable`."""
    out = subprocess.run([executable, "-c", _PROBE], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def candidates(root: Path) -> list[str]:
    """Relative POSIX paths of the .py files the rule admits, sorted."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in EXCLUDED_DIRS and not d.startswith("config-")]
        for name in files:
            path = Path(folder) / name
            if not name.endswith(".py") or name.startswith("_sysconfigdata") or path.stat().st_size == 0:
                continue
            with open(path, "rb") as f:
                if b"Character Mapping Codec" in f.readline():
                    continue
            found.append(path.relative_to(root).as_posix())
    return sorted(found)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build(executables: list[str]) -> dict[str, object]:
    pythons = [interpreter(e) for e in executables]
    roots = [Path(p["stdlib"]) for p in pythons]
    entries = []
    for rel in candidates(roots[0]):
        digest = sha256(roots[0] / rel)
        if all((r / rel).is_file() and sha256(r / rel) == digest for r in roots[1:]):
            entries.append({"path": rel, "sha256": digest, "size": (roots[0] / rel).stat().st_size})
    for i, entry in enumerate(entries, start=1):
        entry["split"] = "valid" if i % VALIDATION_EVERY == 0 else "train"
    return {
        "name": "pysrc",
        "revision": 1,
        "made_from": pythons,
        "rule": "benchmarks/make_pysrc_manifest.py: non-empty .py files identical in every made_from stdlib, without "
                "tests, optional or separately packaged folders, build files and character-mapping codec tables; path order; "
                f"every {VALIDATION_EVERY}th file is validation",
        "files": entries,
    }


def render(manifest: dict[str, object]) -> str:
    """Indented JSON with one line per file, so a regenerated manifest diffs file by file."""
    head = {k: v for k, v in manifest.items() if k != "files"}
    files = manifest["files"]
    assert isinstance(files, list)
    lines = ",\n".join("  " + json.dumps(f) for f in files)
    return json.dumps(head, indent=1)[:-2] + ',\n "files": [\n' + lines + "\n ]\n}\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", required=True,
                        help="an interpreter whose stdlib must hold the same bytes (repeat; the first is walked)")
    parser.add_argument("-o", "--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    manifest = build(args.python)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(manifest))
    files = manifest["files"]
    assert isinstance(files, list)
    train = sum(f["size"] for f in files if f["split"] == "train")
    valid = sum(f["size"] for f in files if f["split"] == "valid")
    print(f"{args.out}: {len(files)} files, {train:,} training bytes, {valid:,} validation bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
