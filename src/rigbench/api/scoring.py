"""`rigbench score`: this machine against a reference machine (analysis/score.py).
Imports are local so that `import rigbench.api` stays cheap."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rigbench.api.comparison import calibrate_run_text, machine_text, this_machine_results
from rigbench.errors import UsageError
from rigbench.spec import Result
from rigbench.store import Store
from rigbench.store.this_machine import other_machines_count


@dataclass
class ScoreOutcome:
    """`rigbench score`: one Score per device class both machines have, and the two sides."""

    scores: list[Any]            # analysis.score.Score
    ours_label: str
    reference_label: str         # every reference used, with its device class when chosen per class
    reference_machine: str
    missing_everywhere: list[str]  # device classes we have results for but the reference lacks


@dataclass
class Reference:
    results: list[Result]
    label: str
    machine: str


def reference_results(store: Store, reference: str) -> Reference:
    """The reference side of `score`: a shipped reference machine, a bundle file or a stored run."""
    from pathlib import Path

    from rigbench.analysis.score import read_shipped_reference, shipped_references
    from rigbench.store.bundle import load_bundle, parse_bundle

    shipped = shipped_references()
    if reference in shipped:
        bundle = parse_bundle(read_shipped_reference(reference), f"reference {reference}")
        return Reference(bundle.results, f"reference machine {reference}",
                         machine_text({r.id: r.machine for r in bundle.runs}))
    if Path(reference).is_file():
        bundle = load_bundle(reference)
        return Reference(bundle.results, f"bundle {reference}", machine_text({r.id: r.machine for r in bundle.runs}))
    listed = store.list(run_id=reference)
    if not listed and (calibrated := calibrate_run_text(store, reference)):
        raise UsageError(f"--reference: {calibrated}")
    if not listed:
        raise UsageError(f"--reference {reference!r} is not a shipped reference "
                         f"({', '.join(shipped) or 'none ship yet'}), a bundle file or a stored run")
    results = store.full(listed)
    return Reference(results, f"run {reference}", machine_text({reference: store.machine(reference)}))


def shipped_reference_for(store: Store, cls: str) -> Reference | None:
    """The default reference of device class `cls`: the shipped reference machine that measured
    it (the first by name if several did); None if none did."""
    from rigbench.analysis.score import shipped_references, suite_results

    for name in shipped_references():
        found = reference_results(store, name)
        if suite_results(found.results, cls):
            return found
    return None


def score(run_id: str | None = None, reference: str | None = None, db: str | None = None,
          device_class: str | None = None) -> ScoreOutcome:
    """The geometric mean of this machine's speed-ups over a reference machine across the
    default suite (analysis/score.py), per device class ("cpu", "gpu"). Without `reference`,
    each class is scored against the shipped reference machine that measured that class."""
    from rigbench.analysis.score import compute_score, suite_results

    if device_class not in (None, "cpu", "gpu"):
        raise UsageError(f"--device must be cpu or gpu, got {device_class!r}")
    store = Store(db, create=False)
    named = reference_results(store, reference) if reference is not None else None
    if run_id is not None:
        listed = store.list(run_id=run_id)
        if not listed:
            raise UsageError(calibrate_run_text(store, run_id) or f"no results stored for run {run_id!r} in "
                             f"{store.url}: `rigbench results runs` lists the stored runs")
        ours_label = f"run {run_id}"
    else:
        listed = this_machine_results(store)
        ours_label = "this machine's newest results"
    scores, lacking, used = [], [], {}
    for cls in [device_class] if device_class else ["cpu", "gpu"]:
        mine = suite_results(listed, cls)
        if not mine:
            continue
        ref = named or shipped_reference_for(store, cls)
        result = None
        if ref is not None:
            used[ref.label + ("" if named else f" ({cls})")] = ref.machine
            # the listing leaves the raw step times out: the bootstrap needs them
            mine = {w: tuple(store.full(trials)) for w, trials in mine.items()}
            result = compute_score(mine, suite_results(ref.results, cls), cls)
        if result is None:
            lacking.append(cls)
        else:
            scores.append(result)
    ref_label = ", ".join(used) or (named.label if named else "the shipped reference machines")
    if not scores:
        why = _nothing_in_common(listed, named, ours_label, ref_label, device_class)
        elsewhere = other_machines_count(store) if run_id is None and not listed else 0
        if elsewhere:  # an imported bundle is another machine's: its run id scores it
            why += f" ({elsewhere} stored results are other machines': `rigbench score RUN` scores one of their runs)"
        raise UsageError(why)
    machines = ", ".join(dict.fromkeys(used.values())) or (named.machine if named else "")
    return ScoreOutcome(scores, ours_label, ref_label, machines, lacking)


#: Trials named in the message when a run's trials are all left out for their settings.
_NAMED = 5


def _nothing_in_common(ours: list[Result], named: Reference | None, ours_label: str, ref_label: str,
                       device_class: str | None) -> str:
    """Why `score` has no workload to score, most specific first: the two sides measured the suite
    on different device classes (a score sets cpu against cpu, gpu against gpu); our trials of suite
    workloads were all left out for their settings; `--device` names a class we measured nothing
    on; else that nothing of the suite is in common."""
    from rigbench.analysis.score import default_suite, left_out_for_settings, suite_results

    classes = [device_class] if device_class else ["cpu", "gpu"]
    suite = " ".join(f"{w}" for w, _ in default_suite())
    on = f" on {device_class}" if device_class else ""
    mine = [cls for cls in classes if suite_results(ours, cls)]
    theirs = [cls for cls in classes if named is not None and suite_results(named.results, cls)]
    if mine and theirs and not set(mine) & set(theirs):
        return (f"{ref_label} measured the suite on {' and '.join(theirs)} only, and {ours_label} on "
                f"{' and '.join(mine)} only: a score sets cpu against cpu and gpu against gpu, so pick a "
                f"reference that measured {' or '.join(mine)} (`rigbench score --list-references`, a bundle "
                f"file or a stored run)")
    apart = left_out_for_settings(ours, device_class)
    if not mine and apart:
        named_trials = "; ".join(f"#{r.id} {r.spec.workload}: {', '.join(settings)}" for r, settings in apart[:_NAMED])
        more = f"; and {len(apart) - _NAMED} more" if len(apart) > _NAMED else ""
        return (f"no suite result in {ours_label}{on}: its trials of suite workloads were left out for their "
                f"settings ({named_trials}{more}); the suite is each workload as a plain `rigbench run` runs it, at "
                f"its reference batch: run `rigbench run` (the default suite: {suite})")
    elsewhere = [cls for cls in ("cpu", "gpu") if device_class and cls != device_class and suite_results(ours, cls)]
    if elsewhere:  # `--device gpu` on a CPU-only machine: `rigbench run` would measure no GPU either
        how = "`rigbench run -d cpu` measures it" if device_class == "cpu" else "`rigbench devices` lists this machine's GPUs"
        return (f"{ours_label} measured the suite on {elsewhere[0]} only, nothing on {device_class}: leave "
                f"--device out to score {elsewhere[0]} ({how})")
    return (f"no suite workload measured both here ({ours_label}) and in {ref_label}{on}: run `rigbench run` "
            f"(the default suite: {suite}, each at its reference batch)")
