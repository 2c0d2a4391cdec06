"""docs/LIBRARY.md says every example on it runs as written, in order, in one Python session on a
CPU-only machine: this runs them so, in a fresh interpreter in an empty folder, real trials and a
real SQLite file included. The examples carry their own asserts."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

LIBRARY_DOC = Path(__file__).resolve().parents[2] / "docs" / "LIBRARY.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.DOTALL | re.MULTILINE)


def test_the_page_has_its_examples():
    blocks = python_blocks(LIBRARY_DOC.read_text())
    assert len(blocks) >= 8, "docs/LIBRARY.md lost its examples (or the ```python fences this test reads)"
    assert all("api." in block for block in blocks)


@pytest.mark.slow
def test_every_library_example_runs_in_order(tmp_path):
    program = "\n".join(python_blocks(LIBRARY_DOC.read_text()))
    pytest.importorskip("mypy")
    (tmp_path / "examples.py").write_text(program)
    # py.typed: a user's mypy checks their calls against rigbench's hints, so the page's must pass
    typed = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--ignore-missing-imports", "examples.py"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert typed.returncode == 0, typed.stdout[-3000:]
    proc = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "trial 2 of 2: ok" in out
    assert "unknown workload 'resnet50'" in out
    assert re.search(r"mlp torch cpu b64 fp32: (faster|slower|no change), B/A \d", out), out
    assert (tmp_path / "report.html").stat().st_size > 0
    assert (tmp_path / "elsewhere.db").exists()
