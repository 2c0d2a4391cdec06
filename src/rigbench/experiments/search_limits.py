"""The memory limit a max-batch search gives `rigbench recommend` (analysis/recommend_model.
MemoryLimit): a stored search rebuilt from its probes, or one just run, with why it is
incomplete (max_batch_logic.replay: the search's own rule replayed on its probes, from the
--tolerance, start and max each probe stores; for probes stored before that, what they show).

Only a search made under the limit the recommendation applies counts: on the CPU the default
(max_batch.DEFAULT_RAM_FRACTION of the RAM available when the search ran: its bytes differ from
one search to the next) or the recommendation's --memory-limit, the same bytes; on a GPU its
memory, whatever the search. A 1 GiB and a 2 GiB search of one database once competed, the newest
winning. What set a search's limit is stored with its probes (spec.MaxBatchSearch.memory_limit);
for a search stored before that, its run's command says (`--memory-limit` in it), and where the
command is not known the search is read as the default's, and said to be.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import replace

from rigbench.analysis.recommend_model import MemoryLimit
from rigbench.analysis.scaling import changed_knobs
from rigbench.analysis.trials import run_order
from rigbench.experiments import max_batch
from rigbench.experiments.max_batch_logic import stored_search
from rigbench.spec import Result
from rigbench.units import format_bytes


def stored_limit(results: Sequence[Result], device: str, memory_limit_bytes: int | None = None,
                 commands: Mapping[str, str] | None = None) -> MemoryLimit | None:
    """Among the fp32 max-batch searches on `device` made under the limit that applies (the module
    docstring: on the CPU `memory_limit_bytes`, else the default), the newest complete one (one that
    met an out-of-memory and ended by its own rule, max_batch_logic.replay), else the newest,
    with why it is incomplete (MemoryLimit.unfinished; one without an out-of-memory caps nothing)
    and the searches under other limits it left out (MemoryLimit.others); rebuilt from its probes
    with max_batch's own model and recommendation (10% margin). A search stopped by Ctrl-C after 4
    probes once hid a complete one that had recommended 1144. `commands`: run id -> its command,
    for searches stored before their probes said what set their limit."""
    searches, others = limit_searches(results, device, memory_limit_bytes, commands)
    complete = [limit for limit in searches if limit.smallest_oom is not None and limit.unfinished is None]
    chosen = complete or searches
    return replace(chosen[-1], others=tuple(map(named_limit, others))) if chosen else None


def limit_searches(results: Sequence[Result], device: str, memory_limit_bytes: int | None = None,
                   commands: Mapping[str, str] | None = None) -> tuple[list[MemoryLimit], list[MemoryLimit]]:
    """(the stored searches on `device` under the limit that applies, those under other limits),
    each oldest first (stored_limit)."""
    probes = [r for r in results if r.spec.kind == "probe" and r.spec.device == device and not changed_knobs(r)]
    runs: dict[str | None, list[Result]] = {}
    for r in sorted(probes, key=run_order):
        runs.setdefault(r.run_id, []).append(r)
    searches = [_rebuilt(run, found, (commands or {}).get(run or ""))
                for run, found in sorted(runs.items(), key=lambda item: run_order(item[1][-1]))
                if any(r.status in ("ok", "oom") for r in found)]
    if device != "cpu":  # a GPU's limit is its memory, whatever the search
        return searches, []
    if memory_limit_bytes is not None:
        under = [s for s in searches if s.limit_bytes == memory_limit_bytes]
    else:
        under = [s for s in searches if s.source != "--memory-limit"]
    return under, [s for s in searches if s not in under]


def other_limits_text(others: Sequence[MemoryLimit]) -> str:
    """The stored searches under other limits than the one that applies, and how to read the
    newest: "stored searches are under other limits: 1.0 GiB (run a); recommend with
    --memory-limit 1GiB reads run a's"."""
    newest = others[-1]
    use = (f"with --memory-limit {size_flag(newest.limit_bytes)}"
           if newest.source == "--memory-limit" and newest.limit_bytes else "without --memory-limit")
    return (f"stored searches are under other limits: {', '.join(map(named_limit, others))}; recommend {use} reads "
            f"run {newest.run_id}'s")


def size_flag(n: int) -> str:
    """Bytes as --memory-limit takes them: 1073741824 -> 1GiB, 1536 MiB -> 1536MiB."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n % size == 0:
            return f"{n // size}{unit}"
    return f"{n}B"


def named_limit(limit: MemoryLimit) -> str:
    """A search under another limit, as the lines name it: "the default's 3.0 GiB (run a)"."""
    whose = "the default's " if limit.source == "default" else ""
    return f"{whose}{format_bytes(limit.limit_bytes)} (run {limit.run_id})"


def _source(device: str, probes: Sequence[Result], command: str | None) -> str | None:
    """What set a CPU search's limit: "default", "--memory-limit", or "unknown" (MemoryLimit.source)."""
    if device != "cpu":
        return None
    search = stored_search(probes)
    if search is not None and search.memory_limit is not None:
        return "--memory-limit" if search.memory_limit == "given" else "default"
    if command is None:
        return "unknown"
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return "--memory-limit" if any(w == "--memory-limit" or w.startswith("--memory-limit=") for w in words) else "default"


def _rebuilt(run: str | None, probes: Sequence[Result], command: str | None) -> MemoryLimit:
    """One stored search's limit from its probes, in the order they ran (`command`: its run's)."""
    limit_bytes = probes[0].spec.measure.memory_limit_bytes
    ok, oom, unfinished = max_batch.replay(probes, limit_bytes)
    _, model, unfit = max_batch.fitted(probes[0].spec.device, probes)
    recommended, _ = max_batch.recommend(limit_bytes, model, max_batch.DEFAULT_MARGIN, max(ok, default=None), unfit=unfit)
    search = stored_search(probes)  # None before probes stored it: completeness from the probes alone
    return MemoryLimit(probes[0].spec.device, max(ok, default=None), min(oom, default=None), recommended,
                       limit_bytes, run, unfinished, search.tolerance if search else None,
                       _source(probes[0].spec.device, probes, command))


def limit_of(outcome: max_batch.MaxBatchOutcome) -> MemoryLimit:
    """The limit a search the recommendation has just run gives, and whether it finished."""
    unfinished = outcome.unfinished  # exact: the search's own rule replayed on its probes
    if outcome.interrupted and unfinished is None and outcome.smallest_oom is not None and outcome.search is None:
        unfinished = "it was interrupted"
    return MemoryLimit(outcome.device, outcome.largest_ok, outcome.smallest_oom, outcome.recommended,
                       outcome.limit_bytes, outcome.run_id, unfinished,
                       outcome.search.tolerance if outcome.search else None,
                       _source(outcome.device, outcome.probes, None) if outcome.probes else None)
