"""Imports point down the layers (docs/ARCHITECTURE.md): a graph of every import in
src/rigbench, built with `ast` (function-local imports and relative forms included), must
have no cycle and no import that points up."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).parents[2] / "src"

#: layer -> the layers it must never import (a module's layer is its first name below the
#: package: `rigbench.runner.isolate` is in "runner", `rigbench.devices` in "devices").
FORBIDDEN: dict[str, set[str]] = {
    "runner": {"api", "experiments", "cli"},
    "experiments": {"api", "cli"},
    "reports": {"api"},
    **{low: {"runner", "experiments", "api"} for low in ("store", "analysis", "hw", "trackers", "data")},
}

def module_names(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of `package` under `root`."""
    names = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
             known: set[str]) -> list[str]:
    """The package's modules an import statement imports (other names are left out)."""
    if isinstance(node, ast.Import):
        candidates = [alias.name for alias in node.names]
    else:
        if node.level:  # relative: `from . import x` in a.b.c means a.b; in a/b/__init__, a.b
            base = module.split(".")
            base = base[:len(base) - node.level + (1 if is_package else 0)]
            base_name = ".".join(base + ([node.module] if node.module else []))
        else:
            base_name = node.module or ""
        # `from pkg import api` imports the module pkg.api; `from pkg.api import run` imports pkg.api
        candidates = [f"{base_name}.{a.name}" if f"{base_name}.{a.name}" in known else base_name
                      for a in node.names]
    found = []
    for name in candidates:
        while name and name not in known:  # `import pkg.a.Thing` or a submodule not in the tree
            name = name.rpartition(".")[0]
        if name:
            found.append(name)
    return found


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its body."""
    files = module_names(root, package)
    known = set(files)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges.update(_targets(node, module, is_package, known))
        edges.discard(module)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a path that ends where it starts) per back edge met in a depth-first walk."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def violations(graph: dict[str, set[str]]) -> list[str]:
    """Imports that point up the layers, as `importer -> imported (rule)`."""
    bad = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            if layer(target) == "cli" and layer(module) not in ("cli", "__main__"):  # the entry point
                bad.append(f"{module} -> {target} (only the CLI imports the CLI)")
            elif layer(target) in FORBIDDEN.get(layer(module), ()):
                bad.append(f"{module} -> {target} ({layer(module)} never imports {layer(target)})")
    return bad


def test_rigbench_imports_have_no_cycle():
    found = cycles(import_graph(SRC, "rigbench"))
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_rigbench_imports_point_down():
    bad = violations(import_graph(SRC, "rigbench"))
    assert not bad, "imports that point up the layers:\n" + "\n".join(bad)


def test_the_graph_sees_the_real_package():
    graph = import_graph(SRC, "rigbench")
    assert "rigbench.api" in graph and "rigbench.experiments.sweep" in graph
    assert "rigbench.experiments.execute" in graph["rigbench.experiments.sweep"]
    assert "rigbench.api" in graph["rigbench.cli.core"]  # `from rigbench import api`


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_a_cycle_through_relative_and_local_imports_is_found(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from . import b\n",
        "pkg/b.py": "def f():\n    from pkg.sub import c  # local import\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/c.py": "from ..a import thing\n",
        "pkg/d.py": "import pkg.b\n",
    })
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.sub.c"}
    assert graph["pkg.sub.c"] == {"pkg.a"} and graph["pkg.d"] == {"pkg.b"}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.sub.c", "pkg.a"]]
    _write(tmp_path, {"pkg/sub/c.py": "import os\n"})
    assert cycles(import_graph(tmp_path, "pkg")) == []


@pytest.mark.parametrize(("importer", "text", "rule"), [
    ("runner/isolate.py", "from pkg import api\n", "runner never imports api"),
    ("runner/isolate.py", "from ..experiments import sweep\n", "runner never imports experiments"),
    ("experiments/sweep.py", "def f():\n    import pkg.api.results\n", "experiments never imports api"),
    ("reports/charts.py", "from pkg.api import run\n", "reports never imports api"),
    ("store/db.py", "from pkg.runner.isolate import x\n", "store never imports runner"),
    ("hw/nvml.py", "from .. import experiments\n", "hw never imports experiments"),
    ("api/__init__.py", "from pkg.cli import app\n", "only the CLI imports the CLI"),
])
def test_imports_that_point_up_are_found(tmp_path, importer, text, rule):
    files = {name: "" for name in (
        "pkg/__init__.py", "pkg/api/__init__.py", "pkg/api/results.py", "pkg/cli/__init__.py",
        "pkg/runner/__init__.py", "pkg/runner/isolate.py", "pkg/experiments/__init__.py",
        "pkg/experiments/sweep.py", "pkg/reports/__init__.py", "pkg/reports/charts.py",
        "pkg/store/__init__.py", "pkg/store/db.py", "pkg/hw/__init__.py", "pkg/hw/nvml.py")}
    _write(tmp_path, files)
    assert violations(import_graph(tmp_path, "pkg")) == []
    _write(tmp_path, {f"pkg/{importer}": text})
    [found] = violations(import_graph(tmp_path, "pkg"))
    assert rule in found
