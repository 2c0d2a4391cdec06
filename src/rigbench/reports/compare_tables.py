"""`rigbench compare` and `rigbench score` tables: two runs' pairs and what could not be paired
(analysis/compare.py), ours beside the published tables (analysis/published.py), frameworks
side by side (analysis/frameworks.py), and a score's items (analysis/score.py). FitTables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from rigbench.analysis.device_names import id_labels
from rigbench.analysis.frameworks import settings
from rigbench.analysis.peaks import prediction_text
from rigbench.analysis.trials import trials_text
from rigbench.reports.cells import (
    cells,
    framework_column,
    interval,
    literal,
    rate,
    share,
    tokens_cell,
    trial_cells,
    trial_columns,
    unknown_mark,
)
from rigbench.reports.table_fit import Column, FitTable

#: Unpaired trials listed per side; the rest are counted (`--json` lists every one).
UNPAIRED_SHOWN = 10

_VERDICT_STYLE = {"faster": "green", "slower": "red", "incomparable": "yellow"}


def _x(value: float | None) -> str:
    return "-" if value is None else f"x{value:.3g}"


def _ratio(value: float) -> str:
    return f"{value:.3f}"


def _side_speed(side: Any) -> str:
    if side is None:
        return "-"
    if side.samples_per_s is None:
        return side.result.status
    return interval(side.samples_per_s, side.ci)


def _pair_cells(p: Any) -> list[str]:
    """The trial columns of a pair: `a/b` in each that differs between the sides (the key the
    sides were split by: `cpu/cuda:0`, `torch/jax`, `fp32/bf16`), where the framework and
    precision columns showed A's alone."""
    return [a if a == b else f"{a}/{b}" for a, b in zip(trial_cells(p.a.result), trial_cells(p.b.result))]


def _predicted(prediction: Any) -> str:
    """The spec sheets' B/A, in parentheses where it does not apply (a trial far below its
    ceiling: analysis/device_prediction.py)."""
    if prediction is None:
        return "-"
    return f"{prediction.ratio:.2f}" if prediction.applies else f"({prediction.ratio:.2f})"


def pairs_table(pairs: Sequence[Any]) -> FitTable:
    """`rigbench compare A B`: one row per pair of equal configurations (analysis/compare.Pair):
    both speeds with their 95% intervals, B/A with its interval, on two devices the spec sheets'
    B/A (where they give one), p, the verdict. Why a pair is incomparable, and its notes, are
    `pair_notes` lines under the table (never cut)."""
    predicted = any(p.predicted is not None for p in pairs)
    table = FitTable([
        *trial_columns(), Column("A samples/s [95% CI]", "right", priority=45, short="A samples/s"),
        Column("B samples/s [95% CI]", "right", priority=46, short="B samples/s"),
        Column("B/A [95% CI]", "right", short="B/A"),
        *([Column("spec B/A", "right", priority=35)] if predicted else []),
        Column("p", "right", priority=40), Column("verdict"),
    ], more="--json")
    for p in pairs:
        verdict = p.verdict
        if p.ratio is not None and p.verdict in ("faster", "slower"):
            verdict += f" {100 * (p.ratio - 1):+.1f}%"
        if p.verdict == "no change":
            verdict = "no significant change"
        marked = verdict + ("*" if p.reason or p.notes else "")
        table.add_row(*cells(*_pair_cells(p), _side_speed(p.a), _side_speed(p.b),
                             "-" if p.ratio is None else interval(p.ratio, p.ratio_ci, _ratio),
                             *([_predicted(p.predicted)] if predicted else []),
                             "-" if p.p_value is None else f"{p.p_value:.2g}",
                             literal(marked, _VERDICT_STYLE.get(p.verdict, ""))))
    return table


def pair_notes(pairs: Sequence[Any]) -> list[str]:
    """`* trial: why` for each pair with a reason or notes (marked * in the table)."""
    return [f"* {p.key}{unknown_mark(p.a.result.spec.workload)}: {'; '.join(filter(None, [p.reason, *p.notes]))}"
            for p in pairs if p.reason or p.notes]


def unpaired_lines(only_a: Sequence[Any], only_b: Sequence[Any], limit: int = UNPAIRED_SHOWN) -> list[str]:
    """What could not be paired (analysis/compare.Unpaired), at most `limit` per side: each
    trial with the closest one of its workload on the other side and how they differ."""
    lines = []
    for name, other, unpaired in (("A", "B", only_a), ("B", "A", only_b)):
        if not unpaired:
            continue
        lines.append(f"Only in {name}, no trial of the same configuration in {other} ({len(unpaired)}):")
        for u in unpaired[:limit]:
            r = u.result
            if u.closest is None:
                why = f"no {r.spec.workload} trial in {other}"
            else:
                why = f"closest in {other}: #{u.closest.id}, {', '.join(u.differences)}"
            lines.append(f"  #{r.id} {r.spec.label()}{unknown_mark(r.spec.workload)}: {why}")
        if len(unpaired) > limit:
            lines.append(f"  ... and {len(unpaired) - limit} more (--json lists every one)")
    return lines


