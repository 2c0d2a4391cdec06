"""The fault suite's cheapest faults (benchmarks/faults.py), through the same functions: each
ends as a one-line error (exit 2, no traceback) or a stored result, and the database still
serves `results list`, `report` and `results show` afterwards. No trial runs here: the seed
database is the v0.1 fixture, migrated on first open. (The database locked, restarted or down
mid-run needs a trial: benchmarks/faults.py runs those; tests/unit/test_store_spool.py has them
without one.)"""

from pathlib import Path

import pytest
from benchmarks import faults

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

FIXTURE = Path(__file__).parents[1] / "fixtures" / "v01.db"


@pytest.fixture
def seed(tmp_path):
    return faults.Seed(tmp_path, source_db=FIXTURE)


def inject(name, seed, tmp_path):
    work = tmp_path / name
    work.mkdir()
    return faults.FAULTS[name](seed, work)


@pytest.mark.parametrize("name", ["toml-malformed", "toml-non-utf8", "export-missing-dir", "report-missing-dir"])
def test_fault_is_a_one_line_error(name, seed, tmp_path):
    out = inject(name, seed, tmp_path)
    assert out.tracebacks == 0, [c.err for c in out.cmds]
    assert out.rc == 2, out.cmds[0].err
    assert out.lost == 0 and not out.recorded
    assert out.serve_failures == []


def test_read_only_home_is_one_line_naming_the_path_and_the_variable(seed, tmp_path):
    out = inject("home-read-only", seed, tmp_path)
    assert out.tracebacks == 0, [c.err for c in out.cmds]
    assert out.rc == 2 and out.lost == 0 and not out.recorded
    assert [n for n in out.notes if "not naming" in n] == [], out.notes


def test_non_database_file_is_a_one_line_error(tmp_path):
    notes = tmp_path / "notes.db"
    notes.write_text("these are my notes, not a database\n" * 200)
    before = notes.read_bytes()
    for args in (["results", "list"], ["report", "-o", str(tmp_path / "r.html")]):
        cmd = faults.rig(*args, "--db", str(notes))
        assert not cmd.traceback, cmd.err
        assert cmd.rc == 2, cmd.err
        assert len(cmd.err.strip().splitlines()) == 1, cmd.err
    assert notes.read_bytes() == before, "the file was left as it was"


def test_markup_bundle_is_stored_and_shown_literally(seed, tmp_path):
    out = inject("bundle-markup", seed, tmp_path)
    assert out.tracebacks == 0, [c.err for c in out.cmds]
    assert out.rc == 0 and out.recorded and out.lost == 0, out.notes
    assert out.serve_failures == []
    show = out.cmds[-1]  # `results show` of the imported crash
    assert show.args[:2] == ["results", "show"]
    assert "[bold]x[/bold]" in " ".join(show.out.split()), show.out


def test_harness_reads_any_database_file(seed, tmp_path):
    db, n = seed.copy_to(tmp_path)
    assert n == 5 and faults.statuses(db) == faults.statuses(FIXTURE)
    notes = tmp_path / "notes.db"
    notes.write_text("not a database\n" * 200)
    assert faults.statuses(notes)[0].startswith("<unreadable")
    assert faults.statuses(tmp_path / "missing.db") == []
