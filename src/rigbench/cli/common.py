"""What every `rigbench` command shares: the typer app, its options, error handling, running
trials with progress (the consoles and the bar themselves: cli/console.py).

Each command group lives in its own module of this package and registers on `app`.
"""

from __future__ import annotations

import inspect
import shlex
import sys
from collections.abc import Callable, Sequence
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeGuard, cast

import typer
from pydantic import ValidationError
from typer.core import TyperGroup

from rigbench import __version__, api
from rigbench.cli.console import err, progress_bar, progressed
from rigbench.compile_modes import COMPILE_MODES, CompileMode, compile_mode
from rigbench.errors import UsageError, validation_line
from rigbench.frameworks import framework_names
from rigbench.numlimits import number_problem, seconds_problem
from rigbench.spec import ENERGY_MODES, PRECISIONS, Result
from rigbench.textlimits import visible
from rigbench.units import split_list
from rigbench.workloads import WORKLOADS, parse_workload_ref

# The database (SQLAlchemy), the tables (numpy, through the analysis) and the strategies are
# imported in the functions that use them, here and in every command module: `rigbench --help`
# and `--version` need none of them (docs/ARCHITECTURE.md, "Decisions"; tests/unit/test_startup_imports.py).
if TYPE_CHECKING:
    from sqlalchemy.exc import DBAPIError

    from rigbench.store import Store

#: The order `rigbench --help` and `rigbench results --help` list the commands in: a user's way
#: through them, from measuring to advice to what is stored. A command not named here comes last.
COMMAND_ORDER = ("run", "train", "sweep", "max-batch", "lr-find", "scaling", "recommend", "calibrate", "roofline",
                 "compare", "score", "results", "report", "workloads", "devices", "specs",
                 "list", "runs", "show", "export", "import", "flush")


class _OrderedCommands(TyperGroup):
    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        place = {name: k for k, name in enumerate(COMMAND_ORDER)}
        return sorted(names, key=lambda name: place.get(name, len(place)))


app = typer.Typer(
    help="Measure how well this machine trains neural networks, on every device it has.",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None, cls=_OrderedCommands,
    epilog="Start with `rigbench run --quick` (the reference networks on every device, a short protocol), then "
           "`rigbench recommend WORKLOAD` or `rigbench report`. `rigbench COMMAND --help` explains each.",
)
results_app = typer.Typer(help="Stored results: list trials, list runs, show one, export (JSON, CSV, bundle), import a bundle, flush the spool.",
                          no_args_is_help=True, cls=_OrderedCommands)
app.add_typer(results_app, name="results", short_help="Stored results: list, runs, show, export, import, flush.")

def db_flag(db: str | None) -> str:
    """` --db URL` for a next-step hint when the command was given one, without its password
    (PGPASSWORD or ~/.pgpass supplies it again: docs/fleet.md); "" without --db."""
    from rigbench.store.engine import url_without_password

    return f" --db {shlex.quote(url_without_password(db))}" if db else ""


def stored_text(results: Sequence[Result], db_url: str, run_id: str | None, db: str | None) -> str:
    """"Stored in URL (run ID)", or, where the database could not take some results and the
    spool kept them (a result without an id), how many of each and the command that stores them:
    a spooled result is kept, not stored."""
    spooled = sum(r.id is None for r in results)
    if not spooled:
        return f"Stored in {db_url} (run {run_id})."
    return (f"Stored {len(results) - spooled} of {len(results)} results in {db_url} (run {run_id}); {spooled} "
            f"(id -) could not be stored and were kept in the spool: `rigbench results flush{db_flag(db)}` stores "
            "them (so does the next command that opens this database).")


def all_of(shown: int, total: int, noun: str) -> str:
    """The line under a listing cut to --limit: how many there are, and how to see them all."""
    return f"The newest {shown} of {total} {noun} shown; all of them: --limit {total}."


def show_hint(results: Sequence[Result], db: str | None) -> str:
    """The `rigbench results show` that a user can copy as it is: the id of the one stored trial,
    or of the first with "any id of the table" where there are several. A literal `ID` was
    copied and refused as a typo; "" where nothing was stored (every result in the spool)."""
    ids = [r.id for r in results if r.id is not None]
    if not ids:
        return ""
    command = f"rigbench results show {ids[0]}{db_flag(db)}"
    return command if len(ids) == 1 else f"{command} (or any id of the table)"


