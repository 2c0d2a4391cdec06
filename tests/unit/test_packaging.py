"""rigbench as a user installs it: what pyproject.toml declares, and the wheel built from it."""

from __future__ import annotations

import ast
import email
import re
import shutil
import subprocess
import sys
import tomllib
import typing
import zipfile
from collections.abc import Callable, Iterator
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

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


def _extra_names() -> set[str]:
    return set(PYPROJECT["project"]["optional-dependencies"])


def _requirement_names(*groups: str) -> set[str]:
    extras = PYPROJECT["project"]["optional-dependencies"]
    lists = [PYPROJECT["project"]["dependencies"]] + [extras[g] for g in groups]
    return {canonicalize_name(Requirement(r).name) for reqs in lists for r in reqs} - {"rigbench"}


def test_every_install_hint_names_a_declared_extra():
    """An error's `pip install 'rigbench[x]'`, and every one in the docs, must name an extra that
    exists: pip only warns about an unknown extra, and installs nothing for it."""
    from rigbench.frameworks import FRAMEWORKS

    texts = [p.read_text(encoding="utf-8") for p in [*PACKAGE.rglob("*.py"), ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]]
    named = {name for text in texts for group in re.findall(r"""(?:rigbench|["']\.)\[([a-z0-9_,-]+)\]""", text)
             for name in group.split(",")}
    named |= {name for _, _, extras in FRAMEWORKS.values() for name in extras.split(",")}
    assert {"report", "data", "postgres", "torch", "jax"} <= named  # the search finds the hints
    assert named - _extra_names() == set()


#: Modules src imports that no declared requirement names, each with why that is right.
UNDECLARED_IMPORTS = {
    "jaxlib": "installed by jax (the jax extra), imported only after jax",
    "markupsafe": "installed by jinja2 (the report extra) and by alembic's Mako",
    "torch_directml": "Windows DirectML's torch plugin: the user's GPU stack, not a rigbench extra",
    "amdsmi": "ships with AMD's ROCm, not on PyPI",
}


def test_every_third_party_import_is_a_declared_requirement():
    """A module src imports comes from a dependency or an extra: one that only the developer's
    environment happens to have fails on a user's machine."""
    found = packages_distributions()
    imported = {alias.name.split(".")[0] if isinstance(node, ast.Import) else (node.module or "").split(".")[0]
                for path in PACKAGE.rglob("*.py") for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0)
                for alias in node.names}
    third_party = imported - set(sys.stdlib_module_names) - {"rigbench", "__future__"} - set(UNDECLARED_IMPORTS)
    declared = _requirement_names(*_extra_names())
    undeclared = {m for m in third_party if not {canonicalize_name(d) for d in found.get(m, [])} & declared}
    assert undeclared == set()


BLOCK_EXTRAS = """
import importlib.abc, sys
BLOCKED = {blocked!r}
class BlockExtras(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, BlockExtras())
sys.argv[0] = "rigbench"
from rigbench.cli import main
main()
"""

#: A user's first commands with the core dependencies alone: (arguments, exit code, what it says).
CORE_ONLY = [
    (["--help"], 0, "rigbench run --quick"),
    (["workloads"], 0, "mlp"),
    (["run", "--quick", "--db", "{db}"], 2, "pip install 'rigbench[torch]'"),
    (["report", "--db", "{db}", "--out", "{tmp}/r.html"], 2, "pip install 'rigbench[report]'"),
    (["results", "list", "--db", "{db}"], 2, "does not exist"),
]


@pytest.mark.slow
def test_the_core_alone_answers_each_first_command(tmp_path):
    """Installed without any extra (no framework, no report, no data, no NVML), the first commands
    work or end in one line naming the extra to install: exit 2, no traceback."""
    user_extras = _extra_names() - {"test", "lint", "all"}
    core = _requirement_names()
    blocked = sorted(m for m, dists in packages_distributions().items()
                     if {canonicalize_name(d) for d in dists} & (_requirement_names(*user_extras) - core))
    assert {"torch", "jax", "tensorflow", "keras", "plotly", "jinja2", "sklearn", "PIL", "pynvml"} <= set(blocked)
    code = BLOCK_EXTRAS.format(blocked=blocked)
    fill = {"db": str(tmp_path / "new.db"), "tmp": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", code, *(a.format(**fill) for a in args)], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for args, _, _ in CORE_ONLY]
    for proc, (args, rc, says) in zip(procs, CORE_ONLY):
        out, _ = proc.communicate(timeout=120)
        assert (proc.returncode, says in out, "Traceback" in out) == (rc, True, False), (args, out)


def test_the_readme_lists_every_extra():
    """The README's table of extras (what a registry page shows) names each declared extra once."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("| extra | for |\n", 1)[1].split("\n\n", 1)[0]
    listed = [name for row in table.splitlines()[1:] for name in re.findall(r"`([a-z]+)`", row.split("|")[1])]
    assert sorted(listed) == sorted(_extra_names())


def test_the_classifiers_agree_with_requires_python_and_the_typed_marker():
    project = PYPROJECT["project"]
    floor = SpecifierSet(project["requires-python"])
    versions = [c.rsplit(" :: ", 1)[1] for c in project["classifiers"]
                if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    assert versions and all(floor.contains(v) for v in versions) and f">={min(versions, key=Version)}" == str(floor)
    assert ("Typing :: Typed" in project["classifiers"]) == (PACKAGE / "py.typed").exists()


def _command_callbacks(app) -> Iterator[Callable[..., object]]:
    yield from (command.callback for command in app.registered_commands if command.callback)
    for group in app.registered_groups:
        yield from _command_callbacks(group.typer_instance)


def test_the_typer_floor_reads_every_option_type():
    """typer before 0.19 has no typing.Literal options ("Type not yet supported"): with typer
    0.12-0.18, which `typer>=0.12` allowed, every command, `--help` included, ended in that
    traceback. Checked by installing each floor of the core dependencies into a venv."""
    from rigbench import cli

    hints = [repr(t) for callback in _command_callbacks(cli.app) for t in typing.get_type_hints(callback).values()]
    typer = next(Requirement(r) for r in PYPROJECT["project"]["dependencies"] if Requirement(r).name == "typer")
    assert any("Literal[" in hint for hint in hints)  # the floor's reason; without it, look again
    assert not typer.specifier.contains("0.18.0") and typer.specifier.contains("0.19.0")
