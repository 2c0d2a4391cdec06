"""Warm start: a trial's process forked from a server that imported its framework once
(runner/forkserver.py), instead of a fresh interpreter that imports it again (about 1.3 s for
torch on the 2-core dev VM, for every trial).

A server serves one environment: a framework reads some variables once, when it is imported
(OMP_NUM_THREADS sizes torch's pools), so a server serves only trials whose environment and
framework equal the ones it was started with, rigbench's own variables aside (RIGBENCH_*, read
at run time, never at import). A launching process keeps several of them (server_limit: as
many as 5% of the machine's memory holds, 2 to 8), the least recently used stopped first.
`rigbench scaling` interleaves thread counts, a server each: `scaling mlp --quick -d cpu --rounds
3 --no-compile --precision bf16` took 19.4 s with that limit (5 on the dev VM) against 35.0 s with
two (medians of 3 paired runs, 2026-11-27). `run --framework torch,jax` takes each workload in both frameworks
in turn, and with one server each turn started the other framework's server again (a torch
trial after a JAX one took 15 s on an H200 machine, 6 s after a torch one). On the 2-core dev
VM, `run mlp cnn autoencoder --framework torch,jax -d cpu --quick` took 12.7 s with two servers
against 20.2 s with one (medians of 4 paired runs, 2026-11-27). Cold start instead, always, where:
- the adapter names no modules to preload (`PRELOAD`: TensorFlow and the Keras family start
  threads when imported, so a process that imported them must not fork);
- the platform is not Linux (no fork on Windows; on macOS a forked process may not use the
  system frameworks its parent loaded);
- RIGBENCH_COLD_START=1 asks for it (benchmarks/quick_suite.py compares the two);
- the server refused (a preload started threads) or failed: said once on stderr.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import psutil

from rigbench.frameworks import load_adapter
from rigbench.frameworks.base import modules_to_preload
from rigbench.hw.memory import total_memory
from rigbench.spec import TrialSpec

#: Set to 1 to start every trial cold.
COLD_START_VAR = "RIGBENCH_COLD_START"
#: Seconds a new server may take to import its modules.
START_TIMEOUT_S = 120.0
#: Variables that differ between trials of one launching process and that no framework reads
#: at import: rigbench's own, and pytest's per-test name (the test suite launches trials too).
RUNTIME_ONLY = ("RIGBENCH_", "PYTEST_CURRENT_TEST")


def preload_modules(framework: str) -> tuple[str, ...]:
    """The modules a warm server imports for `framework`'s trials (none: start cold)."""
    if sys.platform != "linux" or os.environ.get(COLD_START_VAR) == "1":
        return ()
    return modules_to_preload(load_adapter(framework))


def _key(env: Mapping[str, str], modules: Sequence[str]) -> tuple:
    kept = {k: v for k, v in env.items() if not k.startswith(RUNTIME_ONLY)}
    return tuple(modules), tuple(sorted(kept.items()))


def server_group(spec: TrialSpec) -> tuple:
    """What decides which server a trial of this launching process forks from (_key, less the
    environment all its trials share): its framework and the variables its adapter sets."""
    return spec.framework, tuple(sorted(load_adapter(spec.framework).environment(spec).items()))


def by_server(specs: Sequence[TrialSpec]) -> list[TrialSpec]:
    """`specs` with the trials of one server next to each other, groups in order of first
    appearance and each group in its given order. Where the order carries no meaning (a sweep's
    grid), this keeps each server warm: `sweep --threads 1,2 --framework torch,jax` over two
    workloads needs four servers, and in grid order each of its 8 trials started one."""
    groups: dict[tuple, list[TrialSpec]] = {}
    for spec in specs:
        groups.setdefault(server_group(spec), []).append(spec)
    return [spec for group in groups.values() for spec in group]


