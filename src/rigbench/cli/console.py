"""The command line's two consoles (stdout for results, stderr for everything else) and its
signs of long work: a progress bar and a spinner on a terminal, nothing where no bar is drawn."""

from __future__ import annotations

import codecs
import contextlib
import errno
import io
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

from rich.console import Console, ConsoleDimensions
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)
from rich.text import Text

from rigbench.textlimits import visible

# A terminal's tables fit its width (reports/table_fit.py). Into a file or a pipe rich would
# assume 80 columns; there tables are laid out PIPED_WIDTH wide, so rows keep their columns,
# unless COLUMNS is set: a width asked for (`COLUMNS=80 rigbench results list | less`) wins,
# in a terminal or not, and is read when printing (a test's CliRunner env sets it).
# markup=False: what is printed is often stored text (an error's "[enforce fail at ...]", a
# workload option), shown verbatim; styles are given as rich.text.Text, never as markup.
PIPED_WIDTH = 200


def columns_set() -> int | None:
    """The width COLUMNS asks for, or None where it is unset (or not a positive number)."""
    text = os.environ.get("COLUMNS", "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else None


class _Console(Console):
    """A Console whose plain-string lines have their control characters written out
    (textlimits.visible): notes and messages quote stored text (a device name, an error), and a
    stored ESC sequence must not act on the terminal. Tables and Text cells are already so.
    `piped_width`: its width into a file or a pipe, where COLUMNS does not say one."""

    def __init__(self, *args: Any, piped_width: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._piped_width = piped_width
        if kwargs.get("width") is None:
            self._width = None  # rich read COLUMNS once, here; `size` reads it at each print

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self._width is not None:  # given, or set (`console.width = 80`)
            return size
        columns = columns_set()
        if columns is not None:
            return ConsoleDimensions(columns, size.height)
        if self._piped_width is not None and not self.is_terminal:
            return ConsoleDimensions(self._piped_width, size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(visible(o) if isinstance(o, str) else o for o in objects), **kwargs)

    def on_broken_pipe(self) -> None:
        """rich would end the process here with exit 1 (what `no_answer` means); raised instead,
        the closed pipe ends the command as any write to it does (output_gone)."""
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


out = _Console(markup=False, piped_width=PIPED_WIDTH)
err = _Console(stderr=True, markup=False)


#: What a terminal whose encoding lacks a character shows instead (utf8_streams): one character
#: for one where a table's columns depend on it (a cut cell's "…", a rule's "─", a range's "–",
#: micro's "µ": "450 us"), more where only a line's end moves. Any other: its \u escape.
ASCII_STAND_INS = {"…": "~", "─": "-", "–": "-", "—": "-", "×": "x", "µ": "u", "·": ".", "‘": "'",
                   "’": "'", "“": '"', "”": '"', "→": "->", "←": "<-", "≥": ">=", "≤": "<=", "±": "+/-"}


def _stand_in(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start:error.end]
    return "".join(ASCII_STAND_INS.get(c, c.encode("ascii", "backslashreplace").decode()) for c in text), error.end


codecs.register_error("rigbench.stand_in", _stand_in)


def utf8_streams() -> None:
    """stdout and stderr write UTF-8 whatever the locale says, into a file or a pipe. Windows gives
    a redirected stream its ANSI code page (cp1252), which has no "→" or "≥" and few of the
    world's letters: `rigbench results export --format csv > r.csv` ended in a UnicodeEncodeError
    at the first such stored character. UTF-8 is what -o files hold, and Python's own default
    from 3.15 (PEP 686). A terminal keeps its encoding (PYTHONIOENCODING=ascii, a Latin-1 or a
    legacy Windows console): it shows that, and UTF-8 there was "â”€" for each "─". What it
    lacks is written as ASCII_STAND_INS says, and rich draws its tables' rules in ASCII."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.encoding.lower().replace("-", "") != "utf8":
            if stream.isatty():
                stream.reconfigure(errors="rigbench.stand_in")
            else:
                stream.reconfigure(encoding="utf-8", errors="backslashreplace")


#: The exit code where what read the output stopped reading (`| head -3`): 128 + SIGPIPE, what a
#: shell reports of `git log | head -3` or `ls | head -3`, whose processes SIGPIPE ends. Windows
#: has no SIGPIPE and no one code for this; 141 there too, as git for Windows exits (check_pipe:
#: with no SIGPIPE to raise, exit(141)) and Git Bash reports its tools: one code a script tests
#: for on every platform. Not 1, the exit of the recipe in Python's "Note
#: on SIGPIPE": rigbench's 1 means "no answer" (README, "Exit codes").
OUTPUT_GONE = 128 + getattr(signal, "SIGPIPE", 13)


def closed_pipe(exc: BaseException | None) -> bool:
    """Whether `exc` is a write that found its reader gone. Windows says so with EINVAL, not
    EPIPE (its C runtime turns the pipe's ERROR_NO_DATA into EINVAL: python/cpython#79935), as
    git for Windows reads it too (mingw_write). Only there, and only for an error without a file
    name (a write to a stream has none): on POSIX, EINVAL is a real error and stays one."""
    if isinstance(exc, BrokenPipeError):
        return True
    return (sys.platform == "win32" and isinstance(exc, OSError) and exc.errno == errno.EINVAL
            and exc.filename is None)


def output_gone() -> int:
    """A write to stdout or stderr found its reader gone (closed_pipe): the command ends
    silently with OUTPUT_GONE, as git and ls do, where Python printed a traceback (or click said
    nothing and exited 1, its code for "no answer"). SIGPIPE itself is left ignored, as Python
    sets it: it would also end the command mid-write to a database's socket. What was stored
    stays stored. The closed stream is pointed at os.devnull, so that the data still buffered
    for it cannot fail again at exit (the recipe of Python's "Note on SIGPIPE")."""
    out.quiet = err.quiet = True
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):  # click may have wrapped the first two
        if stream is None:
            continue
        try:
            stream.flush()
        except (OSError, ValueError):
            _discard(stream)
    return OUTPUT_GONE


def _discard(stream: Any) -> None:
    """Point `stream`'s file at os.devnull: what it still buffers cannot fail again at exit."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


#: What a write that found no room raises: a full disk or quota, a file past its size limit.
NO_ROOM = tuple(getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG") if hasattr(errno, name))


def output_failed(exc: OSError) -> int:
    """A write found no room (`rigbench results export > r.csv` on a full disk): one line on
    stderr saying which and why, exit 2 (as an --out that cannot be written), where a traceback
    of 50 lines was; what was stored stays stored. What stdout still holds goes to os.devnull,
    where it cannot fail again at exit."""
    out.quiet = True
    _discard(sys.stdout)
    print(f"rigbench: error: cannot write {exc.filename or 'the output'}: {exc.strerror}; what was stored "
          "stays stored", file=sys.stderr)
    return 2


def no_bar() -> bool:
    """Whether a progress bar must stay off: where stderr is not a terminal it is never drawn,
    yet rich ends it with a blank line, which put an empty line before an error's one line."""
    return not err.is_interactive


def progress_bar() -> Progress:
    """The bar of long work on stderr: what is going on, done/total, time so far; gone when done."""
    return Progress(TextColumn("{task.description}", markup=False), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                    TimeElapsedColumn(), console=err, transient=True, disable=no_bar())


def progressed(progress: Progress, task: TaskID, description: str, line: str, **update: Any) -> None:
    """How far long work has got: the bar's `description` (and any other `update` of its task) on
    a terminal; where no bar is drawn (a file, a pipe, a dumb terminal), `line` on stderr instead."""
    progress.update(task, description=description, **update)
    if no_bar():
        err.print(line, highlight=False, markup=False, soft_wrap=True)


@contextlib.contextmanager
def downloading() -> Iterator[Callable[[str, int, int | None], None]]:
    """A data set's download, followed by the `progress(file, bytes_done, bytes_total)` it yields:
    on a terminal a bar of bytes and speed per file; where no bar is drawn, a line as each file
    starts (or resumes) and at each tenth of it. Without it a 170 MB download said nothing.
    Interrupted mid-file, one line says what is kept (the `.part` the next run continues) and
    the command exits 130; before, it said "outside a trial: nothing was left half-done" and
    sent the user to list the results of a database not yet made."""
    progress = Progress(TextColumn("{task.description}", markup=False), BarColumn(), DownloadColumn(),
                        TransferSpeedColumn(), TimeElapsedColumn(), console=err, transient=True, disable=no_bar())
    tasks: dict[str, TaskID] = {}
    tenths: dict[str, int] = {}
    last: list[Any] = []  # the file under way and its bytes so far

    def line(text: str) -> None:
        if no_bar():
            err.print(f"  {text}", highlight=False, markup=False, soft_wrap=True)

    def shown(name: str, done: int, total: int | None) -> None:
        last[:] = [name, done, total]
        if name not in tasks:
            tasks[name] = progress.add_task(f"downloading {name}", total=total)
            size = f"{total:,} bytes" if total else "size not given"
            line(f"downloading {name} ({size})" + (f", resuming at {done:,}" if done else ""))
            tenths[name] = done * 10 // total if total else 0
        progress.update(tasks[name], completed=done, total=total)
        tenth = done * 10 // total if total else 0
        if tenth > tenths[name]:
            tenths[name] = tenth
            line(f"downloading {name}: {done:,} of {total:,} bytes ({tenth * 10}%)")

    try:
        with progress:
            yield shown
    except KeyboardInterrupt:
        if not last:  # before any download: the command's own interrupt line says it
            raise
        from rigbench.cli import interrupts

        name, done, total = last
        kept = (f"{name} came whole, and the next run checks it" if total and done >= total else
                f"its {done:,} bytes so far are kept in {name}.part, which the next run continues")
        err.print(f"interrupted ({interrupts.signal_name()}) while downloading {name}: {kept}; no trial was "
                  "started and no result stored", highlight=False, markup=False, soft_wrap=True)
        raise interrupts.interrupted_exit() from None


@contextlib.contextmanager
def working(text: str) -> Iterator[None]:
    """Seconds of work nothing else shows: a spinner saying `text` on a terminal, gone when done;
    nothing where no bar is drawn, where an error the work finds is one line alone. `text` is
    literal (it names a file the user gave): rich reads a str here as markup. Its braille dots
    are a turning line where the terminal's encoding has none (rich's bar turns ASCII itself)."""
    spinner = "line" if err.options.ascii_only else "dots"
    with err.status(Text(visible(text)), spinner=spinner) if not no_bar() else contextlib.nullcontext():
        yield
