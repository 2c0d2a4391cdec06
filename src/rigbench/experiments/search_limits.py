"""The memory limit a max-batch search gives `rigbench recommend` (analysis/recommend_model.
MemoryLimit): a stored search rebuilt from its probes, or one just run, with why it is
incomplete (max_batch_logic.replay: the search's own rule replayed on its probes, from the
--tolerance, start and max each probe stores; for probes stored before that, what they show).
"""

from __future__ import annotations

from collections.abc import Sequence

from rigbench.analysis.recommend_model import MemoryLimit
from rigbench.analysis.scaling import changed_knobs
from rigbench.analysis.trials import run_order
from rigbench.experiments import max_batch
from rigbench.experiments.max_batch_logic import stored_search
from rigbench.spec import Result


def stored_limit(results: Sequence[Result], device: str) -> MemoryLimit | None:
    """The newest complete fp32 max-batch search on `device` (one that met an out-of-memory and
    ended by its own rule, max_batch_logic.replay), else the newest search,
    with why it is incomplete (MemoryLimit.unfinished; one without an out-of-memory caps nothing);
    rebuilt from its probes with max_batch's own model and recommendation (10% margin). A search
    stopped by Ctrl-C after 4 probes once hid a complete one that had recommended 1144."""
    probes = [r for r in results if r.spec.kind == "probe" and r.spec.device == device and not changed_knobs(r)]
    runs: dict[str | None, list[Result]] = {}
    for r in sorted(probes, key=run_order):
        runs.setdefault(r.run_id, []).append(r)
    searches = [_rebuilt(run, found) for run, found in sorted(runs.items(), key=lambda item: run_order(item[1][-1]))
                if any(r.status in ("ok", "oom") for r in found)]
    complete = [limit for limit in searches if limit.smallest_oom is not None and limit.unfinished is None]
    chosen = complete or searches
    return chosen[-1] if chosen else None


def _rebuilt(run: str | None, probes: Sequence[Result]) -> MemoryLimit:
    """One stored search's limit from its probes, in the order they ran."""
    limit_bytes = probes[0].spec.measure.memory_limit_bytes
    ok, oom, unfinished = max_batch.replay(probes, limit_bytes)
    metric = max_batch.memory_metric(probes[0].spec.device, probes)
    points = [(r.spec.batch_size, getattr(r.metrics, metric) * max_batch.MIB) for r in probes
              if r.status == "ok" and getattr(r.metrics, metric) is not None]
    recommended, _ = max_batch.recommend(limit_bytes, max_batch.fit_memory_model(points), 0.1, max(ok, default=None))
    search = stored_search(probes)  # None before probes stored it: completeness from the probes alone
    return MemoryLimit(probes[0].spec.device, max(ok, default=None), min(oom, default=None), recommended,
                       limit_bytes, run, unfinished, search.tolerance if search else None)


def limit_of(outcome: max_batch.MaxBatchOutcome) -> MemoryLimit:
    """The limit a search the recommendation has just run gives, and whether it finished."""
    unfinished = outcome.unfinished  # exact: the search's own rule replayed on its probes
    if outcome.interrupted and unfinished is None and outcome.smallest_oom is not None and outcome.search is None:
        unfinished = "it was interrupted"
    return MemoryLimit(outcome.device, outcome.largest_ok, outcome.smallest_oom, outcome.recommended,
                       outcome.limit_bytes, outcome.run_id, unfinished,
                       outcome.search.tolerance if outcome.search else None)