DATASET_HELP = ("Real data set: digits, mnist, fashion_mnist, cifar10 or image_folder; byte-level text for the "
                "language models (lstm, gpt): pysrc (this Python's own sources, no download), tinyshakespeare, "
                "wikitext2 or ptb (default: the workload's reference data set).")
DATA_DIR_HELP = ("Where the data set's files are (default: data/NAME in rigbench's cache directory, e.g. "
                 "data/image_folder/ for your own images; for pysrc, this Python's standard library).")

ENERGY_HELP = ("measure: read energy counters only (default). estimate: also store a TDP x utilisation "
               "estimate, labelled as such, for sources without a counter; never mixed with measured figures.")


def listed_results(store: Store, run_id: str | None, workload: str | None, status: str | None,
                   limit: int, where: Sequence[str] = ()) -> tuple[list[Result], int]:
    """The newest `limit` stored results of `results list`'s filters, oldest first, and how many
    match in all. A workload with options (`resnet:depth=56`, as `run` takes it) matches trials
    of those option values, a default one included whether or not it was written out; `where`
    is the --where of `report` (api.parse_where)."""
    if workload is not None and not workload.strip():  # `--workload "$UNSET"` is no filter silently
        raise UsageError("--workload is empty: give a workload, e.g. cnn or resnet:depth=56")
    accepted = api.parse_where(where)
    exact = api.where_columns(accepted)
    if (workload is None or ":" not in workload) and set(accepted) == set(exact):  # SQL alone: only `limit` rows read
        rows = store.list(run_id=run_id, workload=workload, status=status, limit=limit, any_of=exact)
        return rows, store.count(run_id, workload, status, any_of=exact) if len(rows) == limit else len(rows)
    named, options = parse_workload_ref(workload) if workload is not None and ":" in workload else (None, {})

    def value(r: Result, key: str) -> Any:
        return r.spec.workload_options.get(key, named.options[key]) if named else None

    rows = store.list(run_id=run_id, workload=named.name if named else workload, status=status, any_of=exact)
    rows = [r for r in rows if all(value(r, k) == v for k, v in options.items()) and api.where_matches(r, accepted)]
    return rows[-limit:], len(rows)


def say_none_match(store: Store, filters: dict[str, Any], what: str = "results") -> None:
    """One line on stderr for a listing that found nothing: which filters matched nothing, or
    that the database holds no result yet (an empty table alone looks like a fault). A `--run`
    that names no stored run is a mistyped id, not an empty match: exit 2, as `report` says it;
    so is a `--workload` that is neither one of rigbench's workloads nor stored (an imported
    workload this rigbench does not define is still found)."""
    run_id = filters.get("--run")
    if run_id is not None and not store.commands([run_id]):
        raise UsageError(f"no run {run_id!r} in {store.url}: `rigbench results runs` lists the stored runs")
    workload = filters.get("--workload")
    workload = None if workload is None else workload.partition(":")[0]  # its options were checked
    if workload is not None and workload not in WORKLOADS and not store.list(workload=workload, limit=1):
        raise UsageError(f"--workload {workload!r} is neither a workload rigbench knows nor one stored in {store.url}: "
                         f"choose from {', '.join(WORKLOADS)}")
    given = " ".join(f"{flag} {value}" for flag, value in filters.items() if value is not None)
    said = f"no {what} match {given}" if given else f"no {what} stored yet"
    err.print(f"{said} in {store.url}", highlight=False, markup=False, soft_wrap=True)


def energy_option(default: str | None = "measure") -> Any:
    """The `--energy measure|estimate` option (MeasureOptions.energy), defined once for every
    command that runs trials. Annotate the parameter `EnergyMode`: typer makes the Literal a
    choice, and any other value is click's usage error (exit 2). `default` None lets a sweep
    file's `energy` key stand unless the flag is given."""
    return typer.Option(default, "--energy", metavar="|".join(ENERGY_MODES), help=ENERGY_HELP)


def framework_option(default: str | None = "torch", measure: bool = False, many: bool = False) -> Any:
    """The `--framework` option, defined once: its help names the registered frameworks
    (frameworks.FRAMEWORKS; `rigbench devices` shows which are installed). `default` None
    lets a sweep file's `framework` key stand unless the flag is given; `many` takes a list
    (repeated or comma-separated: one trial per framework), parsed with split_list."""
    names = ", ".join(framework_names())
    verb = "measure" if measure else "train"
    if many:
        suffix = "" if default is None else " (default torch)"
        return typer.Option(None, "--framework", metavar="NAME",
                            help=f"Framework(s) to {verb} with, repeated or comma-separated: {names}{suffix}. "
                                 f"`rigbench devices` shows which are installed.")
    suffix = "" if default else " (default torch)"
    return typer.Option(default, "--framework", metavar="NAME",
                        help=f"Framework to {verb} with: {names}{suffix}. `rigbench devices` shows which are installed.")


