"""docs/STRATEGY.md lists the keys of a sweep TOML file; SweepSpec is what the code accepts
(the list had left out `processes` and `energy`)."""

import re
from pathlib import Path

from rigbench.sweep_spec import SweepSpec

STRATEGY = Path(__file__).resolve().parents[2] / "docs" / "STRATEGY.md"


def test_the_documented_sweep_file_keys_are_the_ones_the_code_takes():
    text = " ".join(STRATEGY.read_text(encoding="utf-8").split())
    found = re.search(r"reads a TOML file whose keys mirror the flags: `([^`]+)`", text)
    assert found, "the sentence that lists a sweep file's keys is gone from docs/STRATEGY.md"
    assert [key.strip() for key in found.group(1).split(",")] == list(SweepSpec.model_fields)
