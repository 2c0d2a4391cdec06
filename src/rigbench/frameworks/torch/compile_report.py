"""What torch.compile did in this trial's process, for the result's software["compile"], e.g.
"torch.compile reduce-overhead: 1 graph, 0 graph breaks; CUDA graphs: 2 recorded" (a forward
and a backward), or on a CPU "...; CUDA graphs: 0 recorded, skipped 1 time".

Why record it: a compiled trial is only as fast as what was compiled. A graph break splits the
model into pieces with eager code between them, and the CUDA-graph modes silently fall back to
plain launches where inductor cannot capture a graph (a CPU device, a mutated input, a dynamic
shape: "skipping cudagraphs due to ..."), so "compile reduce-overhead" alone would not say whether
any CUDA graph ran. The figures are dynamo's and inductor's own counters (torch._dynamo.utils
.counters, process-wide: one trial per process) and the CUDA graph tree manager's recorded nodes
(torch._inductor.cudagraph_trees). Those are torch internals: where a torch release moves them,
the part that cannot be read is left out rather than guessed. `TORCH_LOGS=cudagraphs` in the
trial's environment prints why a graph was skipped.
"""

from __future__ import annotations

from typing import Any

from rigbench.compile_modes import CUDA_GRAPH_MODES


def describe(mode: str, device_index: int | None) -> str:
    """The compile line for a trial compiled in `mode` whose steps have run; `device_index` is
    its CUDA device's (None off CUDA: no CUDA graph can be recorded)."""
    text = f"torch.compile {mode}"
    counters = _counters()
    if counters is not None:
        graphs = int(counters["stats"]["unique_graphs"])
        breaks = int(sum(counters["graph_break"].values()))
        text += f": {_count(graphs, 'graph')}, {_count(breaks, 'graph break')}"
    if mode not in CUDA_GRAPH_MODES:
        return text
    skipped = int(counters["inductor"]["cudagraph_skips"]) if counters is not None else 0
    recorded = recorded_cuda_graphs(device_index) if device_index is not None else 0
    parts = [] if recorded is None else [f"{recorded} recorded"]
    if skipped:
        parts.append(f"skipped {_count(skipped, 'time')}")
    return text + "; CUDA graphs: " + (", ".join(parts) or "unknown")


def recorded_cuda_graphs(device_index: int) -> int | None:
    """CUDA graphs the graph trees of this device recorded in this thread (each node of the
    trees is one captured graph); None where this torch keeps them elsewhere."""
    try:
        from torch._inductor import cudagraph_trees

        manager = cudagraph_trees.get_manager(device_index, create_if_none_exists=False)
        if manager is None:
            return 0
        nodes, count = list(manager.get_roots()), 0
        while nodes:
            node = nodes.pop()
            count += 1
            nodes.extend(child for children in node.children.values() for child in children)
        return count
    except Exception:  # noqa: BLE001 - a torch internal: unknown rather than a failed trial
        return None


def _counters() -> Any:
    try:
        from torch._dynamo.utils import counters

        return counters
    except Exception:  # noqa: BLE001 - a torch internal, as above
        return None


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")
