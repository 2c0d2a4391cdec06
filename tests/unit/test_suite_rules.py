"""Rules the test suite itself keeps (DEVELOPERS.md): every test asserts something, and no test
counts the workload registry (adding a workload must not break a test that only counted)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
#: Calls that assert by raising: pytest's, and helpers named for it (assert_*, check_*).
ASSERTING_CALLS = ("raises", "warns", "fail")


def _asserts(function: ast.AST) -> bool:
    for node in ast.walk(function):
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ASSERTING_CALLS or name.lstrip("_").startswith(("assert", "check")):
                return True
    return False


def _test_functions() -> list[tuple[Path, ast.FunctionDef | ast.AsyncFunctionDef]]:
    found = []
    for path in sorted(TESTS.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                found.append((path, node))
    return found


def test_every_test_asserts():
    functions = _test_functions()
    silent = [f"{path.relative_to(TESTS)}:{fn.lineno} {fn.name}" for path, fn in functions if not _asserts(fn)]
    assert len(functions) > 100 and silent == []


def test_no_test_counts_the_workloads():
    # the registry's length compared with a number, or a count of workloads in words
    counted = re.compile(r"len\((WORKLOADS|workloads|workloads_info\(\))\)\s*==\s*\d|\b(eight|8) workloads\b")
    found = [f"{path.relative_to(TESTS)}:{i}" for path in sorted(TESTS.rglob("*.py"))
             for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if counted.search(line)]
    assert found == []


def test_the_workers_take_the_files_in_collection_order():
    """pyproject's addopts: with `--dist loadfile`, xdist by default hands out the files sorted by
    their number of tests, which left the slow files of one to four tests (the library doc's
    examples, recommend, the TensorFlow e2e) for the end, where one worker ran them while the other
    had finished. In collection order the long contract, e2e and integration files go first and the
    unit files' short tests even the two workers out at the end."""
    import tomllib

    options = tomllib.loads((TESTS.parent / "pyproject.toml").read_text(encoding="utf-8"))
    addopts = options["tool"]["pytest"]["ini_options"]["addopts"].split()
    assert "--no-loadscope-reorder" in addopts and addopts[addopts.index("--dist") + 1] == "loadfile"
    first_unit = min(i for i, path in enumerate(sorted(TESTS.glob("*/test_*.py"))) if path.parent.name == "unit")
    assert all(path.parent.name == "unit" for path in sorted(TESTS.glob("*/test_*.py"))[first_unit:])


def test_the_suites_processes_cache_their_bytecode():
    """tests/conftest.py lifts PYTHONDONTWRITEBYTECODE (set on this project's VMs): without the
    cache every `rigbench` a test starts compiled its modules from source again."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", "import sys; print(sys.dont_write_bytecode)"],
                         capture_output=True, text=True, check=True).stdout
    assert sys.dont_write_bytecode is False and out.strip() == "False"


def test_the_suites_processes_get_no_terminal_size_from_readline():
    """pytest imports readline, which exports COLUMNS=80 and LINES=24 where os.environ does not
    show them; tests/conftest.py unsets them, so a `rigbench` a test starts into a pipe lays its
    tables out as a user's pipe gets them (compare's full headers: tests/e2e/test_compare_cli.py)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('COLUMNS'), os.environ.get('LINES'))"],
                         capture_output=True, text=True, check=True).stdout
    assert out.split() == ["None", "None"]
