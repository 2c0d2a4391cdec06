"""Tables that fit the terminal: the one width-fitting mechanism of every table rigbench prints.

A `FitTable` holds declared columns and literal cells and decides its layout only when rich
renders it, from the width it is given (`options.max_width`: the terminal's, or what a test's
`Console(width=80)` says). Every row stays on one line; when the table is too wide:
1. every column's short header (`Column.short`) and short cell text (`Column.abbreviate`,
   e.g. `tf` for tensorflow) are used;
2. then columns are left out, the lowest `priority` first; a column whose every cell in the
   rows shown is empty ("-" or "") before any other, and of equal priorities the one with more
   empty cells first (then the rightmost): of two alternatives, such as MFU against the spec
   sheet and against a calibration, the one these rows have a value for stays. An ESSENTIAL
   column is never left out. Long free text (`Column.cut`: an error, a note) is not left out
   (unless empty) but shrunk when its priority's turn comes: it gets the room the other
   columns leave, at least CUT_MIN characters, and is cut with "…" instead of wrapping onto a
   second line. A column with a `brief` form (samples/s without its interval) takes it when
   its `brief_priority`'s turn comes, in the same order, before it would be left out.
A footnote under the table names the columns left out (and what a brief form left out) and
where to see them (`more`: a wider terminal, `--json`, ...), and says when text was cut. A `Column.wrap` column (the value
of a field/value listing) folds onto more lines instead: the one exception to one row, one line.

The look is compact (a rule under the header, two spaces between columns, no outer border), so
that 80 columns hold as much as they can. Cells are rich Text, never markup: stored text is
printed as it is (cells.literal), but for control characters, which are written out
(textlimits.visible) in every cell and title.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, JustifyMethod, RenderResult
from rich.table import Table
from rich.text import Text

from rigbench.textlimits import visible

#: Never left out; the row means nothing without it.
ESSENTIAL = 100
#: A cut column keeps at least this many characters (or its header's width, if wider).
CUT_MIN = 16
#: What a cut column keeps when even the essential columns leave it less than CUT_MIN.
LAST_RESORT = 4
#: Characters between two columns: one of padding and one of the (blank) divider.
SEPARATOR = 2
#: Cells that say nothing; a column of only these goes first.
EMPTY = ("", "-")
#: The rule under the header where the terminal has no "─" (cli/console.utf8_streams): rich's
#: own stand-in, box.ASCII, draws a "|" between columns and a "+" at each crossing.
ASCII_HEAD = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)


@dataclass(frozen=True)
class Column:
    """A declared column: its header, how important it is, and how it may shrink."""

    header: str
    justify: JustifyMethod = "left"
    priority: int = ESSENTIAL  # lower is left out first
    short: str | None = None  # a shorter header, used once the table is too wide
    abbreviate: Callable[[str], str] | None = None  # shorter cell text, at the same point
    # free text: cut with "…" to the room left instead of wrapping; shrunk when its priority's
    # turn comes, never left out
    cut: bool = False
    wrap: bool = False  # like `cut`, but folded onto more lines (a field/value listing's value)
    # a briefer cell text (a figure without its interval), used when `brief_priority`'s turn
    # comes; `brief_note` names what it leaves out, for the footnote ("the 95% CI of samples/s")
    brief: Callable[[str], str] | None = None
    brief_priority: int = 0
    brief_note: str = ""


class Layout(NamedTuple):
    """How a FitTable is laid out at one width (FitTable.layout)."""

    shown: list[int]
    short: bool
    dropped: list[int]
    shrunk: set[int]
    briefed: set[int]


@dataclass
class _Row:
    cells: list[Text]
    style: str | None
    end_section: bool


def _width(text: Text | str) -> int:
    plain = text.plain if isinstance(text, Text) else text
    return max((cell_len(line) for line in plain.splitlines()), default=0)


def _shown(cell: Text | str) -> Text:
    """A cell as the terminal may print it: literal, its control characters written out
    (textlimits.visible: a stored ESC sequence must not clear the screen), its style kept."""
    if isinstance(cell, str):
        return Text(visible(cell))
    shown = visible(cell.plain)
    return cell if shown == cell.plain else Text(shown, style=cell.style, justify=cell.justify)


def _short_cell(cell: Text, abbreviate: Callable[[str], str]) -> Text:
    """The cell's text abbreviated, its style kept."""
    return Text(abbreviate(cell.plain), style=cell.style)


