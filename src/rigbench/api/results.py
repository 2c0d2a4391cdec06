"""Choosing stored results (`--run`, `--where`) and the HTML report (`rigbench report`)."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rigbench.errors import UsageError
from rigbench.spec import Result

if TYPE_CHECKING:  # imported where used: the CLI's --where help reads WHERE_KEYS before any command runs
    from rigbench.store import Store

#: `--where KEY=VALUE` keys and how each reads a Result. Each matches its value exactly but
#: those in WHERE_PARTS.
WHERE_KEYS: dict[str, Callable[[Result], Any]] = {
    "workload": lambda r: r.spec.workload,
    "device": lambda r: r.spec.device,
    "device_name": lambda r: r.device_name or "",
    "framework": lambda r: r.spec.framework,
    "precision": lambda r: r.spec.precision,
    "status": lambda r: r.status,
    "batch_size": lambda r: str(r.spec.batch_size),
    "world_size": lambda r: str(r.spec.world_size),  # the data-parallel processes of a trial (1: one)
}
#: Keys that take a whole number, matched as a number (`batch_size=064` is 64).
WHERE_NUMBERS = frozenset({"batch_size", "world_size"})
#: Keys matched on a part of the stored value, in any case: `device` is `cuda:0` on an H100 and
#: an H200 alike, and `device_name=h100` picks "NVIDIA H100 80GB HBM3" (any H100: PCIe, SXM, NVL)
#: without its exact spelling. A trial that stored no device name matches no device_name.
WHERE_PARTS = frozenset({"device_name"})


def parse_where(filters: Sequence[str]) -> dict[str, set[str]]:
    """`["device=cpu", "workload=cnn", "workload=mlp"]` -> {key: accepted values}. A key
    given twice accepts either value; different keys must all match."""
    accepted: dict[str, set[str]] = {}
    for text in filters:
        key, sep, value = text.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not value:
            raise UsageError(f"--where {text!r} must be KEY=VALUE, e.g. --where device=cpu")
        if key not in WHERE_KEYS:
            raise UsageError(f"unknown --where key {key!r}: use {', '.join(WHERE_KEYS)} "
                             f"(device_name: a part of the device's name, e.g. device_name=h100)")
        if key in WHERE_NUMBERS and not value.isdigit():
            raise UsageError(f"--where {text!r}: {key} must be a whole number")
        accepted.setdefault(key, set()).add(str(int(value)) if key in WHERE_NUMBERS else value)
    return accepted


def where_columns(accepted: dict[str, set[str]]) -> dict[str, set[Any]]:
    """The keys of parse_where's `accepted` that SQL can filter on (Store.list's `any_of`): the
    exact ones, each a trials column holding the value WHERE_KEYS reads. A fleet's database is
    filtered before its rows are read; where_matches still decides."""
    return {key: {int(v) for v in values} if key in WHERE_NUMBERS else set(values)
            for key, values in accepted.items() if key not in WHERE_PARTS}


def where_matches(result: Result, accepted: dict[str, set[str]]) -> bool:
    """Whether `result` passes every key of parse_where's `accepted` (one of each key's values)."""
    for key, values in accepted.items():
        value = WHERE_KEYS[key](result)
        if key in WHERE_PARTS:
            if not any(v.casefold() in value.casefold() for v in values):
                return False
        elif value not in values:
            return False
    return True


def recommend_target(command: str) -> tuple[str, str] | None:
    """(workload, framework) of a stored `rigbench recommend WORKLOAD [--framework F]` command
    line, else None."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    names = [Path(w).name for w in words]
    if "recommend" not in names:
        return None
    rest = words[names.index("recommend") + 1:]
    framework = "torch"
    for i, word in enumerate(rest):
        if word == "--framework" and i + 1 < len(rest):
            framework = rest[i + 1]
        elif word.startswith("--framework="):
            framework = word.partition("=")[2]
    workload = next((w for w in rest if not w.startswith("-")), None)
    return (workload, framework) if workload else None


def recommendations(results: Sequence[Result], machines: dict[str, dict | None],
                    commands: dict[str, str]) -> dict[str, str]:
    """workload -> the one-line recommendation, for each workload a stored `rigbench recommend`
    run covers (the newest such run), decided from the selected results of that run's machine
    and naming that machine (its GPUs, else its CPU)."""
    from rigbench.analysis.summary import machine_identity, recommendation_text
    from rigbench.experiments.recommend import stored_recommendation

    out: dict[str, str] = {}
    for run_id, command in commands.items():  # oldest first: a newer run replaces an older one
        target = recommend_target(command)
        if target is None:
            continue
        same = machine_identity(machines.get(run_id))
        mine = [r for r in results if machine_identity(machines.get(r.run_id)) == same]
        try:
            text = recommendation_text(stored_recommendation(mine, *target, commands=commands))  # its searches' limits
        except UsageError:  # a workload this rigbench does not know
            continue
        if text:
            machine = machines.get(run_id) or {}
            where = "; ".join(str(g.get("name")) for g in machine.get("gpus") or []) or machine.get("cpu_model")
            out[target[0]] = f"on {where}: {text}" if where else text
    return out