#: What a --where takes, said once for every command that filters by it (api.WHERE_KEYS).
_WHERE_KEY_NOTES = {"device_name": " (the device's model: a part of its name, in any case, e.g. device_name=h100)"}
WHERE_KEYS_HELP = "Keys: " + ", ".join(key + _WHERE_KEY_NOTES.get(key, "") for key in api.WHERE_KEYS) + "."
WHERE_HELP = ("Keep trials where KEY is VALUE; repeatable (same key: either value; different keys: all). "
              + WHERE_KEYS_HELP)

DB_HELP = "Database: an SQLAlchemy URL (sqlite:///x.db, postgresql://...) or a file path. Default: $RIGBENCH_DB or rigbench.db in the user data directory."


#: The flags that are durations in seconds, bounded by numlimits.MAX_SECONDS.
DURATION_FLAGS = ("--timeout", "--seconds")


def _flag_names(fn: Callable) -> dict[str, str]:
    """Parameter name -> how the user wrote it: an option's long flag, an argument's metavar."""
    names = {}
    for name, param in inspect.signature(fn).parameters.items():
        decls = [d for d in getattr(param.default, "param_decls", None) or () if d.startswith("--")]
        names[name] = decls[0] if decls else getattr(param.default, "metavar", None) or name.upper()
    return names


def _check_numbers(flags: dict[str, str], values: dict[str, Any]) -> None:
    """Every typed number given to a command within numlimits' bounds (the one rule set the
    TrialSpec and the sweep files follow), named by its flag: before any work starts."""
    for name, value in values.items():
        flag = flags.get(name, name)
        problem = number_problem(value)
        if problem is None and flag in DURATION_FLAGS and isinstance(value, (int, float)):
            problem = seconds_problem(value)
        if problem:
            raise UsageError(f"{flag} {problem}")


def _check_db(db: Any) -> None:
    """A `--db` that names a lasting database: an in-memory SQLite one is gone when the command
    ends, so `run` said "Stored in sqlite://" and suggested a `results show` that found nothing.
    (The library takes one: a program that keeps its Store keeps the database.)"""
    if not (isinstance(db, str) and db.strip().lower().startswith("sqlite")):
        return
    from rigbench.store.engine import resolve_db_url, sqlite_file

    if sqlite_file(resolve_db_url(db)) is None:
        raise UsageError(f"--db {db} is an in-memory database, gone when the command ends: give a file, "
                         "e.g. --db results.db")


def handles_usage_errors(fn: Callable) -> Callable:
    """Bad input: one line naming what to change, exit code 2. Numbers out of numlimits' bounds
    are refused before the command runs; a pydantic ValidationError that gets past a command's
    own checks (a TrialSpec it builds) is bad input too, never a traceback."""
    flags = _flag_names(fn)

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            _check_numbers(flags, kwargs)
            _check_db(kwargs.get("db"))
            return fn(*args, **kwargs)
        except UsageError as exc:
            _error_line(str(exc))
            raise typer.Exit(2) from None
        except ValidationError as exc:
            _error_line(f"invalid setting: {validation_line(exc)}")
            raise typer.Exit(2) from None
        except Exception as exc:
            if not _database_failed(exc):
                raise
            from rigbench.store.engine import error_text

            _error_line(f"the database failed: {error_text(exc)}: check the --db you gave (a file another "
                        "program changed?); what was stored before stays stored")
            raise typer.Exit(2) from None
    return wrapper


def _error_line(text: str) -> None:
    """`rigbench: error: TEXT` on stderr: one line, never wrapped, its control characters written
    out (textlimits.visible), as the consoles write theirs: it quotes what was given or stored
    (a --db path, a bundle's names), and an ESC there acted on the terminal."""
    print(f"rigbench: error: {visible(text)}", file=sys.stderr)


def _database_failed(exc: Exception) -> TypeGuard[DBAPIError]:
    """A DBAPIError, what the store's own checks let through (a table dropped by hand). Asked
    of SQLAlchemy only where a command loaded it: one that opened no database raised none."""
    sqlalchemy_exc = sys.modules.get("sqlalchemy.exc")
    return sqlalchemy_exc is not None and isinstance(exc, sqlalchemy_exc.DBAPIError)