class FitTable:
    """Columns and rows, laid out to the width rich renders them at (module docstring)."""

    def __init__(self, columns: Sequence[Column], title: str | Text | None = None, more: str = "",
                 show_header: bool = True, title_justify: JustifyMethod = "center") -> None:
        self.columns = list(columns)
        self.title = None if title is None else _shown(title)
        #: where the columns left out can be seen, besides a wider terminal (e.g. "--json")
        self.more = more
        self.show_header = show_header
        self.title_justify = title_justify
        self.rows: list[_Row] = []

    def add_row(self, *cells: Text | str, style: str | None = None, end_section: bool = False) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(_Row([_shown(c) for c in cells], style, end_section))

    @property
    def headers(self) -> list[str]:
        return [c.header for c in self.columns]

    def cells(self, header: str) -> list[Text]:
        """Every row's cell of the column named `header` (its full header)."""
        i = self.headers.index(header)
        return [row.cells[i] for row in self.rows]

    # ------------------------------------------------------------------ layout

    def _cells_of(self, i: int, short: bool, brief: bool = False) -> list[Text]:
        column = self.columns[i]
        cells = [row.cells[i] for row in self.rows]
        if short and column.abbreviate:
            cells = [_short_cell(c, column.abbreviate) for c in cells]
        if brief and column.brief:
            cells = [_short_cell(c, column.brief) for c in cells]
        return cells

    def _header_of(self, i: int, short: bool) -> str:
        column = self.columns[i]
        return column.short if short and column.short else column.header

    def _natural(self, i: int, short: bool, brief: bool = False) -> int:
        header = _width(self._header_of(i, short)) if self.show_header else 0
        return max([header, *(_width(c) for c in self._cells_of(i, short, brief))])

    def _flexible(self, i: int) -> bool:
        return self.columns[i].cut or self.columns[i].wrap

    def _least(self, i: int, short: bool) -> int:
        """The width free text shrinks to: CUT_MIN characters, or its header's if wider."""
        header = _width(self._header_of(i, short)) if self.show_header else 0
        return min(self._natural(i, short), max(CUT_MIN, header))

    def _total(self, shown: Sequence[int], short: bool, shrunk: Collection[int] = (),
               briefed: Collection[int] = ()) -> int:
        widths = [self._least(i, short) if i in shrunk else self._natural(i, short, i in briefed) for i in shown]
        return sum(widths) + SEPARATOR * max(0, len(shown) - 1)

    def _empties(self, i: int) -> int:
        return sum(row.cells[i].plain.strip() in EMPTY for row in self.rows)

    def _empty(self, i: int) -> bool:
        return bool(self.rows) and self._empties(i) == len(self.rows)

    def layout(self, width: int) -> Layout:
        """The columns shown, whether short forms are used, the columns left out, the free-text
        columns shrunk and the columns in their brief form at `width`. A free-text column is
        shrunk, never left out, when its priority's turn comes."""
        shown = list(range(len(self.columns)))
        dropped: list[int] = []
        shrunk: set[int] = set()
        briefed: set[int] = set()
        if self._total(shown, False) <= width:
            return Layout(shown, False, dropped, shrunk, briefed)
        # each step: (column, whether it is the brief form's turn, its priority)
        steps = [(i, False, self.columns[i].priority) for i in shown
                 if self._flexible(i) or self.columns[i].priority < ESSENTIAL]
        steps += [(i, True, self.columns[i].brief_priority) for i in shown if self.columns[i].brief]
        steps.sort(key=lambda step: (not self._empty(step[0]), step[2], step[1] is False,
                                     -self._empties(step[0]), -step[0]))
        for i, brief, _ in steps:
            if self._total(shown, True, shrunk, briefed) <= width:
                break
            if i not in shown:
                continue
            if brief:
                briefed.add(i)
            elif self._flexible(i) and (self.columns[i].priority >= ESSENTIAL or not self._empty(i)):
                shrunk.add(i)
            else:
                shown.remove(i)
                dropped.append(i)
        return Layout(shown, True, sorted(dropped), shrunk, briefed & set(shown))

    def fitted(self, width: int, ascii_only: bool = False) -> tuple[Table, Text | None]:
        """The rich Table laid out for `width`, and the footnote (None when nothing is left out or
        cut); its rule in ASCII where `ascii_only` (the console's encoding has no "─")."""
        shown, short, dropped, shrunk, briefed = self.layout(width)
        # shrunk free text gets what the other columns leave, shared out in order, at least its least
        room = width - sum(self._natural(i, short, i in briefed) for i in shown if i not in shrunk) \
            - SEPARATOR * max(0, len(shown) - 1)
        # below their least width only when nothing else is left to give: text, never numbers, is cut
        squeezed = self._total(shown, short, shrunk, briefed) > width
        limits: dict[int, int] = {}
        for n, i in enumerate(sorted(shrunk)):
            least = LAST_RESORT if squeezed else self._least(i, short)
            limits[i] = min(self._natural(i, short), max(least, room // (len(shrunk) - n)))
            room -= limits[i]
        table = Table(title=self.title, box=ASCII_HEAD if ascii_only else box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                      collapse_padding=True, header_style="bold", show_header=self.show_header,
                      title_justify=self.title_justify)
        for i in shown:
            column = self.columns[i]
            table.add_column(self._header_of(i, short), justify=column.justify, no_wrap=not column.wrap,
                             overflow="fold" if column.wrap else "ellipsis", max_width=limits.get(i))
        # wider still (the essential columns alone, at 40 columns): rich cuts every column evenly,
        # a figure's digits and a header too, which the footnote must say as it says a cut text
        wider = sum(limits.get(i, self._natural(i, short, i in briefed)) for i in shown) \
            + SEPARATOR * max(0, len(shown) - 1) > width
        cut = wider or any(self.columns[i].cut and limits[i] < self._natural(i, short) for i in shrunk)
        cells = {i: self._cells_of(i, short, i in briefed) for i in shown}
        for r, row in enumerate(self.rows):
            table.add_row(*(cells[i][r] for i in shown), style=row.style, end_section=row.end_section)
        return table, self._footnote(width, sorted([*dropped, *briefed]), cut, set(briefed))

    def _footnote(self, width: int, dropped: Iterable[int], cut: bool, briefed: Collection[int] = ()) -> Text | None:
        parts = []
        names = [self.columns[i].brief_note or f"the full {self.columns[i].header}" if i in briefed
                 else self.columns[i].header for i in dropped]
        if names:
            where = f"a wider terminal or {self.more}" if self.more else "a wider terminal"
            parts.append(f"not shown at {width} columns: {', '.join(names)} ({where} shows them)")
        if cut:
            parts.append("text ending in … was cut to fit" + (f" ({self.more} has it whole)" if self.more else ""))
        return Text("; ".join(parts) + ".", style="dim") if parts else None

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table, note = self.fitted(options.max_width, options.ascii_only)
        yield table
        if note is not None:
            yield note

