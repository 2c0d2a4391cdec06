"""The published GPU:CPU training-speed ratios per rigbench workload (seed 003's Table 5 and
Figures; Shi et al. 2016's Table 7; the community cats-vs-dogs epoch times), for the report's
speed-up bars beside this machine's own ratios.

A published ratio is the paper's GPU over the paper's own CPU for the same network, framework
and batch size (Shi et al.: their CPU column with the most threads). Per source, GPU and
workload the median ratio over its frameworks and batch sizes is kept, with the range: one
framework's slow CPU path (MXNet's in Shi et al.) would make the largest ratio a 300x outlier.
Only each workload's closest mapping per source is used (analysis/published_tables.MAPPINGS).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from rigbench.analysis.published_tables import MAPPINGS, SOURCES, Mapping, PublishedRow, published_rows

_CLOSENESS = ("same network", "same family", "loose")  # best first


@dataclass(frozen=True)
class PublishedRatio:
    """One published GPU:CPU ratio, mapped to a rigbench workload."""

    source: str
    citation: str
    workload: str  # rigbench's, as `rigbench run` takes it (e.g. resnet:depth=56)
    network: str  # as the source names it
    closeness: str
    gpu: str
    cpu: str
    ratio: float  # the median over `pairs`
    low: float
    high: float
    pairs: list[str]  # "FRAMEWORK bBATCH RATIOx" of each published pair


def _closest_mappings() -> dict[tuple[str, str], Mapping]:
    """(source, workload ref) -> the closest mapping of that source to the workload."""
    best: dict[tuple[str, str], Mapping] = {}
    for m in MAPPINGS:
        key = (m.source, m.ref)
        if key not in best or _CLOSENESS.index(m.closeness) < _CLOSENESS.index(best[key].closeness):
            best[key] = m
    return best


def _paper_cpu(rows: list[PublishedRow], gpu: PublishedRow) -> PublishedRow | None:
    """The paper's CPU row for the GPU row's network, framework and batch (most threads)."""
    cpus = [r for r in rows if r.device_kind == "cpu" and r.source == gpu.source and r.network == gpu.network
            and r.framework == gpu.framework and r.batch_size == gpu.batch_size]
    return max(cpus, key=lambda r: r.threads or 0, default=None)


def published_gpu_cpu_ratios() -> list[PublishedRatio]:
    """The median published GPU:CPU ratio per source, GPU and workload, in source order."""
    rows = published_rows()
    pairs: dict[tuple[str, str, str], list[tuple[float, str, str]]] = {}
    for (source, ref), mapping in _closest_mappings().items():
        for gpu in rows:
            if gpu.device_kind != "gpu" or gpu.source != source or gpu.network != mapping.network:
                continue
            cpu = _paper_cpu(rows, gpu)
            if cpu is not None:
                ratio = gpu.steps_per_s / cpu.steps_per_s
                pairs.setdefault((source, gpu.device, ref), []).append(
                    (ratio, f"{gpu.framework} b{gpu.batch_size} {ratio:.1f}x",
                     cpu.device + (f", {cpu.threads} threads" if cpu.threads else "")))
    out = []
    for (source, gpu_name, ref), found in pairs.items():
        mapping = _closest_mappings()[(source, ref)]
        ratios = [r for r, _, _ in found]
        out.append(PublishedRatio(source, SOURCES[source][1], ref, mapping.network, mapping.closeness,
                                  gpu_name, found[0][2], median(ratios), min(ratios), max(ratios),
                                  [text for _, text, _ in found]))
    return sorted(out, key=lambda r: (list(SOURCES).index(r.source), r.gpu, r.workload))
