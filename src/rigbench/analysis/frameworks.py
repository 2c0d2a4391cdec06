"""Frameworks side by side: the thesis's Table 5 layout (seed 003) for this machine.

For each workload, set of its options and precision (`gpt` and `gpt:preset=small` are two
networks, two tables, `gpt` and `gpt:preset=tiny` one; fp32 and bf16 two more), one row per framework and device at one batch size: steps/s, tokens/s for a
language model, MFU (analysis/roofline.py: the spec sheet's peak, else the calibrated one), the
trial's CPU use (100 = every logical core, the thesis's Task Manager convention), GPU use, host
memory and GPU memory. The thesis's own rows (CIFAR-10 CNN at batch 128 on a GTX 1060 and an
i7-8650U, in TensorFlow 2.0, PyTorch 1.4 and MXNet 1.5) sit beside the workload its mapping
names (analysis/published_tables.MAPPINGS), so the layout and the figures can be read together.

Which trials count: full-protocol speed trials of one process (published.one_process_speed_trial;
a data-parallel trial is another configuration). A compiled trial (`--compile`) is a row of its
own, `torch compile`, as a thread count is (`torch t1`): JAX and XLA compile every step, so torch
compiled is the like-for-like row beside them. MFU is against the peak at the trial's precision. Steps/s is samples/s over the global batch (RunSpeed.steps_per_s). A
configuration stands for the trials of the newest run that measured it
(analysis/trials.newest_run_speeds; older runs are earlier runs of the same thing, not more
frameworks), on one device: its model and, where the results' machines are given, its machine
are part of the configuration (trials.device_key: an H100's and an H200's trials are both
`cuda:0`, and each is a row, named by DeviceNames where an id alone would not tell them apart): its speed columns are their geometric mean (`run --framework torch,jax --repeat 3`
ranks frameworks on means, not on each one's luckiest trial), its memory columns the highest of
them, its utilisation columns the mean of them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from rigbench.analysis.contention import is_busy
from rigbench.analysis.device_names import DeviceNames, id_labels
from rigbench.analysis.host_bound import host_bound
from rigbench.analysis.published import one_process_speed_trial
from rigbench.analysis.published_tables import MAPPINGS, PublishedRow, published_rows
from rigbench.analysis.roofline import result_roofline
from rigbench.analysis.trials import (
    Machines,
    RunSpeed,
    device_key,
    is_quick_protocol,
    newest_run_speeds,
    workload_label,
)
from rigbench.compile_modes import compile_label
from rigbench.spec import PRECISIONS, Result
from rigbench.workloads import WORKLOADS, resolved_options

#: The published source whose Table 5 this layout is, and its network.
TABLE5 = ("yin2020", "CIFAR-10 CNN", "yin2020_cpu_vs_gpu.csv")


@dataclass(frozen=True)
class FrameworkRow:
    """One framework on one device, ours or published."""

    source: str                  # "ours" or the published source's name
    workload: str                # rigbench workload (the mapped one for published rows)
    framework: str               # torch, jax, ... or as published ("PyTorch 1.4.0")
    device: str                  # our device id (cpu, cuda:0) or the published device's name
    device_name: str
    device_kind: str             # cpu | gpu
    batch_size: int
    steps_per_s: float
    cpu_pct: float | None        # the trial's CPU use, 100 = every logical core busy
    gpu_pct: float | None
    host_mem_mib: float | None   # ours: the trial's peak resident memory
    gpu_mem_mib: float | None    # ours: NVML's per-process peak
    result_id: int | None = None
    tokens_per_s: float | None = None  # ours, language models (metrics.tokens_per_s)
    mfu: float | None = None     # ours: achieved / peak FLOP/s (spec sheet, else calibrated)
    mfu_source: str | None = None  # "spec" | "calibrated"
    threads: int | None = None   # ours: the threads asked for (None: the framework's own choice)
    compile: str = "off"         # ours: the compile setting (spec.CompileMode)
    trials: list[int] = field(default_factory=list)  # ours: the trials the speed is the mean of
    busy: list[int] = field(default_factory=list)  # ours: those of them timed on a busy machine (contention.py)
    quick: bool = False          # ours: timed with a shorter window than the default protocol (`--quick`)
    host_bound: list[int] = field(default_factory=list)  # ours: those of them whose speed is the host's (host_bound.py)
    #: the device as tables and charts name it: its model, with its id or machine where another
    #: device in scope has that name (analysis/device_names.py); "" for a published row (device_name)
    device_label: str = ""

    @property
    def device_shown(self) -> str:
        """`device_label`, else the device's name (a published row's)."""
        return self.device_label or self.device_name

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class FrameworkTable:
    """The rows of one workload (with one set of options) at one precision and batch size: ours
    first (by device, then framework), then the published ones (fp32 only: what they measured)."""

    workload: str
    batch_size: int
    ours: list[FrameworkRow]
    published: list[FrameworkRow]
    frameworks: list[str]        # ours, in table order
    other_batches: list[int]     # batch sizes measured here that the table leaves out
    label: str = ""              # NAME or NAME:key=value,... as `rigbench run` takes it
    options: dict[str, Any] = field(default_factory=dict)
    precision: str = "fp32"

    def as_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "label": self.label, "options": self.options,
                "precision": self.precision, "batch_size": self.batch_size, "frameworks": self.frameworks,
                "other_batches": self.other_batches, "ours": [r.as_dict() for r in self.ours],
                "published": [r.as_dict() for r in self.published]}


def _our_row(figure: RunSpeed, calibration: dict[str, Any] | None, names: DeviceNames) -> FrameworkRow:
    r = figure.newest
    kind = "cpu" if r.spec.device == "cpu" else "gpu"
    peak = result_roofline(r, calibration, samples_per_s=figure.samples_per_s).headline_mfu
    return FrameworkRow("ours", r.spec.workload, r.spec.framework, r.spec.device,
                        r.device_name or r.spec.device, kind, r.spec.batch_size,
                        figure.steps_per_s, figure.mean_of("cpu_util_pct_mean"),  # of the trials the speed is of
                        figure.mean_of("gpu_util_pct_mean") if kind == "gpu" else None,
                        _highest(t.metrics.rss_peak_mib for t in figure.trials),
                        _highest(t.metrics.gpu_mem_peak_mib for t in figure.trials) if kind == "gpu" else None,
                        r.id, figure.tokens_per_s, peak.mfu if peak else None, peak.source if peak else None,
                        r.spec.threads, r.spec.compile, figure.ids,
                        [t.id for t in figure.trials if is_busy(t.metrics) and t.id],
                        any(is_quick_protocol(t) for t in figure.trials),
                        [t.id for t in figure.trials if host_bound(t) and t.id], names(r))


def _highest(values: Iterable[float | None]) -> float | None:
    """The highest known value (a peak over repeats), None when none is known."""
    return max((v for v in values if v is not None), default=None)


def _published_row(p: PublishedRow, workload: str) -> FrameworkRow:
    return FrameworkRow(p.source, workload, p.framework, p.device, p.spec_name or p.device, p.device_kind,
                        p.batch_size, p.steps_per_s, p.cpu_usage_pct, p.gpu_usage_pct, p.cpu_mem_mib,
                        p.gpu_mem_mib)


def _table5_rows() -> dict[str, list[PublishedRow]]:
    """Mapped workload -> the thesis's Table 5 rows."""
    source, network, table = TABLE5
    mapping = next(m for m in MAPPINGS if (m.source, m.network) == (source, network))
    return {mapping.workload: [p for p in published_rows([source]) if p.table == table]}


