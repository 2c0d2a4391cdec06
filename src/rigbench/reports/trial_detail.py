"""`rigbench results show ID`: one trial, its fields under headings (reports/trial_fields.py
says which and how each is written), then its epochs and its ranks as tables, and a last line
saying how many fields were left out and how to see them all.

The fields are a `FieldList`: a label column as wide as the longest label, each value folded
onto more lines under itself when it is long, and no line padded to the terminal's width (a
table would pad every line of a 200-column pipe with spaces). Every label and value is literal
text (textlimits.visible: control characters written out, never read as markup).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.segment import Segment
from rich.text import Text

from rigbench.reports.ceiling_tables import roofline_lines
from rigbench.reports.cells import cells, num, share
from rigbench.reports.table_fit import Column, FitTable
from rigbench.reports.trial_fields import (
    ELSEWHERE,
    Rows,
    machine_rows,
    metric_groups,
    raw_rows,
    setup_rows,
    software_rows,
)
from rigbench.spec import EpochRecord, Result
from rigbench.textlimits import NAME_CHARS, clip_result, clip_value, visible

#: Spaces before a label, and between the label column and the values.
INDENT, GAP = 2, 2
#: A label longer than this has its value on the lines under it instead of widening the column.
LABEL_MAX = 30
#: The values get at least this width: labels that leave them less have their values under them.
VALUE_MIN = 24
#: A training run's epochs shown in the table at most (evenly spread, the first, last and best kept).
EPOCH_ROWS = 12


class FieldList:
    """Headings, each with (label, value) rows and the tables that go with them (a training
    run's epochs, a data-parallel trial's ranks: indented under the rows), laid out to the width
    rich renders them at."""

    def __init__(self, title: str, sections: Sequence[tuple[str, Rows, Sequence[RenderableType]]]) -> None:
        self.title = title
        self.sections = [(heading, rows, after) for heading, rows, after in sections if rows or after]

    def labels(self) -> list[str]:
        return [label for _, rows, _ in self.sections for label, _ in rows]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        labels = [cell_len(visible(label)) for label in self.labels() if cell_len(visible(label)) <= LABEL_MAX]
        # where the values start: after the longest label, or earlier to leave them VALUE_MIN
        # (a label that does not fit before it has its value under it)
        column = min(INDENT + max(labels, default=0) + GAP, max(0, width - VALUE_MIN))
        yield Text(visible(self.title), style="bold", overflow="fold")
        for heading, rows, after in self.sections:
            yield Text(visible(heading), style="bold")
            for label, value in rows:
                yield from self._row(console, visible(label), visible(value), width, column)
            for renderable in after:
                yield Padding(renderable, (0, 0, 0, INDENT))

    @staticmethod
    def _row(console: Console, label: str, value: str, width: int, column: int) -> RenderResult:
        head = Text(" " * INDENT + label, overflow="fold")
        stacked = head.cell_len + GAP > column  # the value starts on the line under the label
        start = min(2 * INDENT, column) if stacked else column
        if stacked:
            yield head
        for i, line in enumerate(Text(value).wrap(console, max(1, width - start), overflow="fold")):
            line.rstrip()
            if i == 0 and not stacked:
                yield Text.assemble(head, " " * (column - head.cell_len), line)
            else:
                yield Text.assemble(" " * start, line)


class Trimmed:
    """A renderable with the spaces that end its lines taken off: rich pads every table cell to
    its column's width (a centred title to the table's), and leaves a space where it folds text."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in console.render_lines(self.renderable, options, pad=False):
            while line and not line[-1].control and not line[-1].text.rstrip():
                line.pop()
            if line and not line[-1].control:
                line[-1] = Segment(line[-1].text.rstrip(), line[-1].style)
            yield from line
            yield Segment.line()


def _epoch_picks(epochs: Sequence[EpochRecord]) -> list[int]:
    """The indices of the epochs the table shows: all of them up to EPOCH_ROWS, else that many
    spread evenly (first and last included) and the best one (accuracy, else held-out loss)."""
    n = len(epochs)
    if n <= EPOCH_ROWS:
        return list(range(n))
    picks = sorted({round(i * (n - 1) / (EPOCH_ROWS - 1)) for i in range(EPOCH_ROWS)})
    scored = [(e.accuracy, i) for i, e in enumerate(epochs) if e.accuracy is not None]
    losses = [(-e.eval_loss, i) for i, e in enumerate(epochs) if e.eval_loss is not None]
    best = max(scored or losses, default=None)
    if best is not None and best[1] not in picks:  # in place of the spread pick nearest it
        nearest = min(picks[1:-1], key=lambda p: abs(p - best[1]))
        picks = sorted({*picks, best[1]} - {nearest})
    return picks

