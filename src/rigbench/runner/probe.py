"""Ask frameworks, in a child process, what they can see: `python -m rigbench.runner.probe NAME...`.

Prints JSON: {NAME: {"framework", "software", "devices": [...]} or {"error": "..."}}. Running
this in a child keeps the CLI's process free of framework imports and GPU contexts (a CUDA
context alone takes hundreds of MiB of GPU memory).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any

from rigbench.errors import UsageError
from rigbench.frameworks import check_framework, load_adapter
from rigbench.spec import TrialSpec

PROBE_TIMEOUT_S = 300

#: A Keras-on-a-backend framework is asked in the child of the native framework whose backend
#: it runs on, when both are asked at once: that backend is then imported once, not twice
#: (`rigbench devices`: three children instead of five).
SHARES_CHILD_WITH = {"keras-jax": "jax", "keras-torch": "torch"}

#: Where a probe that takes seconds says so before it starts: silent unless the application
#: shows INFO of this logger (the `rigbench` command does, on a terminal: cli/__init__.py).
progress_log = logging.getLogger("rigbench.progress")

_answers: dict[str, dict[str, Any]] = {}  # this process's answers, by framework
_lock = threading.Lock()


def probe_here(names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Each framework's software and devices, asked in this process (the child's side)."""
    adapters = {name: load_adapter(name) for name in names}
    # the frameworks start as in a trial (e.g. Keras picks its backend from the environment);
    # every environment is set before the first import, which reads it
    for name, adapter in adapters.items():
        os.environ.update(adapter.environment(TrialSpec(workload="mlp", batch_size=1, framework=name)))
    found: dict[str, dict[str, Any]] = {}
    for name, adapter in adapters.items():
        try:
            found[name] = {"framework": name, "software": adapter.software(), "devices": adapter.list_devices()}
        except Exception as exc:  # noqa: BLE001 - one framework's failure is its own answer, not its partner's
            first_line = (str(exc).strip().splitlines() or [""])[0][:300]
            found[name] = {"error": f"{type(exc).__name__}: {first_line}"}
    return found


def child_groups(names: Sequence[str]) -> list[tuple[str, ...]]:
    """`names` as the children that ask them: a Keras-on-a-backend framework joins its native
    framework when that is asked too (SHARES_CHILD_WITH), every other one has a child of its own."""
    groups: dict[str, list[str]] = {}
    for name in names:
        host = SHARES_CHILD_WITH.get(name, name)
        groups.setdefault(host if host in names else name, []).append(name)
    return [tuple(group) for group in groups.values()]


def probe_group(names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Ask the frameworks `names` in one child process; each answer is kept for this process.
    A framework that fails there raises UsageError when `probe` is asked for it."""
    for name in names:
        check_framework(name)
    cmd = [sys.executable, "-m", "rigbench.runner.probe", *names]
    try:
        # errors=replace: a native library may write bytes the locale cannot decode (on Windows
        # its ANSI code page leaves five undefined), and its warning must not end the command
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise UsageError(f"probing {', '.join(names)} took longer than {PROBE_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"{', '.join(names)} failed to start in a child process: {last}")
    found: dict[str, dict[str, Any]] = json.loads(proc.stdout)
    with _lock:
        _answers.update(found)
    return found


def probe(name: str) -> dict[str, Any]:
    """Framework `name`'s software and devices, asked in a child process once per process."""
    with _lock:
        answer = _answers.get(name)
    if answer is None:
        progress_log.info("asking %s which devices it can use (it starts in a child process: seconds)", name)
        answer = probe_group([name])[name]
    if "error" in answer:
        raise UsageError(f"{name} failed to start in a child process: {answer['error']}")
    return answer


if __name__ == "__main__":
    print(json.dumps(probe_here(sys.argv[1:])))