def _default_batch(workload: str, figures: Sequence[RunSpeed], published: list[PublishedRow]) -> int:
    """The published table's batch where we measured it, else the batch the most frameworks were
    measured at (a table is for setting frameworks side by side: one torch --compile trial at
    another batch must not hide four frameworks), ties going to the workload's default batch,
    then its `--quick` batch, then the largest."""
    frameworks: dict[int, set[str]] = {}
    for figure in figures:
        frameworks.setdefault(figure.newest.spec.batch_size, set()).add(figure.newest.spec.framework)
    for batch in (p.batch_size for p in published):
        if batch in frameworks:
            return batch
    w = WORKLOADS[workload]
    return max(frameworks, key=lambda b: (len(frameworks[b]), b == w.default_batch, b == w.quick_batch, b))


def _options_key(workload: str, options: Mapping[str, Any]) -> tuple:
    """The network `options` choose, as its resolved options: `gpt` and `gpt:preset=tiny` (its
    default) are one network, one table, whichever way each trial was asked for."""
    return tuple(sorted(resolved_options(WORKLOADS[workload], dict(options)).items()))


def framework_tables(results: Sequence[Result], workloads: Sequence[str | tuple[str, dict[str, Any]]] = (),
                     batch_size: int | None = None,
                     calibrations: Mapping[str, dict[str, Any]] | None = None,
                     precisions: Sequence[str] = (), machines: Machines | None = None) -> list[FrameworkTable]:
    """One table per workload, set of options and precision with usable speed trials, in the
    workload registry's order (a workload's option sets in the order of their labels, each set's
    precisions in PRECISIONS order). `workloads` (default every one measured): names, each for
    all its option sets, or (name, options) pairs for the trials run with exactly those options.
    `batch_size` picks the batch (default: _default_batch). `calibrations`: device name -> its
    latest calibration, for MFU against the calibrated peak where the spec sheet has none.
    `precisions` (default every one measured) keeps those precisions' tables. `machines` (run id ->
    fingerprint) tell apart two machines' devices of one name (trials.device_key)."""
    usable = [r for r in results if one_process_speed_trial(r) and r.spec.workload in WORKLOADS
              and (not precisions or r.spec.precision in precisions)]
    newest = newest_run_speeds(
        usable, lambda r: (r.spec.workload, _options_key(r.spec.workload, r.spec.workload_options), r.spec.precision,
                           r.spec.framework,
                           device_key(r, machines), r.spec.batch_size, r.spec.threads, r.spec.compile))
    names = DeviceNames(usable, machines)
    wanted = [(w, None) if isinstance(w, str) else (w[0], _options_key(w[0], w[1])) for w in workloads]
    table5 = _table5_rows()
    tables = []
    for workload in WORKLOADS:
        groups: dict[tuple, list[RunSpeed]] = {}
        for figure in newest.values():
            spec = figure.newest.spec
            key = _options_key(workload, spec.workload_options)
            if spec.workload == workload and (not wanted or (workload, None) in wanted or (workload, key) in wanted):
                groups.setdefault((key, spec.precision), []).append(figure)
        for mine in sorted(groups.values(), key=lambda figures: (workload_label(figures[0].newest),
                                                                 PRECISIONS.index(figures[0].newest.spec.precision))):
            table = _table(workload, mine, batch_size, table5.get(workload, []), calibrations or {}, names)
            if table is not None:
                tables.append(table)
    return tables


