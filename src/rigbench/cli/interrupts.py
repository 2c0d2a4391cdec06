"""Ctrl-C, SIGTERM and SIGHUP: one way to stop a command, one way to say what was kept.

The `rigbench` command turns SIGTERM and SIGHUP into the KeyboardInterrupt that Ctrl-C raises,
so every command stops the same way: the trial in flight is ended (a training run first
reports its finished epochs: status `interrupted`), the finished ones are already stored, and
one line says exactly what was kept. The exit code is 128 + the signal (130 for Ctrl-C, 143
for SIGTERM), as a shell reports a process the signal ended.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import Any

import typer

from rigbench.runner.signal_names import TERMINATIONS
from rigbench.spec import Result, TrialSpec

#: The signal that interrupted the command, whether one did, and whether the command said what
#: it kept (interrupted_exit) or left that to `unsaid_exit`.
_received = {"signum": int(signal.SIGINT), "got": False, "said": False}
#: Seconds before an interrupt swallowed by a finaliser is sent again (_redeliver).
REDELIVER_S = 0.05


def _as_interrupt(signum: int, _frame: FrameType | None) -> None:
    _received["signum"], _received["got"] = signum, True
    raise KeyboardInterrupt


def _redeliver(unraisable: Any) -> None:
    """sys.unraisablehook: an interrupt that landed in a finaliser (a weakref callback run by
    the garbage collector, seen in SQLAlchemy's) is printed and ignored by Python, and the
    command would go on as if no signal had come (a SIGTERM'd sweep ran to its end, exit 0).
    Send the signal again a moment later, from another thread, so that it lands after the
    finaliser (sent at once, it landed in this hook, which swallows it the same way); anything
    else goes to the usual hook."""
    if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
        later = threading.Timer(REDELIVER_S, _send_again, (_received["signum"],))
        later.daemon = True
        later.start()
        return
    sys.__unraisablehook__(unraisable)


def _send_again(signum: int) -> None:
    """The signal to this process again: kill() on POSIX (the kernel then interrupts the main
    thread's wait), raise_signal on Windows, where os.kill(own pid, SIGINT) is TerminateProcess:
    the command ended on the spot, its trial's child left running."""
    if os.name == "posix":
        os.kill(os.getpid(), signum)
    else:
        signal.raise_signal(signum)


def install() -> None:
    """SIGTERM and SIGHUP interrupt the command as Ctrl-C does (main thread only), and an
    interrupt that a finaliser swallowed is delivered again."""
    if threading.current_thread() is not threading.main_thread():
        return
    sys.unraisablehook = _redeliver
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where it is ignored (nohup, `&`)
        signal.signal(signal.SIGINT, _as_interrupt)  # the same KeyboardInterrupt, noted
    for sig in TERMINATIONS:
        signal.signal(sig, _as_interrupt)


def exit_code() -> int:
    """128 + the signal that interrupted the command."""
    return 128 + _received["signum"]


def signal_name() -> str:
    signum = _received["signum"]
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


def kept_text(results: Sequence[Result], total: int, noun: str, stopped: TrialSpec | None,
              where: str) -> str:
    """One line: what finished and was stored (`where`: the database and run), which training
    run kept its finished epochs, what was stopped and not stored, and what never started."""
    finished = [r for r in results if r.status != "interrupted"]
    parts = [f"interrupted ({signal_name()})"]
    spooled = sum(r.id is None for r in finished)  # the database could not take them: the spool kept them
    if finished and spooled:
        parts.append(f"{len(finished)} of {total} {noun}s finished: {len(finished) - spooled} stored in {where}, "
                     f"{spooled} kept in the spool (`rigbench results flush` stores them)")
    elif finished:
        parts.append(f"{len(finished)} of {total} {noun}s finished and {'was' if len(finished) == 1 else 'were'} "
                     f"stored in {where}")
    elif len(results) == 0:
        parts.append(f"no {noun} had finished: nothing was stored")
    for r in results:
        if r.status == "interrupted":
            planned = r.spec.train.epochs if r.spec.train else "?"
            parts.append(f"{r.spec.label()} stopped after {r.metrics.epochs or 0} of {planned} epochs: "
                         f"the finished epochs are stored as trial {r.id} (status interrupted) in {where}")
    if stopped is not None:
        why = " (no epoch had finished)" if stopped.train is not None else ""
        parts.append(f"{stopped.label()} was stopped and not stored{why}")
    left = total - len(results) - (stopped is not None)
    if left > 0:
        parts.append(f"{left} not started")
    return "; ".join(parts)


def again(*extra: str) -> str:
    """This command as typed, plus `extra` flags it lacks, to print for running it again after an
    interrupt: a database URL without its password (libpq then reads it from PGPASSWORD)."""
    from rigbench.store.engine import hint_argv

    args = hint_argv(sys.argv[1:])
    return "rigbench " + shlex.join(args + [flag for flag in extra if flag not in args])


#: The spec fields a list flag of `train` varies, and that flag's spellings (the first is printed).
LIST_FLAGS = {"lr": ("--lr",), "batch_size": ("--batch-size", "-b"), "device": ("--device", "-d"),
              "framework": ("--framework",)}


def rest_command(specs: Sequence[TrialSpec], results: Sequence[Result]) -> str | None:
    """The command that runs what an interrupted list of runs (`train --lr 0.01,0.1`) did not
    finish: this one, its list flags narrowed to the values left. None where every run finished,
    or where what is left is not one product of lists (then no single command runs just it)."""
    done = {r.spec.model_dump_json() for r in results if r.status != "interrupted"}
    left = [s for s in specs if s.model_dump_json() not in done]
    varied = [field for field in LIST_FLAGS if len({getattr(s, field) for s in specs}) > 1]
    values = {field: list(dict.fromkeys(getattr(s, field) for s in left)) for field in varied}
    size = 1
    for field in varied:
        size *= len(values[field])
    if not left or not varied or size != len(left):
        return None
    args, skip = [], False
    for arg in sys.argv[1:]:
        flag = next((f for field in varied for f in LIST_FLAGS[field] if arg == f or arg.startswith(f + "=")
                     or (len(f) == 2 and arg.startswith(f) and not arg.startswith("--"))), None)  # -b32
        if skip or flag is not None:
            skip = flag is not None and arg == flag  # `--lr 0.1`: its value is the next argument
            continue
        args.append(arg)
    for field in varied:
        args += [LIST_FLAGS[field][0], ",".join(map(str, values[field]))]  # str(float): every digit, the same spec
    from rigbench.store.engine import hint_argv

    return "rigbench " + shlex.join(hint_argv(args))


def interrupted_exit() -> typer.Exit:
    """The exit that ends an interrupted command (raise it), once it has said what it kept."""
    _received["said"] = True
    return typer.Exit(exit_code())


def _listing() -> str:
    """`rigbench results list`, with the command's --db (its password left out): without it, the
    listing read the default database, not the one the command was storing in."""
    from rigbench.store.engine import hint_argv

    args = hint_argv(sys.argv[1:])
    given = [["--db", args[i + 1]] for i, arg in enumerate(args[:-1]) if arg == "--db"]
    given += [[arg] for arg in args if arg.startswith("--db=")]
    return shlex.join(["rigbench", "results", "list", *(given[-1] if given else [])])


def unsaid_exit() -> int:
    """For an interrupt no command handled: one that came before the command started (typer
    builds every command first), during its set-up, or once its trials were over (the summary
    it prints; outside a trial, runner/session.py), or of a command that runs none (report).
    Says so in one line on stderr and returns the exit code. Every trial a session finished is
    stored by then, and none was running."""
    print(f"interrupted ({signal_name()}) outside a trial: nothing was left half-done, and every result stored "
          f"before it stays stored (`{_listing()}` shows them)", file=sys.stderr)
    return exit_code()


def unsaid(code: Any) -> bool:
    """Whether an exit with `code` is an interrupt no command said anything of: typer ends a
    KeyboardInterrupt with 130 (click, before, with "Aborted!" and 1)."""
    return bool(_received["got"]) and not _received["said"] and code in (1, 130)
