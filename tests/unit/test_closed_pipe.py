"""A reader that stops reading (`rigbench results show 1 | head -3`): the command ends silently
with 141 (128 + SIGPIPE), what a shell reports of `git log | head -3`, where it ended with exit 1
(rich's and click's own handling; 1 means "no answer" here) or, for output still buffered at
exit, "Exception ignored ... BrokenPipeError" and 120. A real pipe and a real `rigbench` process:
the read end is closed before the command writes, as `head` closes it once it has its lines.
Output that finds no room (a full disk) is one line and exit 2. Windows says a reader is gone
with EINVAL: checked with the platform faked, as tests/unit/test_platforms.py fakes it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rigbench.cli.console import OUTPUT_GONE
from rigbench.spec import Metrics, Result, TrialSpec
from rigbench.store import Store
from tests.unit.test_platforms import AS_WINDOWS

ROOT = Path(__file__).parents[2]

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGPIPE and its exit code are POSIX's")


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("pipe") / "r.db")
    store = Store(path)
    store.add_run("run1", "2026-01-01T00:00:00+00:00", "rigbench run", {"hostname": "box"})
    for batch in (16, 32, 64):
        store.add_result(Result(run_id="run1", created_at="2026-01-01T00:00:00+00:00", status="ok",
                                spec=TrialSpec(workload="mlp", device="cpu", batch_size=batch),
                                metrics=Metrics(samples_per_s=100.0 * batch)))
    return path


def into_a_closed_pipe(stream: str, *args: str) -> tuple[int, bytes]:
    """Run `rigbench ARGS` with `stream` (stdout or stderr) a pipe nobody reads: its exit code
    and what it wrote on the other stream. PYTHONUNBUFFERED is left out, as a user's shell has
    it: a small output then waits in the buffer until the command ends."""
    read, write = os.pipe()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, stream: write}
    proc = subprocess.Popen([sys.executable, "-m", "rigbench", *args], cwd=ROOT, env=env, **streams)
    os.close(write)
    os.close(read)  # the reader is gone before the first write
    other = proc.communicate(timeout=120)[1 if stream == "stdout" else 0]
    return proc.returncode, other


@pytest.mark.parametrize("args", [
    ("results", "list"),  # a rich table: rich's own handling exited 1
    ("results", "export", "--format", "csv"),  # rows written to sys.stdout: click's handling exited 1
    ("results", "runs", "--json"),  # small: still buffered when the command returns, written at exit
    ("results", "list", "--help"),  # click's own output
])
def test_a_closed_stdout_ends_the_command_silently_with_141(db, args):
    code, stderr = into_a_closed_pipe("stdout", *args, "--db", db)
    assert (code, stderr.decode()) == (OUTPUT_GONE, "") == (141, "")


def test_a_closed_stderr_ends_the_command_silently_with_141(db):
    """`rigbench ... 2>&1 | head -1`: the line saying nothing matched goes to stderr."""
    code, stdout = into_a_closed_pipe("stderr", "results", "list", "--status", "crash", "--db", db)
    assert (code, stdout) == (141, b"")


def test_a_command_started_with_stdout_closed_ends_as_before(db):
    """`rigbench workloads >&-`: Python's sys.stdout is None, which the flush at exit of the
    closed-pipe handling read as a stream (AttributeError traceback)."""
    done = subprocess.run([sys.executable, "-m", "rigbench", "workloads"], cwd=ROOT, stderr=subprocess.PIPE,
                          preexec_fn=lambda: os.close(1), timeout=120)
    assert (done.returncode, done.stderr) == (0, b"")


#: A rigbench process whose stdout is a pipe without a reader as Windows reports one: each write
#: raises OSError(EINVAL) with no file name (python/cpython#79935), until the command points the
#: stream at os.devnull (output_gone). ARGS: the command's arguments.
READER_GONE_AS_WINDOWS = """
import errno, io, os, sys

class ReaderGone(io.FileIO):
    def write(self, data):
        if os.path.samestat(os.fstat(self.fileno()), os.stat(os.devnull)):
            return super().write(data)
        raise OSError(errno.EINVAL, "Invalid argument")

sys.stdout = io.TextIOWrapper(ReaderGone(1, "w", closefd=False), encoding="utf-8")
sys.argv = ["rigbench", *ARGS]
import rigbench.cli
rigbench.cli.main()
"""


def reader_gone(*args: str, windows: bool) -> subprocess.CompletedProcess[str]:
    script = (AS_WINDOWS if windows else "") + f"ARGS = {list(args)!r}" + READER_GONE_AS_WINDOWS
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("args", [
    ("results", "list"),  # a rich table: rich's own handling knows BrokenPipeError only
    ("results", "export", "--format", "csv"),  # click's handling knows EPIPE only
    ("results", "runs", "--json"),  # still buffered when the command returns, written at exit
    ("results", "list", "--help"),  # click's own output
])
def test_a_stdout_whose_reader_is_gone_on_windows_ends_the_command_silently(db, args):
    """Windows raises OSError EINVAL, not BrokenPipeError, for a write into a closed pipe: each
    command ended in a traceback (or, for output still buffered at exit, "Exception ignored"
    and 120) where POSIX's ended silently with 141."""
    done = reader_gone(*args, "--db", db, windows=True)
    assert (done.returncode, done.stdout, done.stderr) == (OUTPUT_GONE, "", "")


def test_einval_on_posix_is_an_error_not_a_closed_pipe(db):
    """On POSIX a closed pipe is EPIPE; EINVAL there is a real error and is not hidden."""
    done = reader_gone("results", "list", "--db", db, windows=False)
    assert done.returncode not in (0, OUTPUT_GONE)
    assert "OSError: [Errno 22] Invalid argument" in done.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="/dev/full: Linux's always-full device")
@pytest.mark.parametrize("args", [("results", "export", "--format", "csv"), ("results", "list"),
                                  ("results", "runs", "--json")])
def test_output_onto_a_full_disk_is_one_line_and_exit_2(db, args):
    """`rigbench results export > r.csv` on a full disk ended in a traceback of 50 lines (rich's,
    through typer) or, where the output was still buffered, "Exception ignored" and 120."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "rigbench", *args, "--db", db], cwd=ROOT, env=env, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (2, "rigbench: error: cannot write the output: No space left on device; "
                                                 "what was stored stays stored\n")