def _table(workload: str, mine: list[RunSpeed], batch_size: int | None, table5: list[PublishedRow],
           calibrations: Mapping[str, dict[str, Any]], names: DeviceNames) -> FrameworkTable | None:
    """One workload's configurations with one set of options and one precision as a table at the
    chosen batch, or None when none was measured at it. The thesis's rows (fp32) go beside the
    plain workload at fp32 only."""
    batches = Counter(figure.newest.spec.batch_size for figure in mine)
    batch = batch_size if batch_size is not None else _default_batch(workload, mine, table5)
    chosen = [figure for figure in mine if figure.newest.spec.batch_size == batch]
    if not chosen:
        return None
    rows = sorted((_our_row(figure, calibrations.get(figure.newest.device_name or ""), names) for figure in chosen),
                  key=lambda row: (row.device_kind != "cpu", row.device, row.device_label, row.framework,
                                   row.compile != "off", row.result_id or 0))
    first = mine[0].newest
    options = dict(first.spec.workload_options)
    precision = first.spec.precision
    default = _options_key(workload, options) == _options_key(workload, {})  # the network the thesis ran
    published = [_published_row(p, workload) for p in table5
                 if p.batch_size == batch and default and precision == "fp32"]
    return FrameworkTable(workload, batch, rows, published, list(dict.fromkeys(row.framework for row in rows)),
                          sorted(b for b in batches if b != batch), workload_label(first), options, precision)


def settings(row: FrameworkRow) -> str:
    """The settings a row was measured at beyond its framework and device: '' at the framework's
    own thread count and eager, ' t1' for `--threads 1`, ' compile' for `--compile` (the table
    names the rows `torch t1`, `torch compile`)."""
    return (f" t{row.threads}" if row.threads else "") + (f" {compile_label(row.compile)}" if row.compile != "off" else "")


def settings_label(row: FrameworkRow, table: FrameworkTable | None = None) -> str:
    """The device and the row's settings: `cpu`, `cpu t1`; the device's name beside its id where
    `table` has rows of more than one device with that id (`cuda:0 (NVIDIA H200)`)."""
    label = id_labels((r.device, r.device_label) for r in (table.ours if table is not None else ()))
    return label(row.device, row.device_shown) + settings(row)


def slowest_to_fastest(table: FrameworkTable) -> dict[str, float]:
    """Device and settings (settings_label) -> the fastest framework's steps/s over the slowest's
    among the rows measured on that device at those settings, where more than one framework was:
    how much the choice of framework alone is worth. Rows at other settings or on another device
    (an H100 and an H200 are both `cuda:0`) are never set against each other (torch at 1 thread
    over torch at its default is a thread-count ratio, not a framework's)."""
    groups: dict[str, list[float]] = {}
    for row in table.ours:  # one row per framework in a group: the configuration key has both
        groups.setdefault(settings_label(row, table), []).append(row.steps_per_s)
    return {label: max(speeds) / min(speeds) for label, speeds in groups.items() if len(speeds) > 1}
