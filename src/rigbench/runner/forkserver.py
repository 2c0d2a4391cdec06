"""`python -m rigbench.runner.forkserver MODULE...`: a process that has imported the trial
child and a framework once, and forks a fresh trial process from that state on request (the
warm start: runner/launchers/warm_start.py starts it and talks to it).

Isolation is kept: every trial is still a process of its own, forked from a server that has
only imported modules and never runs framework code, so no trial's memory, thread pools,
device context, limits or environment reach the next. Forking is safe only while the server
has no threads of its own beyond the BLAS pool numpy starts on import (OpenBLAS handles fork
itself, through pthread_atfork): the server counts its threads after the imports and refuses
to serve when a module started more (TensorFlow does; torch and jax do not), and the launcher
then starts trials cold.

Memory figures: fork copies the page tables of a process's anonymous memory but not of its
file-backed pages (the libraries' code and data the imports touched), so a forked trial would
start lighter than a cold one that imported the same modules: mlp's baseline (the RSS its
memory cap is sized from) read 161 MiB warm against 232 MiB cold, and its peak about 50 MiB
lower, five rounds each on the dev VM. The server lists the file-backed pages it has mapped
(/proc/self/pagemap's present bit) and each trial touches them first (about 86 MiB, 30 ms): the
same rounds then read 235 against 232 MiB, and peaks of 440-451 against 439-450 MiB
(tests/integration/test_warm_start.py checks both). Since torch._dynamo is among the preloads
(a cold trial imports them before its cap too): 306 against 305 MiB, peaks 437-450 against
439-449 MiB, three rounds each.

Protocol, one JSON object a line: the server prints {"ready": true} or {"refused": reason} once
started; then for each request {"argv": child arguments, "env": environment, "stderr": path} on
its stdin it forks, prints {"pid": N}, waits for that trial and prints {"pid": N, "returncode":
R} (negative for a signal, as subprocess reports it). One trial at a time. It exits when its
stdin closes (the launching process ended), killing a trial still running first; each trial
also watches its parent, the server (runner/child.exit_with_parent), and ends if it does.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import select
import signal
import sys
import traceback
from typing import Any, TextIO

import numpy as np

from rigbench.runner.signal_names import TERMINATIONS

#: The name a forked trial gives its process (its command line stays the server's), so that
#: ps, top and tests can tell trials from the server.
TRIAL_PROCESS_NAME = "rigbench-trial"
#: Seconds between two looks, while a trial runs, at whether the launching process is gone.
WATCH_S = 0.05


def thread_count() -> int:
    """The OS threads of this process (Linux)."""
    return len(os.listdir("/proc/self/task"))


def load(modules: list[str]) -> str | None:
    """Import the trial child and `modules`; the reason forking would be unsafe, else None."""
    import numpy  # noqa: F401 - its BLAS pool is the baseline: it handles fork itself

    baseline = thread_count()
    importlib.import_module("rigbench.runner.child")
    for name in modules:
        importlib.import_module(name)
    extra = thread_count() - baseline
    if extra > 0:
        return f"importing {', '.join(modules)} started {extra} thread(s), and forking a threaded process is unsafe"
    return None


def mapped_file_pages() -> np.ndarray:
    """The addresses of every page of a readable file mapping that this process has mapped now
    (bit 63 of its /proc/self/pagemap entry: present), beside its anonymous memory."""
    page = os.sysconf("SC_PAGE_SIZE")
    found = []
    fd = os.open("/proc/self/pagemap", os.O_RDONLY)
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            for line in maps:
                fields = line.split()  # range perms offset dev inode [path]
                if len(fields) < 6 or fields[4] == "0" or "r" not in fields[1] or fields[5].startswith("/dev/"):
                    continue
                start, end = (int(x, 16) for x in fields[0].split("-"))
                entries = np.frombuffer(os.pread(fd, 8 * ((end - start) // page), 8 * (start // page)), np.uint64)
                found.append(start + np.nonzero(entries >> np.uint64(63))[0].astype(np.int64) * page)
    finally:
        os.close(fd)
    return np.concatenate(found) if found else np.zeros(0, np.int64)


def touch(pages: np.ndarray) -> None:
    """Read one byte of each page, mapping it into this process (a soft fault: it is in memory)."""
    for address in pages.tolist():
        ctypes.c_char.from_address(address).value  # noqa: B018 - the read is the point


def _name_process(name: str) -> None:
    try:
        with open("/proc/self/comm", "w", encoding="ascii") as fh:
            fh.write(name)
    except OSError:  # a cosmetic: never fail a trial for it
        pass


def run_trial_process(request: dict[str, Any], pages: np.ndarray) -> int:
    """In the forked process: become the trial (a session of its own, the server's file pages
    mapped as a cold start has them, stdin and stdout on the null device, stderr to its file,
    the trial's environment) and run it; its exit code."""
    os.setsid()  # as a cold child's start_new_session: Ctrl-C reaches only the launching process
    for sig in _OUTLIVED:  # as a cold child has them
        signal.signal(sig, signal.SIG_DFL)
    touch(pages)
    null = os.open(os.devnull, os.O_RDWR)
    err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for fd, target in ((0, null), (1, null), (2, err)):
        os.dup2(target, fd)
    os.close(null)
    os.close(err)
    os.environ.clear()
    os.environ.update(request["env"])
    _name_process(TRIAL_PROCESS_NAME)
    from rigbench.runner import child

    sys.argv = ["rigbench.runner.child", *request["argv"]]
    return child.main(request["argv"])


def _reply(out: TextIO, message: dict[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def serve(requests: int, out: TextIO) -> None:
    """Fork one trial per request line read from the file descriptor `requests` until it
    closes. While a trial runs, a closed `requests` (the launching process ended, even by
    SIGKILL) ends the trial's process group and the server: no trial outlives its launcher."""
    pages = mapped_file_pages()
    pending = b""
    while True:
        while b"\n" not in pending:
            chunk = os.read(requests, 65536)
            if not chunk:
                return
            pending += chunk
        line, pending = pending.split(b"\n", 1)
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:  # the trial
            code = 1
            try:
                code = run_trial_process(request, pages)
            except BaseException:  # noqa: BLE001 - a trial that cannot start says why on its stderr
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _reply(out, {"pid": pid})
        status = _wait_watching(pid, requests)
        if status is None:
            return
        _reply(out, {"pid": pid, "returncode": os.waitstatus_to_exitcode(status)})


def _wait_watching(pid: int, requests: int) -> int | None:
    """The wait status of trial `pid`; None if `requests` closed first (the trial's group is
    then killed and reaped). Requests come one at a time, so none arrives while a trial runs."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if select.select([requests], [], [], WATCH_S)[0] and not os.read(requests, 65536):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None


#: Signals the server ignores: its life is its launcher's (it ends when its stdin closes, even
#: after a SIGKILL of the launcher). SIGTERM to every process of a run (systemd stopping
#: rigbench) ended it, and its trial, which watches it (runner/child.exit_with_parent), ended
#: before it could report a training run's finished epochs to the launcher that asked for them.
_OUTLIVED = TERMINATIONS


def main(modules: list[str]) -> int:
    out = sys.stdout
    for sig in _OUTLIVED:
        signal.signal(sig, signal.SIG_IGN)
    try:
        refused = load(modules)
    except Exception as exc:  # noqa: BLE001 - an import that fails: the launcher starts cold
        refused = f"importing {', '.join(modules)} failed: {exc}"
    _reply(out, {"refused": refused} if refused else {"ready": True})
    if refused:
        return 1
    serve(sys.stdin.fileno(), out)
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    # Nothing is left to flush (each message is) and every trial is reaped: end without the
    # interpreter's teardown of the imported framework, which the launching process waits for
    # as it exits (torch: 1.3 s of every warm run's end, and of each Ctrl-C, on the dev VM).
    sys.stdout.flush()
    os._exit(code)