class ForkedTrial:
    """A trial process forked by the server, with the part of subprocess.Popen's interface
    the launchers use (pid, poll, wait, returncode): its exit comes from the server."""

    def __init__(self, server: ForkServer, pid: int):
        self.server, self.pid = server, pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.exit_code(self.pid, timeout_s=0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self.server.exit_code(self.pid, timeout_s=timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired("forked trial", timeout or 0.0)
        return self.returncode


class ForkServer:
    """One runner/forkserver.py process: started with `env`, it has imported `modules`."""

    def __init__(self, env: Mapping[str, str], modules: Sequence[str]):
        self.key = _key(env, modules)
        self.proc = subprocess.Popen([sys.executable, "-m", "rigbench.runner.forkserver", *modules],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=dict(env), start_new_session=True)
        self._pending = b""  # read from the server, not yet a whole line
        self.refused: str | None = None
        try:
            first = self._read(START_TIMEOUT_S)
        except BaseException:  # Ctrl-C while it imports: it is in no list yet, so end it here, at once
            self.proc.kill()
            self.proc.wait()
            raise
        if first is None or "ready" not in first:
            self.refused = (first or {}).get("refused") or "the warm-start server did not start"
            self.stop()

    def _read(self, timeout_s: float | None) -> dict[str, Any] | None:
        """The server's next message, or None if none came within `timeout_s` or it ended.
        Unbuffered: two messages may arrive at once, and select sees only the pipe."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while b"\n" not in self._pending:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return json.loads(line)

    def start(self, argv: Sequence[str], env: Mapping[str, str], stderr_path: str) -> ForkedTrial:
        """Fork one trial process (runner/child's `argv`) with `env`, its stderr to `stderr_path`."""
        assert self.proc.stdin is not None
        # The trial watches its parent, which is this server (runner/child.exit_with_parent).
        env = {**env, "RIGBENCH_PARENT_PID": str(self.proc.pid)}
        self.proc.stdin.write((json.dumps({"argv": list(argv), "env": env, "stderr": stderr_path}) + "\n").encode())
        self.proc.stdin.flush()
        message = self._read(START_TIMEOUT_S)
        if message is None or "pid" not in message:
            self.stop()
            raise RuntimeError("the warm-start server ended before starting the trial")
        return ForkedTrial(self, int(message["pid"]))

    def exit_code(self, pid: int, timeout_s: float | None) -> int | None:
        """The exit code of trial `pid`, waiting up to `timeout_s` (None: until it ends)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            message = self._read(left)
            if message is None:
                if self.proc.poll() is not None:  # the server died: its trial ended with it
                    return -9
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                continue
            if message.get("pid") == pid and "returncode" in message:
                return int(message["returncode"])

    def stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()  # the server exits when its stdin closes
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


#: Servers a launching process keeps at once: at least two (two frameworks' trials taking
#: turns), at most MAX_SERVERS, and between them as many as fit in SERVER_MEMORY_SHARE of the
#: machine's memory (server_limit). Each idle one is a process blocked on its stdin, holding its
#: imports: a torch server's own memory (USS) was 224 MiB on the dev VM, JAX's 100 MiB. `scaling`
#: interleaves its thread counts on purpose (each a server of its own: OMP_NUM_THREADS is read at
#: import), and with two servers started one for most of its trials.
MIN_SERVERS = 2
MAX_SERVERS = 8
SERVER_MEMORY_SHARE = 0.05
#: What a server is taken to hold before one runs to measure (a torch server's USS, rounded up).
DEFAULT_SERVER_BYTES = 256 * 2**20
#: The servers by key (_key), the least recently used first; a refused or dead one stays, so
#: that its key's trials start cold without trying again.
_servers: dict[tuple, ForkServer] = {}
#: The server of the newest warm-started trial.
_server: ForkServer | None = None
_said: set[str] = set()


def _unique_bytes(server: ForkServer) -> int:
    """The memory only this server holds (USS), 0 if it cannot be read (it ended)."""
    try:
        return int(psutil.Process(server.proc.pid).memory_full_info().uss)
    except (psutil.Error, OSError):
        return 0


def server_limit() -> int:
    """How many servers to keep (MIN_SERVERS to MAX_SERVERS): as many of the largest running
    one as fit in SERVER_MEMORY_SHARE of this machine's memory (24 GiB: 5 torch servers of 224 MiB)."""
    largest = max((_unique_bytes(s) for s in _servers.values() if s.proc.poll() is None), default=0)
    room = SERVER_MEMORY_SHARE * total_memory()
    return max(MIN_SERVERS, min(MAX_SERVERS, int(room // (largest or DEFAULT_SERVER_BYTES))))


def _server_for(env: Mapping[str, str], modules: Sequence[str], framework: str,
                on_progress: Callable[[str], None] | None = None) -> ForkServer:
    """The server of `env` and `modules`, started if there is none (said to `on_progress`: it
    imports the framework, seconds); now the most recently used."""
    key = _key(env, modules)
    server = _servers.pop(key, None)
    if server is None:
        limit = server_limit()
        while len(_servers) >= limit:  # stopped before the new one starts: never more than the limit
            _servers.pop(next(iter(_servers))).stop()
        if on_progress is not None:
            on_progress(f"starting {framework} (imported once, for every trial of it)")
        server = ForkServer(env, modules)
        if server.refused:
            _say_once(f"rigbench: cold start for {framework} trials: {server.refused}")
    _servers[key] = server
    return server


def start_trial(argv: Sequence[str], env: Mapping[str, str], stderr_path: str,
                framework: str, on_progress: Callable[[str], None] | None = None) -> ForkedTrial | None:
    """A warm-started trial process, or None: start it cold (module docstring). `on_progress`
    hears of a server that must start first."""
    global _server
    modules = preload_modules(framework)
    if not modules:
        return None
    _server = _server_for(env, modules, framework, on_progress)
    if _server.refused:
        return None
    try:
        return _server.start(argv, env, stderr_path)
    except (OSError, RuntimeError) as exc:  # the server died: this and later trials start cold
        _server.refused = str(exc)
        _say_once(f"rigbench: cold start for {framework} trials: {exc}")
        return None


def _say_once(text: str) -> None:
    if text not in _said:
        _said.add(text)
        print(text, file=sys.stderr)


@atexit.register
def _stop_servers() -> None:
    while _servers:
        _servers.popitem()[1].stop()