def epochs_table(r: Result) -> FitTable:
    """A training run's epochs, one row each (a long run's spread out: _epoch_picks): train loss,
    held-out loss and accuracy, the workload's own losses, and the time of each part; columns
    no epoch has a figure for are left out."""
    epochs = r.epoch_records
    extras = list(dict.fromkeys(k for e in epochs for k in e.extra))
    loader = any(e.input_seconds or e.copy_seconds for e in epochs)
    columns: list[tuple[Column, Callable[[EpochRecord], str], bool]] = [  # (column, its cell, shown)
        (Column("epoch", "right"), lambda e: str(e.epoch), True),
        (Column("steps", "right", priority=30), lambda e: f"{e.steps:,}", True),
        (Column("train loss", "right"), lambda e: _loss(e.train_loss), True),
        (Column("held-out loss", "right", short="eval loss"), lambda e: "-" if e.eval_loss is None else _loss(e.eval_loss),
         any(e.eval_loss is not None for e in epochs)),
        (Column("accuracy", "right", short="acc"), lambda e: _maybe(e.accuracy, "{:.1%}"),
         any(e.accuracy is not None for e in epochs)),
        *((Column(key, "right", priority=50), lambda e, k=key: "-" if k not in e.extra else _loss(e.extra[k]), True)
          for key in extras),
        (Column("train s", "right", priority=70), lambda e: num(e.train_seconds, "{:.2f}"), True),
        (Column("eval s", "right", priority=60), lambda e: num(e.eval_seconds, "{:.2f}"), True),
        (Column("input s", "right", priority=40), lambda e: num(e.input_seconds, "{:.2f}"), loader),
        (Column("copy s", "right", priority=35), lambda e: num(e.copy_seconds, "{:.2f}"), loader),
    ]
    shown = [(column, cell) for column, cell, on in columns if on]
    table = FitTable([column for column, _ in shown], more="--json")
    for i in _epoch_picks(epochs):
        table.add_row(*cells(*(cell(epochs[i]) for _, cell in shown)))
    return table


def _maybe(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def _loss(value: float) -> str:
    """A loss in a column: 4 decimals (as `rigbench train`'s table), 3 significant digits when tiny or huge."""
    return f"{value:.4f}" if 1e-3 <= abs(value) < 1e6 else f"{value:.3g}"


def _roofline_rows(r: Result, roofline: Any) -> Rows:
    """The trial's roofline lines with a value (a failed trial has no speed to place: none)."""
    if roofline is None or r.status != "ok":
        return []
    return [(key, value) for key, value in roofline_lines(roofline) if value not in ("", "-")]


def result_detail(r: Result, machine: dict[str, Any] | None, roofline: Any = None,
                  more: str = "--json") -> RenderableType:
    """`rigbench results show`: the trial's fields with a value, grouped (trial_fields.py), with
    `roofline` (analysis/roofline.TrialRoofline) its MFU and roofline lines; a training run's
    epochs and a data-parallel trial's ranks as tables; a last line on the fields left out and
    where to see everything (`more`: the command that prints it all)."""
    r = clip_result(r)
    row = {key: value for key, value in r.row().items() if key != "ranks"}
    trial, setup = setup_rows(r, row)
    tables: dict[str, list[RenderableType]] = {"training": _epochs(r, more), "data parallel": _ranks(r)}
    groups = metric_groups(r)
    groups += [(heading, []) for heading, after in tables.items() if after and heading not in dict(groups)]
    sections = [("trial", trial, []), ("setup", setup, []),
                *((heading, rows, tables.get(heading, [])) for heading, rows in groups),
                ("roofline", _roofline_rows(r, roofline), []), ("software", software_rows(r.software), []),
                ("machine", machine_rows(clip_value(machine, NAME_CHARS)) if isinstance(machine, dict) else [], []),
                ("raw data (in --json)", raw_rows(r), [])]
    kind = {"train": " (training run)", "lr_find": " (learning-rate range test)"}.get(r.spec.kind, "")
    fields = FieldList(f"trial {r.id}: {r.spec.label()}{kind}: {r.status}", sections)
    shown = set(fields.labels())
    left_out = [key for key in row if key not in shown and key not in ELSEWHERE and key != "software"]
    note = Text(f"{len(left_out)} fields with no value for this trial are left out; every field, the raw samples "
                f"included: {more}", style="dim")
    return Trimmed(Group(fields, note))


def _epochs(r: Result, more: str) -> list[RenderableType]:
    """A training run's epoch table, under a line saying so (and where every epoch is, when
    not all of them are shown)."""
    if not r.epoch_records:
        return []
    picked, total = len(_epoch_picks(r.epoch_records)), len(r.epoch_records)
    spread = f" ({picked} of {total}, spread out; every epoch: {more})" if picked < total else ""
    return [Text(f"per epoch{spread}:"), epochs_table(r)]


def _ranks(r: Result) -> list[RenderableType]:
    """A data-parallel trial's ranks (ranks_table), under a line saying how many."""
    if not r.ranks:
        return []
    table = ranks_table(r)
    table.title = None  # said by the line above, left-aligned like the rest
    return [Text(f"its {len(r.ranks)} rank{'s' * (len(r.ranks) != 1)}:"), table]


def ranks_table(r: Result) -> FitTable:
    """Each rank's record of a data-parallel trial (Result.ranks), for `rigbench results show`."""
    table = FitTable([
        Column("rank", "right"), Column("host", priority=40), Column("status"), Column("steps", "right", priority=50),
        Column("step ms mean", "right", priority=70, short="mean ms"), Column("median", "right"),
        Column("no-sync ms", "right", priority=60, short="no-sync"), Column("comm share", "right", priority=65, short="comm"),
        Column("RSS MiB", "right", priority=35, short="RSS"), Column("alloc MiB", "right", priority=30, short="alloc"),
        Column("CPU %", "right", priority=45), Column("parameters", priority=55, short="params"),
    ], title=f"trial {r.id}: its {len(r.ranks)} rank{'s' * (len(r.ranks) != 1)}", more="--json")
    for rank in r.ranks:
        state = rank.status + (" (stopped)" if rank.collateral else "")
        table.add_row(*cells(str(rank.rank), rank.host or "-", state, str(rank.steps), _fmt(rank.step_time_ms_mean),
                             _fmt(rank.step_time_ms_median), _fmt(rank.nosync_step_time_ms_median),
                             share(rank.comm_share), _fmt(rank.rss_peak_mib, 0), _fmt(rank.allocator_peak_mib, 0),
                             _fmt(rank.cpu_util_pct, 1), (rank.param_digest or "-")[:12]))
    return table


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if digits < 3 else f"{value:.4g}"
