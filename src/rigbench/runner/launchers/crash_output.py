"""What a trial's child left on stderr, read back for its error when it ended without a report.

The child enables faulthandler (runner/child.py), so a native crash (SIGSEGV, SIGABRT, SIGBUS,
SIGFPE, SIGILL) prints every Python thread's stack after whatever the native library said
("terminate called after throwing an instance of 'std::bad_alloc'", a failed check). The
tail keeps both: what came before the dump (at least `BEFORE_SHARE` of the room: launchers/
steps.describe_exit reads out-of-memory texts there) and the dump's top (the fatal error, each
thread's newest frames first), without its noise: the list of extension modules (several KB once
a framework is loaded) and the frames of threading's and runpy's start-up code.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from rigbench.runner.epoch_lines import without_phases

#: Characters of a child's stderr kept when it dies without a report.
STDERR_TAIL_CHARS = 2000
#: Bytes read from the end of the file: the tail, a dump and its module list.
READ_BYTES = 64 * 1024
#: faulthandler's first line.
FAULT_HEADER = "Fatal Python error: "
#: The least share of the room kept for what stderr said before a fault's dump.
BEFORE_SHARE = 0.25
#: Lines of a dump that say nothing about the trial.
_NOISE_PREFIXES = ("Extension modules: ",)
_NOISE_FILES = ("/threading.py\"", "\"<frozen runpy>\"")
#: Lines of a native library's own stack trace: absl's after a failed check (JAX's coordination
#: client aborting when node 0 went away: a dozen `@ 0x7f...` lines filled the room kept for what
#: came before the dump, cutting the check's message to its last words) and torch's C++ frames.
_NATIVE_FRAME = re.compile(r"\s*(@\s+0x[0-9a-f]+\s|frame #\d+: |<omitting python frames>|\*\*\* Check failure stack trace)")


def stderr_tail(path: Path, chars: int = STDERR_TAIL_CHARS) -> str:
    """The end of a child's stderr file in at most `chars` characters ("" if there is none),
    without rigbench's own phase lines (runner/epoch_lines.py). Reads only the file's end: a
    chatty child can write megabytes of warnings."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - max(READ_BYTES, 4 * chars)))  # UTF-8: at most 4 bytes a character
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return fitted_tail(without_phases(text), chars)


def without_frames(text: str) -> str:
    """`text` with its Python tracebacks' frames left out (each `File ...` line and the source and
    caret lines under it), keeping every exception's line. A launch agent's failed rendezvous is a
    chain of exceptions whose cause comes first (torch: EADDRINUSE, a refused connection), and
    the frames of the last one alone would fill a tail."""
    kept: list[str] = []
    in_frame = False
    for line in text.splitlines(keepends=True):
        if line.startswith("  File "):
            in_frame = True
        elif not (in_frame and line.startswith("    ")):
            in_frame = False
            if not line.startswith("Traceback (most recent call last):"):
                kept.append(line)
    return "".join(kept)


def fitted_tail(text: str, chars: int = STDERR_TAIL_CHARS) -> str:
    """`text`'s end in `chars` characters; with a faulthandler dump, the dump without its noise
    after the end of what came before it (module docstring), and without native stack frames."""
    text = "".join(line for line in text.splitlines(keepends=True) if not _NATIVE_FRAME.match(line))
    before, header, dump = text.rpartition(FAULT_HEADER)
    if not header:
        return text[-chars:]
    dump = header + "".join(line for line in dump.splitlines(keepends=True) if not _noise(line))
    before = before[-max(int(chars * BEFORE_SHARE), chars - len(dump)):] if before else ""
    return before + dump[:chars - len(before)]


def _noise(line: str) -> bool:
    stripped = line.lstrip()
    return stripped.startswith(_NOISE_PREFIXES) or (stripped.startswith("File ") and
                                                    any(name in stripped for name in _NOISE_FILES))
