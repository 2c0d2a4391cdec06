"""`rigbench score`: this machine against a reference machine (analysis/score.py).
Imports are local so that `import rigbench.api` stays cheap."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rigbench.api.comparison import machine_text, this_machine_results
from rigbench.errors import UsageError
from rigbench.spec import Result
from rigbench.store import Store


@dataclass
class ScoreOutcome:
    """`rigbench score`: one Score per device class both machines have, and the two sides."""

    scores: list[Any]            # analysis.score.Score
    ours_label: str
    reference_label: str
    reference_machine: str
    missing_everywhere: list[str]  # device classes we have results for but the reference lacks


def reference_results(store: Store, reference: str | None) -> tuple[list[Result], str, str]:
    """The reference side of `score`: (results, label, machine text) of a shipped reference
    machine, a bundle file or a stored run; none named: the one shipped reference."""
    from pathlib import Path

    from rigbench.analysis.score import read_shipped_reference, shipped_references
    from rigbench.store.bundle import load_bundle, parse_bundle

    shipped = shipped_references()
    if reference is None:
        if len(shipped) != 1:
            choices = f"shipped: {', '.join(shipped)}" if shipped else "none ships with this rigbench yet"
            raise UsageError(f"name a reference machine with --reference NAME|FILE|RUN ({choices}); "
                             f"a bundle comes from `rigbench results export --format bundle`")
        reference = shipped[0]
    if reference in shipped:
        bundle = parse_bundle(read_shipped_reference(reference), f"reference {reference}")
        return bundle.results, f"reference machine {reference}", machine_text({r.id: r.machine for r in bundle.runs})
    if Path(reference).is_file():
        bundle = load_bundle(reference)
        return bundle.results, f"bundle {reference}", machine_text({r.id: r.machine for r in bundle.runs})
    listed = store.list(run_id=reference)
    if not listed:
        raise UsageError(f"--reference {reference!r} is not a shipped reference "
                         f"({', '.join(shipped) or 'none ship yet'}), a bundle file or a stored run")
    results = [full for r in listed if r.id is not None and (full := store.get(r.id)) is not None]
    return results, f"run {reference}", machine_text({reference: store.machine(reference)})


def score(run_id: str | None = None, reference: str | None = None, db: str | None = None,
          device_class: str | None = None) -> ScoreOutcome:
    """The geometric mean of this machine's speed-ups over a reference machine across the
    default suite (analysis/score.py), per device class ("cpu", "gpu")."""
    from rigbench.analysis.score import compute_score, default_suite, suite_results

    if device_class not in (None, "cpu", "gpu"):
        raise UsageError(f"--device must be cpu or gpu, got {device_class!r}")
    store = Store(db, create=False)
    ref_results, ref_label, ref_machine = reference_results(store, reference)
    if run_id is not None:
        listed = store.list(run_id=run_id)
        if not listed:
            raise UsageError(f"no results stored for run {run_id!r} in {store.url}: see `rigbench results list`")
        ours_label = f"run {run_id}"
    else:
        listed = this_machine_results(store)
        ours_label = "this machine's newest results"
    scores, lacking = [], []
    for cls in [device_class] if device_class else ["cpu", "gpu"]:
        mine = suite_results(listed, cls)
        if not mine:
            continue
        mine = {w: full for w, r in mine.items() if r.id is not None and (full := store.get(r.id)) is not None}
        result = compute_score(mine, suite_results(ref_results, cls), cls)
        if result is None:
            lacking.append(cls)
        else:
            scores.append(result)
    if not scores:
        suite = " ".join(f"{w}" for w, _ in default_suite())
        raise UsageError(f"no suite workload measured both here ({ours_label}) and in {ref_label}"
                         f"{' on ' + device_class if device_class else ''}: run `rigbench run` "
                         f"(the default suite: {suite}, each at its reference batch)")
    return ScoreOutcome(scores, ours_label, ref_label, ref_machine, lacking)