def published_table(matches: Sequence[Any]) -> FitTable:
    """`rigbench compare --published`: each published row beside our trial of its workload
    (analysis/published.PublishedMatch): measured, the source's own, predicted and normalised ratios."""
    table = FitTable([
        Column("#", "right"), Column("published", priority=78, cut=True), Column("figure", "right", priority=30),
        Column("ours", "right"), *trial_columns(), Column("ours steps/s", "right", priority=40, short="steps/s"),
        Column("our CPU %", "right", priority=35, short="CPU %"), Column("measured", "right"),
        Column("source's own", "right", priority=62, short="theirs"), Column("predicted", "right", priority=79),
        Column("normalised", "right", priority=55, short="norm."),
    ], more="--json")
    # the device by its id, and by its name too where the matches have two devices of one id
    label = id_labels((m.ours.spec.device, m.ours_device) for m in matches)
    for i, m in enumerate(matches, 1):
        r = m.ours
        device = label(r.spec.device, m.ours_device)
        util = m.ours_cpu_pct  # the mean over the trials the speed is of
        table.add_row(*cells(str(i), m.row.label(), m.row.figure, ",".join(f"#{t}" for t in m.ours_trials),
                             *trial_cells(r, device),
                             rate(m.ours_steps_per_s), "-" if util is None else f"{util:.0f}", _x(m.measured),
                             _x(m.paper_ratio), prediction_text(m.predicted, m.predicted_by_clock, assumption=False),
                             _x(m.normalised)))
    return table


def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def framework_table(t: Any) -> FitTable:
    """`rigbench compare --frameworks`: one workload (with its options) at one batch
    (analysis/frameworks.FrameworkTable), our rows and then the published ones (dim); tokens/s
    for a language model; MFU marked * where the peak is the calibrated one, not the spec sheet's."""
    tokens = any(row.tokens_per_s is not None for row in t.ours)
    table = FitTable([
        framework_column(priority=100), Column("device", cut=True), Column("steps/s", "right"),
        *([Column("tokens/s", "right", priority=70)] if tokens else []), Column("MFU", "right", priority=65),
        Column("CPU %", "right", priority=60), Column("GPU %", "right", priority=40),
        Column("host MiB", "right", priority=50), Column("GPU MiB", "right", priority=45),
        Column("trials", "right", priority=30),
    ], title=f"{t.label or t.workload}, {t.precision}, batch {t.batch_size}", title_justify="left", more="--json")
    for row in t.ours:
        mfu = "-" if row.mfu is None else share(row.mfu) + ("*" if row.mfu_source == "calibrated" else "")
        # threads asked for set a row apart (torch at t1 beside torch at its own choice)
        name = row.framework + settings(row)
        table.add_row(*cells(name, f"{row.device} ({row.device_shown})", rate(row.steps_per_s),
                             *([tokens_cell(row.tokens_per_s)] if tokens else []), mfu,
                             _pct(row.cpu_pct), _pct(row.gpu_pct), _mib(row.host_mem_mib), _mib(row.gpu_mem_mib),
                             trials_text(row.trials) + (" quick" if row.quick else "") + (" busy" if row.busy else "")),
                      end_section=row is t.ours[-1] and bool(t.published))
    for row in t.published:
        table.add_row(*cells(Text(f"{row.framework} ({row.source})", style="dim"), Text(row.device, style="dim"),
                             rate(row.steps_per_s), *(["-"] if tokens else []), "-", _pct(row.cpu_pct),
                             _pct(row.gpu_pct), _mib(row.host_mem_mib), _mib(row.gpu_mem_mib), "-"))
    return table


def score_table(s: Any) -> FitTable:
    """`rigbench score`: one device class's items (analysis/score.Score): ours beside the reference."""
    table = FitTable([
        Column("workload"), framework_column(), Column("batch", "right", priority=70),
        Column("ours samples/s", "right", short="ours"), Column("reference samples/s", "right", short="reference"),
        Column("speed-up", "right"),
    ], title=s.device_class, more="--json")
    for item in s.items:
        d = item.as_dict()
        ours, ref = item.ours[-1].spec.framework, item.reference[-1].spec.framework
        # * : timed with the short --quick protocol (the CLI's footnote says so)
        table.add_row(*cells(item.workload + (" *" if item.quick else ""), ours if ours == ref else f"{ours}/{ref}",
                             str(item.batch_size),
                             f"{d['ours']['samples_per_s']:,.1f}", f"{d['reference']['samples_per_s']:,.1f}",
                             f"x{item.speedup:.3f}"))
    return table