def no_answer(why: str) -> typer.Exit:
    """The exit of a command that ran but could not give what it was asked for (README, "Exit
    codes": no suggested rate, no batch that fits, no training run that ended ok, no speed-up,
    no device and batch to recommend): one line on stderr saying why, and exit code 1, so that
    a script stops there instead of reading on. What it printed and stored stands. Raise it."""
    err.print(f"rigbench: {why}", highlight=False, markup=False, soft_wrap=True)
    return typer.Exit(1)


def _check_precision(precision: str, devices: Sequence[str] = ()) -> None:
    """A known precision, and one the named `devices` can run: tf32 is an NVIDIA GPU format,
    which every adapter refuses (`unsupported`) anywhere but on CUDA. Known from the names
    alone, it is bad input, said before any trial."""
    if precision not in PRECISIONS:
        raise UsageError(f"--precision must be {', '.join(PRECISIONS[:-1])} or {PRECISIONS[-1]}, got {precision!r}")
    other = next((d for d in devices if precision == "tf32" and not d.startswith("cuda")), None)
    if other is not None:
        from rigbench.experiments.plan import tf32_off_cuda

        raise UsageError(tf32_off_cuda(other))


#: On/off words the switch flags take (`--channels-last off,on`, `--compile off,on`).
SWITCHES = {"off": False, "on": True, "false": False, "true": True, "no": False, "yes": True,
            "0": False, "1": True}
#: --compile-mode's help: what each torch.compile mode does (spec.CompileMode).
COMPILE_MODE_HELP = ("torch.compile's mode: default, reduce-overhead (replays the step as CUDA graphs, for "
                     "launch-bound small networks on a GPU; a CPU has no CUDA graphs), max-autotune (also "
                     "benchmarks kernel choices; CUDA graphs too), max-autotune-no-cudagraphs")


def parse_compile(values: list[str] | None, flag: str, switches: bool = True) -> list[CompileMode]:
    """Compile settings from the command line, in order: off and on (torch.compile's default
    mode, XLA in TensorFlow and Keras) where `switches`, and torch.compile's modes by name."""
    modes = COMPILE_MODES if switches else COMPILE_MODES[1:]
    settings: list[CompileMode] = []
    for part in split_list(values, flag):
        word = part.lower()
        mode = compile_mode(SWITCHES[word]) if switches and word in SWITCHES else word
        if mode not in modes:
            words = "off, on or a torch.compile mode" if switches else "a torch.compile mode"
            raise UsageError(f"{flag} takes {words} ({', '.join(COMPILE_MODES[1:])}), got {part!r}")
        settings.append(cast(CompileMode, mode))
    return settings


def _version(value: bool) -> None:
    if value:
        print(f"rigbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """rigbench: trustworthy training benchmarks for this machine."""


def open_store_for(specs: list[Any], db: str | None) -> None:
    """Before any trial: refuse a value the database cannot store (store/limits.py), then open
    (and validate) the database, so neither costs a measured result."""
    from rigbench.store import Store
    from rigbench.store.limits import check_storable

    check_storable(specs)
    Store(db)


def _run_with_progress(specs: list[Any], db: str | None) -> api.RunOutcome:
    """Run trials with a progress bar and one line per finished trial, all on stderr; the bar
    says which trial and the phase it is in (runner/epoch_lines.py). Where stderr is not a
    terminal (no bar is drawn), each phase and each finished epoch of a training run is a line."""
    from rigbench.reports import terminal

    open_store_for(specs, db)
    progress = progress_bar()
    count = len(specs)

    def line(i: int, text: str) -> str:  # "[2/5]" only where there is more than one trial
        place = f"[{i + 1}/{count}] " if count > 1 else ""
        return f"  {place}{specs[i].label()}: {text}"

    with progress:
        task = progress.add_task("starting", total=count)

        def started(i: int, spec: Any) -> None:
            progress.update(task, description=f"trial {i + 1}/{count}: {spec.label()}")

        def advanced(i: int, text: str) -> None:  # a phase, or a training run's newest epoch
            progressed(progress, task, f"trial {i + 1}/{count}: {specs[i].label()}: {text}", line(i, text))

        def ended(i: int, result: Any) -> None:
            progress.advance(task)
            err.print(line(i, terminal.one_line_outcome(result)), highlight=False, markup=False, soft_wrap=True)

        return api.run(specs, db=db, on_trial_start=started, on_trial_end=ended, on_trial_progress=advanced)
