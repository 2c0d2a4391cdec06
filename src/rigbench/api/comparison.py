"""Against known results (issue 5): published tables, run against run, results bundles.
Imports are local so that `import rigbench.api` stays cheap."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigbench.api.results import parse_where, where_matches
from rigbench.errors import UsageError
from rigbench.fingerprint import instruction_sets, machine_key
from rigbench.spec import CONFIG_FIELDS, Result
from rigbench.store import Store
from rigbench.store.this_machine import most_common_machine, other_machines_count
from rigbench.store.this_machine import this_machine_results as this_machine_results  # rigbench.api offers it


def other_machines_results(db: str | None = None) -> int:
    """How many stored results other machines measured (imported bundles, a fleet's database):
    what "this machine's results" leave out, for a command that found none of its own."""
    return other_machines_count(Store(db, create=False))


def _selected_results(store: Store, run_ids: Sequence[str]) -> list[Result]:
    """The results of `run_ids`, or every stored result of this machine when none is given."""
    if not run_ids:
        return this_machine_results(store)
    results = [r for run_id in dict.fromkeys(run_ids) for r in store.list(run_id=run_id)]
    if not results:
        calibrated = [run_id for run_id in run_ids if calibrate_run_text(store, run_id)]
        raise UsageError(calibrate_run_text(store, calibrated[0]) if calibrated else
                         f"no results stored for --run {', '.join(run_ids)} in {store.url}")
    return results


def calibrate_run_text(store: Store, run_id: str) -> str | None:
    """Why a stored run with no trials has none, where it is a `rigbench calibrate` run (`results
    runs` lists it, so "no results stored for run" sent the reader looking); None otherwise."""
    from rigbench.store.calibrations import list_calibrations

    if not list_calibrations(store, run_id=run_id):
        return None
    return f"run {run_id!r} is a `rigbench calibrate` run, with no trials (`rigbench roofline` reads its peaks)"


def compare_published(db: str | None = None, sources: Sequence[str] = (), run_ids: Sequence[str] = (),
                      all_frameworks: bool = False) -> Any:
    """This machine's results (or those of `run_ids`) beside the published tables
    (analysis/published.py); returns a PublishedComparison."""
    from rigbench.analysis.peaks import peak_resolver
    from rigbench.analysis.published import compare_published as _compare
    from rigbench.analysis.published_tables import SOURCES

    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise UsageError(f"unknown published source {unknown[0]!r}: choose from {', '.join(SOURCES)}")
    store = Store(db, create=False)
    results = _selected_results(store, run_ids)
    # our peaks are calibrated on the machine our trials ran on: `--run` may name another's
    return _compare(results, sources, peak_resolver(store, most_common_machine(store, results)),
                    all_frameworks=all_frameworks, machines=_machines(store, results))


def _machines(store: Store, results: Sequence[Result]) -> dict[str, Any]:
    """run id -> its machine's fingerprint, for the runs of `results`: which machine's device a
    trial ran on, where `--run` names runs of more than one (analysis/trials.device_key)."""
    return {run_id: store.machine(run_id) for run_id in dict.fromkeys(r.run_id for r in results)}


def compare_frameworks(db: str | None = None, workloads: Sequence[str] = (), run_ids: Sequence[str] = (),
                       batch_size: int | None = None, precisions: Sequence[str] = ()) -> Any:
    """Frameworks side by side per workload, the thesis's Table 5 layout, over this machine's
    results (or those of `run_ids`); returns analysis.frameworks.FrameworkTable rows, one per
    workload and set of options. `workloads`: names (every option set measured) or
    NAME:key=value refs (those options only), validated like `rigbench run`'s. `precisions`
    (default every one measured): the precisions whose tables to keep."""
    from rigbench.analysis.frameworks import framework_tables
    from rigbench.store.calibrations import device_calibrations
    from rigbench.workloads import parse_workload_ref

    wanted: list[str | tuple[str, dict]] = []
    for text in workloads:
        ref, options = parse_workload_ref(text)  # UsageError naming what exists
        wanted.append((ref.name, options) if ":" in text else ref.name)
    if batch_size is not None and batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    store = Store(db, create=False)
    results = _selected_results(store, run_ids)
    return framework_tables(results, wanted, batch_size, device_calibrations(store, results), precisions,
                            machines=_machines(store, results))


@dataclass
class CompareOutcome:
    """`rigbench compare A B`: the pairs of equal configurations, the trials of each side that
    had none, and what each side was."""

    pairs: list[Any]             # analysis.compare.Pair
    only_a: list[Any]            # analysis.compare.Unpaired
    only_b: list[Any]
    label_a: str
    label_b: str
    same_machine: bool
    machine_a: str
    machine_b: str


def _is_file(ref: str | None) -> bool:
    from pathlib import Path

    return ref is not None and Path(ref).is_file()


def side_results(store: Store | None, ref: str | None, where: Sequence[str], name: str) -> tuple[list[Result], dict[str, Any], str]:
    """Results with raw samples for one side of `compare`: a run id, a bundle file or all
    stored results, filtered by --where; with the machine of each run. `store` may be None
    only when `ref` is a bundle file."""
    from rigbench.store.bundle import load_bundle

    accepted = parse_where(where)
    machines: dict[str, Any] = {}
    if ref is not None and _is_file(ref):
        bundle = load_bundle(ref)
        results = [r for r in bundle.results if where_matches(r, accepted)]
        machines = {r.id: r.machine for r in bundle.runs}
        label = f"bundle {ref}"
    else:
        if store is None:  # compare() opens the database unless both sides are files
            raise UsageError(f"{name}: {ref!r} needs the results database")
        listed = store.list(run_id=ref) if ref is not None else store.list()
        if ref is not None and not listed:
            if calibrated := calibrate_run_text(store, ref):
                raise UsageError(f"{name}: {calibrated}")
            if Path(ref).is_dir():  # "no such file" would send the user looking for a missing path
                raise UsageError(f"{name}: {ref} is a folder, not a results bundle file (`rigbench results export "
                                 "--format bundle -o FILE` writes one) or a stored run")
            raise UsageError(f"{name}: no run {ref!r} in {store.url} and no such file: "
                             f"`rigbench results runs` lists the stored runs")
        listed = [r for r in listed if where_matches(r, accepted)]
        results = store.full(listed)  # raw samples; an unreadable trial skipped with a warning
        machines = {run_id: store.machine(run_id) for run_id in dict.fromkeys(r.run_id for r in results)}
        label = f"run {ref}" if ref is not None else "all stored results"
    if where:
        label += " where " + " ".join(where)
    if not results:
        raise UsageError(f"{name}: no results in {label}")
    return results, machines, label


def machine_text(machines: dict[str, Any]) -> str:
    """`host (cpu model; instruction sets; GPUs)` of each distinct machine, sorted; "unknown
    machine" for none. The sets tell apart two CPU generations behind one masked model name, the
    GPUs two lent VMs that share the rest (fingerprint.machine_key)."""
    names = set()
    for m in machines.values():
        if m:
            parts = [str(m.get("cpu_model")), instruction_sets(m), ", ".join(machine_key(m)[-1])]
            names.add(f"{m.get('hostname')} ({'; '.join(p for p in parts if p)})")
    return ", ".join(sorted(names)) or "unknown machine"


def split_fields(where_a: Sequence[str], where_b: Sequence[str]) -> set[str]:
    """The configuration fields the two sides are chosen by: a --where key each side names with
    one value, different values (`--where-a device=cpu --where-b device=cuda:0` -> {device}).
    Pairing leaves them out, else no trial of one side could ever meet one of the other."""
    accepted_a, accepted_b = parse_where(where_a), parse_where(where_b)
    return {key for key in accepted_a.keys() & accepted_b.keys() & set(CONFIG_FIELDS)
            if len(accepted_a[key]) == len(accepted_b[key]) == 1 and accepted_a[key] != accepted_b[key]}


def compare(a: str | None = None, b: str | None = None, db: str | None = None,
            where_a: Sequence[str] = (), where_b: Sequence[str] = (),
            across_versions: bool = False) -> CompareOutcome:
    """Line up the trials of A and B (run ids, bundle files, or --where filters over the
    stored results) and judge each pair (analysis/compare.py)."""
    from rigbench.analysis.compare import compare_results

    if a is None and not where_a or b is None and not where_b:
        raise UsageError("give two runs (rigbench compare RUN_A RUN_B) or filters for both sides "
                         "(--where-a KEY=VALUE --where-b KEY=VALUE)")
    if a == b and sorted(where_a) == sorted(where_b):  # every trial would be judged against itself
        raise UsageError("A and B are the same trials (the same run and filters): give two runs, or filters that "
                         "differ, e.g. --where-a device=cpu --where-b device=cuda:0")
    # two bundle files need no database: do not ask for one that may not exist
    store = None if _is_file(a) and _is_file(b) else Store(db, create=False)
    results_a, machines_a, label_a = side_results(store, a, where_a, "A")
    results_b, machines_b, label_b = side_results(store, b, where_b, "B")

    def ident(machines: dict[str, Any]) -> set[tuple]:
        return {machine_key(m) for m in machines.values() if m}

    same = ident(machines_a) == ident(machines_b) and len(ident(machines_a)) == 1
    found = compare_results(results_a, results_b, same_machine=same, across_versions=across_versions,
                            split=split_fields(where_a, where_b))
    return CompareOutcome(found.pairs, found.only_a, found.only_b, label_a, label_b, same,
                          machine_text(machines_a), machine_text(machines_b))


def export_bundle(db: str | None = None, run_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """A full-fidelity results bundle (store/bundle.py) of `run_ids` (default: every run)."""
    from rigbench.store.bundle import export_bundle as _export

    return _export(Store(db, create=False), run_ids)


def import_bundle(path: str, db: str | None = None) -> Any:
    """Validate a bundle file completely, then add its runs, results and calibrations (ImportOutcome)."""
    from rigbench.store.bundle import check_bundle
    from rigbench.store.bundle import import_bundle as _import

    bundle = check_bundle(path)  # all checks before the database is even opened; results read again to store
    return _import(Store(db), bundle)
