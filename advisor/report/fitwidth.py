"""Tables that fit the terminal (or 80 columns when piped) without breaking a number across lines: numeric cells
never wrap; when the table is too wide, the least important columns are dropped, and the caller says which."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

MIN_FOLD = 24  # a text column that may fold keeps at least this many characters per line (most model ids)


@dataclass(frozen=True)
class Col:
    """A column: header, importance (the lowest is dropped first), whether its text may fold over lines (and then
    the fewest characters per line it keeps), and a shorter header (lines of it) for the compact form."""

    header: str
    keep: int
    fold: bool = False
    right: bool = False
    short: str | None = None
    fold_min: int = MIN_FOLD


def _cell_width(text: str) -> int:
    return max(len(part) for part in text.split("\n"))


def _width(cols: Sequence[Col], rows: Sequence[Sequence[str]], j: int, compact: bool = False) -> int:
    """Characters column j needs on one line (a folding column: at most MIN_FOLD of its longest cell)."""
    c = cols[j]
    header = c.short if compact and c.short is not None else c.header
    cells = [_cell_width(r[j]) for r in rows] or [0]
    need = max(_cell_width(header), max(cells))
    return min(need, max(cols[j].fold_min, _cell_width(header))) if cols[j].fold else need


def fitted_table(console: Console, title: str, cols: Sequence[Col], rows: Sequence[Sequence[str]],
                 compact: Sequence[Sequence[str]] | None = None, protect: int = 0) -> tuple[Table, list[str]]:
    """A rich table of `rows` within `console.width`, and the headers of the columns dropped to get there.

    Columns go, least important first, while the table is too wide; once only columns of importance `protect` or
    more are left, the `compact` rows (the same cells, narrower: e.g. an interval under its value) and the short
    headers are tried before any of those goes. A number never wraps: only `fold` columns (text) break over
    lines; a number that cannot fit is cut with an ellipsis, never split."""
    keep, cells, small = list(range(len(cols))), rows, False

    def total(idx: list[int]) -> int:  # rich's heavy box: one border per column plus one, padding 1 each side
        return 1 + sum(_width(cols, cells, j, small) + 3 for j in idx)

    while total(keep) > console.width and len(keep) > 1:
        below = [j for j in keep if cols[j].keep < protect]
        if not below and compact is not None and not small:
            cells, small = compact, True
            continue
        keep.remove(min(below or keep, key=lambda j: (cols[j].keep, -j)))
    table = Table(title=title)
    for j in keep:
        c = cols[j]
        table.add_column(c.short if small and c.short else c.header, no_wrap=not c.fold,
                         overflow="fold" if c.fold else "ellipsis", justify="right" if c.right else "left")
    for r in cells:
        table.add_row(*(r[j] for j in keep))
    return table, [cols[j].header for j in range(len(cols)) if j not in keep]


def say_dropped(console: Console, dropped: list[str]) -> None:
    if dropped:
        console.print(f"(columns left out to fit {console.width} characters: {', '.join(dropped)}; --json has every "
                      "field)", highlight=False, soft_wrap=True)


def print_line(console: Console, text: str) -> None:
    """One line printed as it is: never wrapped (a command must paste as one line), no markup, no highlighting."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)