@dataclass
class ReportOutcome:
    """What `report` wrote: the page, how many trials it covers, its chart ids, the PNGs."""

    path: str
    trials: int
    charts: list[str]
    pngs: list[str]
    size_bytes: int
    screenshot: str | None = None


def select_results(store: Store, run_ids: Sequence[str] = (), where: Sequence[str] = ()) -> list[Result]:
    """Stored results of `run_ids` (default: all) that match every `--where`, oldest first;
    UsageError when a run has no results or nothing matches."""
    accepted = parse_where(where)
    exact = where_columns(accepted)
    results: list[Result] = []
    for run_id in dict.fromkeys(run_ids) or [None]:
        found = store.list(run_id=run_id, any_of=exact)
        if run_id is not None and not found and not (exact and store.list(run_id=run_id)):
            raise UsageError(f"no results stored for --run {run_id!r} in {store.url}: "
                             f"`rigbench results runs` lists the stored runs")
        results.extend(found)
    results.sort(key=lambda r: r.id or 0)
    results = [r for r in results if where_matches(r, accepted)]
    if not results and not where:
        raise UsageError(f"no results stored in {store.url}: run `rigbench run` first")
    if not results:
        scope = f"runs {', '.join(run_ids)}" if run_ids else "the database"
        raise UsageError(f"no results in {scope} ({store.url}) match "
                         f"{' '.join(f'--where {w}' for w in where)}")
    return results


def report(out: str, db: str | None = None, run_ids: Sequence[str] = (),
           where: Sequence[str] = (), png_dir: str | None = None,
           screenshot: str | None = None) -> ReportOutcome:
    """Write the self-contained HTML report of the stored results of `run_ids` (default:
    all) that match `where` to `out`, with `png_dir` each chart as a PNG there, and with
    `screenshot` a PNG of the page's top as Chromium draws it (reports/screenshot.py)."""
    parse_where(where)  # a bad filter fails before anything is imported or read
    if screenshot is not None:  # as a bad screenshot name: not after the report is written
        from rigbench.reports.screenshot import check_png_path
        check_png_path(screenshot)
    try:  # optional dependencies: only the report needs them
        from rigbench.reports import html
        if png_dir is not None:
            from rigbench.reports import png
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in ("plotly", "jinja2", "markupsafe", "matplotlib"):
            raise UsageError(f"the report needs {exc.name.split('.')[0]}: "
                             f"pip install 'rigbench[report]'") from None
        raise
    from rigbench.store import Store
    from rigbench.store.calibrations import device_calibrations

    store = Store(db, create=False)
    results = select_results(store, run_ids, where)
    made: Path | None = None  # the --png folder this call made, removed again if the page cannot be written
    if png_dir is not None:  # a file, or a folder that cannot be made, fails before the page is drawn
        png_folder = Path(png_dir)
        if png_folder.exists() and not png_folder.is_dir():
            raise UsageError(f"--png {png_dir} is a file: give a folder for the PNGs, e.g. figures/")
        made = None if png_folder.exists() else png_folder
        try:
            png_folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot write --png {png_dir}: {exc.strerror}") from None
    machines = {run_id: store.machine(run_id) for run_id in dict.fromkeys(r.run_id for r in results)}
    commands = store.commands(list(machines))
    page, charts = html.render(results, machines, filters=list(where),
                               calibrations=device_calibrations(store, results), commands=commands,
                               recommendations=recommendations(results, machines, commands))
    try:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(page)
    except OSError as exc:
        if made is not None:
            made.rmdir()
        raise UsageError(f"cannot write --out {out}: {exc.strerror}") from None
    try:
        pngs = [str(p) for p in png.write_pngs(charts, png_dir)] if png_dir is not None else []
    except OSError as exc:
        raise UsageError(f"cannot write --png {png_dir}: {exc.strerror}") from None
    if screenshot is not None:
        from rigbench.reports.screenshot import screenshot as take_screenshot
        take_screenshot(out, screenshot)
    return ReportOutcome(str(out), len(results), [c.id for c in charts], pngs, len(page.encode()),
                         screenshot)
