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
