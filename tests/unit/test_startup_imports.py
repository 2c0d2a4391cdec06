"""What `rigbench` imports before it answers: the commands that train nothing and read nothing
(--help, --version, any COMMAND --help) import no database driver, no numpy, no strategy and no
framework; those that list or show stored results, the database but no numpy; `rigbench.api`
imports each public name where it lives on first use (api/__init__.py). benchmarks/startup.py
has the seconds this saves; these tests assert only which modules load."""

import ast
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import rigbench.api as api

#: Loaded by no command that only prints help or the version (the frameworks never in the CLI's process).
NOT_FOR_HELP = ("sqlalchemy", "alembic", "numpy", "cpuinfo", "plotly", "matplotlib", "jinja2",
                "torch", "jax", "tensorflow", "keras",
                "rigbench.store.db", "rigbench.reports.terminal", "rigbench.experiments.execute",
                "rigbench.runner.session", "rigbench.analysis.stats")

SCRIPT = textwrap.dedent("""
    import json, sys
    seen = {}
    import rigbench.api
    seen["import rigbench.api"] = sorted(sys.modules)
    import rigbench.cli
    for argv in (["--help"], ["--version"], ["results", "--help"], ["max-batch", "--help"], ["compare", "--help"],
                 ["results", "list", "--help"], ["sweep", "--help"], ["report", "--help"]):
        sys.argv = ["rigbench", *argv]
        try:
            rigbench.cli.main()
        except SystemExit as done:
            assert done.code in (0, None), (argv, done.code)
        seen["rigbench " + " ".join(argv)] = sorted(sys.modules)
    print(json.dumps(seen), file=sys.stderr)
""")


def test_help_and_version_import_no_database_numpy_strategy_or_framework():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stderr.strip().splitlines()[-1])
    assert "Usage: rigbench [OPTIONS] COMMAND" in proc.stdout and "rigbench 0." in proc.stdout
    assert "--start" in proc.stdout  # max-batch's help: its defaults were read (max_batch_logic)
    for step, modules in seen.items():
        loaded = {m for m in modules if m.split(".")[0] in NOT_FOR_HELP or m in NOT_FOR_HELP}
        assert not loaded, f"{step} imported {sorted({m if m.startswith('rigbench') else m.split('.')[0] for m in loaded})}"


READING = textwrap.dedent("""
    import json, sys
    import rigbench.cli
    db = sys.argv[1]
    for argv in (["results", "list", "--db", db], ["results", "show", "1", "--db", db],
                 ["results", "runs", "--db", db], ["workloads"]):
        sys.argv = ["rigbench", *argv]
        try:
            rigbench.cli.main()
        except SystemExit as done:
            assert done.code in (0, None), (argv, done.code)
    print(json.dumps(sorted(sys.modules)), file=sys.stderr)
""")


def test_listing_and_showing_stored_results_import_the_database_but_no_numpy(tmp_path):
    db = tmp_path / "v01.db"  # 5 runs of v0.1, migrated as the first command opens it
    shutil.copy(Path(__file__).parents[1] / "fixtures" / "v01.db", db)
    proc = subprocess.run([sys.executable, "-c", READING, str(db)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    modules = set(json.loads(proc.stderr.strip().splitlines()[-1]))
    assert "rigbench.store.db" in modules and "rigbench.reports.terminal" in modules  # it did read and show
    assert "c1b7312dc1af" in proc.stdout and "resnet" in proc.stdout  # a run's id, and `workloads`' table
    assert not {m.split(".")[0] for m in modules} & {"numpy", "torch", "jax", "tensorflow", "keras", "plotly"}


def _type_checking_imports() -> dict[str, tuple[str, ...]]:
    """api/__init__.py's `if TYPE_CHECKING:` imports, module -> names."""
    tree = ast.parse(Path(api.__file__).read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    return {n.module: tuple(a.name for a in n.names) for n in block.body if isinstance(n, ast.ImportFrom)}


def test_the_api_names_are_where_the_type_checker_is_told_and_each_is_public():
    homes = api._HOMES
    assert _type_checking_imports() == homes  # mypy reads the block, __getattr__ the table: the same names
    names = [name for group in homes.values() for name in group]
    assert len(names) == len(set(names)) and sorted(names) == sorted(api.__all__)
    for module, group in homes.items():
        home = sys.modules.get(module) or __import__(module, fromlist=["_"])
        assert all(getattr(api, name) is getattr(home, name) for name in group)
    assert "run" in dir(api) and "plan_sweep" in dir(api)


def test_an_unknown_api_name_is_an_attribute_error():
    try:
        api.no_such_function  # noqa: B018
    except AttributeError as exc:
        assert "no_such_function" in str(exc)
    else:
        raise AssertionError("api.no_such_function was found")
