"""rigbench as a user installs it: what pyproject.toml declares, and the wheel built from it."""

from __future__ import annotations

import email
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import rigbench

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "src" / "rigbench"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def source_files() -> set[str]:
    """Every file of the package in the tree, as a wheel names it (rigbench/...), caches left out."""
    return {f"rigbench/{p.relative_to(PACKAGE).as_posix()}" for p in PACKAGE.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def test_every_data_file_is_package_data():
    """A file the code reads at run time (importlib.resources, the migrations' folder, jinja2's
    PackageLoader) is in the wheel only if a package-data glob names it: one left out works from
    the source tree and fails only once installed."""
    patterns = PYPROJECT["tool"]["setuptools"]["package-data"]["rigbench"]
    covered = {f"rigbench/{p.relative_to(PACKAGE).as_posix()}" for pattern in patterns for p in PACKAGE.glob(pattern)}
    data = {name for name in source_files() if not name.endswith(".py")}
    assert data - covered == set()
    assert [p for p in patterns if not list(PACKAGE.glob(p))] == []  # a stale pattern hides a moved file


def test_the_build_backend_floor_reads_the_license_field():
    """`license = "Apache-2.0"` (an SPDX expression, PEP 639) is refused by setuptools before 77
    ("project.license must be valid exactly by one definition"), so the build must ask for 77."""
    assert isinstance(PYPROJECT["project"]["license"], str)
    setuptools = next(Requirement(r) for r in PYPROJECT["build-system"]["requires"]
                      if Requirement(r).name == "setuptools")
    assert not setuptools.specifier.contains("76.1.0") and setuptools.specifier.contains("77.0.3")


@pytest.mark.slow
def test_the_wheel_holds_the_package_and_nothing_else(tmp_path):
    """The wheel pip builds (offline: no isolation, the test environment's setuptools) holds every
    file of src/rigbench, no cache, no test, and the metadata a user's pip and shell read."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, tree / name)
    shutil.copytree(PACKAGE, tree / "src" / "rigbench", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path / "dist"), str(tree)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (wheel,) = (tmp_path / "dist").glob("rigbench-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        info = f"rigbench-{rigbench.__version__}.dist-info"
        metadata = email.message_from_bytes(zf.read(f"{info}/METADATA"))
        entry_points = zf.read(f"{info}/entry_points.txt").decode()
    assert {n for n in names if not n.startswith(f"{info}/")} == source_files()
    assert f"{info}/licenses/LICENSE" in names
    assert metadata["Version"] == rigbench.__version__
    assert "rigbench = rigbench.cli:main" in entry_points


def test_the_version_is_stated_once():
    """pyproject reads rigbench.__version__: a second literal there would let `pip show rigbench`
    and `rigbench --version` (and every bundle and report) disagree after a bump."""
    assert "version" not in PYPROJECT["project"] and "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "rigbench.__version__"}


#: Where each TensorFlow 2.21 distribution publishes wheels (pypi.org, 2.21.0's files): (sys_platform,
#: platform_machine). tensorflow-cpu alone made `rigbench[tensorflow]` and `rigbench[all]`
#: uninstallable on macOS and Linux aarch64 ("No matching distribution found").
TENSORFLOW_WHEELS = {
    "tensorflow-cpu": {("linux", "x86_64"), ("win32", "AMD64")},
    "tensorflow": {("linux", "x86_64"), ("linux", "aarch64"), ("darwin", "arm64"), ("win32", "AMD64")},
}


@pytest.mark.parametrize("platform", sorted(set().union(*TENSORFLOW_WHEELS.values())))
def test_the_tensorflow_extra_names_one_installable_tensorflow_per_platform(platform):
    sys_platform, machine = platform
    env = {"sys_platform": sys_platform, "platform_machine": machine}
    chosen = [req.name for req in map(Requirement, PYPROJECT["project"]["optional-dependencies"]["tensorflow"])
              if req.name in TENSORFLOW_WHEELS and (req.marker is None or req.marker.evaluate(env))]
    assert len(chosen) == 1 and platform in TENSORFLOW_WHEELS[chosen[0]], chosen
