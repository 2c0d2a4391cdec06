"""A signal's name for an error text, and the stop signals this OS has, for the launchers in the
parent, the trial's child, the warm-start server and the rank agent alike (a module of its own:
those processes must not import the launchers to name a signal)."""

from __future__ import annotations

import signal


def signal_name(number: int) -> str:
    """SIGSEGV for 11, and so on; "signal N" for a number Python does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


#: The NTSTATUS codes a Windows process that crashed exits with (its exit code, unsigned), named;
#: on POSIX an exit code is 0-255 and a signal a negative returncode, so these never meet one.
WINDOWS_CRASHES = {
    0xC0000005: "an access violation, a crash in native code",
    0xC000001D: "an illegal instruction (a build for another CPU?)",
    0xC0000017: "no memory: an allocation failed",
    0xC000009A: "insufficient system resources (memory or handles)",
    0xC00000FD: "a stack overflow",
    0xC0000135: "a DLL that could not be found",
    0xC0000139: "a DLL entry point that could not be found (a library of another version?)",
    0xC000013A: "a Ctrl-C or a closed console",
    0xC0000374: "a corrupted heap",
    0xC0000409: "a fail-fast exit (abort(), or a stack buffer overrun)",
}


def exit_code_text(code: int | None) -> str:
    """An exit code for an error text: "code 1"; a Windows crash's NTSTATUS in hex with its
    meaning, "code 0xC0000005 (an access violation, a crash in native code)", which as a
    decimal (3221225477) says nothing."""
    if code is None:
        return "no exit code"
    if 0xC0000000 <= code <= 0xFFFFFFFF:  # NTSTATUS of severity "error": Python reads it unsigned
        meaning = WINDOWS_CRASHES.get(code)
        return f"code 0x{code:08X}" + (f" ({meaning})" if meaning else " (a Windows error status)")
    return f"code {code}"


#: The signals that stop a command from outside, which this OS has (Windows: no SIGHUP):
#: a service manager's SIGTERM and a closed terminal's SIGHUP; STOPS with Ctrl-C's SIGINT.
TERMINATIONS: tuple[int, ...] = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
STOPS: tuple[int, ...] = (signal.SIGINT, *TERMINATIONS)
