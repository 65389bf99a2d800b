"""Tables a person reads: fitted to the terminal, or plain when the output goes to a pipe or a file.

Belongs here: laying out a table whose cells are already text (`TextTable`) on a rich Console, and the console the
commands print their results to (`output_console`). No formatting of values: the callers give the text.

On a terminal (`Console.is_terminal`: a TTY, or rich's TTY_COMPATIBLE=1 / FORCE_COLOR) a table is fitted to the
console's width, and nothing of it is dropped or cut:
- a number is never broken or shortened (no "6e-…"): its column is at least as wide as its widest value;
- headers wrap between words, names (`Kind.NAME`, e.g. a run or a measure) stay whole while the table can fit, and
  only free text (`Kind.TEXT`, e.g. a path or JSON in `judged sql`) folds onto more lines;
- a table still too wide is split into parts of whole columns, printed one below the other, each repeating the key
  columns (the run, the measure); at a width where even one column beside the keys does not fit, each row is
  printed as a block of `header: value` lines.
Piped (not a terminal), a table is plain text: a header line, then one line per row at the columns' natural widths,
columns two spaces apart, no borders, no colour and no wrapping, for `grep`, `cut` and diffs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

GAP = 2  # spaces between two columns
TEXT_FOLD_WIDTH = 12  # free text folds onto more lines at this width when the table needs the room


class Kind(Enum):
    NUMBER = "number"  # right-aligned, never broken
    NAME = "name"  # left-aligned, kept whole while the table can fit (breaks only between words)
    TEXT = "text"  # left-aligned, folds onto more lines when the table needs the room


@dataclass(frozen=True)
class Column:
    header: str
    kind: Kind = Kind.NUMBER
    key: bool = False  # names the row: never dropped, repeated in every part of a split table


@dataclass(frozen=True)
class TextTable:
    columns: Sequence[Column]
    rows: Sequence[Sequence[str]]
    title: str = ""
    caption: str = ""
    notes: Sequence[str] = field(default_factory=tuple)  # lines printed after the table (and its caption)


def output_console(stderr: bool = False) -> Console:
    """The console a command prints its results to: rich's own on a terminal (its width: COLUMNS or the terminal's,
    colour); otherwise one that prints every line whole (no wrapping at 80 columns) and without colour."""
    from rich.console import Console

    console = Console(stderr=stderr)
    return console if console.is_terminal else Console(stderr=stderr, soft_wrap=True, no_color=True)


def _cell_len(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def _longest_word(text: str) -> int:
    return max((_cell_len(word) for word in text.split()), default=0)


def natural_widths(table: TextTable) -> list[int]:
    """Each column's width with every cell and its header on one line."""
    return [max([_cell_len(column.header), *(_cell_len(row[i]) for row in table.rows)])
            for i, column in enumerate(table.columns)]


def narrowest_widths(table: TextTable) -> list[int]:
    """Each column's least width: every number whole, names whole but for their spaces, free text folded at
    TEXT_FOLD_WIDTH; headers wrap between words."""
    widths = []
    for i, column in enumerate(table.columns):
        cells = [row[i] for row in table.rows]
        if column.kind is Kind.NUMBER:
            least = max((_cell_len(cell) for cell in cells), default=0)
        elif column.kind is Kind.NAME:
            least = max((_longest_word(cell) for cell in cells), default=0)
        else:
            least = min(TEXT_FOLD_WIDTH, max((_cell_len(cell) for cell in cells), default=0))
        widths.append(max(least, _longest_word(column.header), 1))
    return widths


def _total(widths: Sequence[int]) -> int:
    return sum(widths) + GAP * (len(widths) - 1)


def layout(table: TextTable, width: int) -> list[tuple[list[int], list[int]]] | None:
    """How `table` fits `width` columns: its parts, each a list of column indexes (the key columns first, then the
    others in their order) with their widths; None when not even the key columns and one other fit (print each row
    as a block). One part when the whole table fits; else as few parts as fit, of widths as even as they can be."""
    natural, narrowest = natural_widths(table), narrowest_widths(table)
    keys = [i for i, column in enumerate(table.columns) if column.key]
    others = [i for i, column in enumerate(table.columns) if not column.key]
    if not others:
        others, keys = keys, []
    if _total([narrowest[i] for i in range(len(table.columns))]) <= width:
        indexes = list(range(len(table.columns)))
        return [(indexes, _widened(narrowest, natural, width))]
    groups = _even_groups([narrowest[i] for i in keys], [narrowest[i] for i in others], width)
    if groups is None:
        return None
    parts = []
    for start, end in groups:
        indexes = [*keys, *others[start:end]]
        parts.append((indexes, _widened([narrowest[i] for i in indexes], [natural[i] for i in indexes], width)))
    return parts


def _even_groups(keys: list[int], others: list[int], width: int) -> list[tuple[int, int]] | None:
    """`others` (column widths) cut into as few runs of consecutive columns as fit `width` beside the `keys`, the
    widest part as narrow as it can be: (start, end) of each run, or None when one column beside the keys does not
    fit."""
    def fits(start: int, end: int) -> int | None:
        total = _total([*keys, *others[start:end]])
        return total if total <= width else None

    if any(fits(i, i + 1) is None for i in range(len(others))):
        return None
    # best[count][end]: the narrowest widest part over the first `end` columns cut into `count` parts, with the cut.
    n = len(others)
    best: list[dict[int, tuple[int, int]]] = [{0: (0, 0)}]
    while n not in best[-1]:
        layer: dict[int, tuple[int, int]] = {}
        for end in range(1, n + 1):
            for start, (widest, _) in best[-1].items():
                total = fits(start, end) if start < end else None
                if total is not None and (end not in layer or max(widest, total) < layer[end][0]):
                    layer[end] = (max(widest, total), start)
        best.append(layer)
    groups, end = [], n
    for layer in reversed(best[1:]):
        start = layer[end][1]
        groups.append((start, end))
        end = start
    return groups[::-1]


def _widened(narrowest: list[int], natural: list[int], width: int) -> list[int]:
    """The narrowest widths, widened towards the natural ones while the total fits: the columns that need the least
    room to be whole first, so that as many as can be are whole."""
    widths = list(narrowest)
    spare = width - _total(widths)
    for i in sorted(range(len(widths)), key=lambda i: natural[i] - narrowest[i]):
        grow = min(max(natural[i] - widths[i], 0), spare)
        widths[i] += grow
        spare -= grow
    return widths


def plain_lines(table: TextTable) -> list[str]:
    """The table as plain text: header, then one line per row, at natural widths, columns GAP spaces apart (a line
    break inside a value is written as `\\n`, so that a row stays one line)."""
    rows = [[cell.replace("\n", "\\n") for cell in row] for row in table.rows]
    widths = natural_widths(TextTable(table.columns, rows))

    def line(cells: Sequence[str]) -> str:
        padded = []
        for cell, width, column in zip(cells, widths, table.columns, strict=True):
            space = " " * (width - _cell_len(cell))  # by cells on screen: a CJK character takes two
            padded.append(space + cell if column.kind is Kind.NUMBER else cell + space)
        return (" " * GAP).join(padded).rstrip()

    return [line([column.header for column in table.columns]), *(line(row) for row in rows)]


def print_line(console: Console, text: str, prefix: str = "", style: str = "") -> None:
    """One line of plain text (no markup is read in it), after `prefix` (e.g. `warning:`) in `style`: wrapped on a
    terminal, whole otherwise."""
    from rich.markup import escape

    start = f"[{style}]{escape(prefix)}[/{style}] " if prefix and style else f"{escape(prefix)} " if prefix else ""
    console.print(start + escape(text), highlight=False, soft_wrap=not console.is_terminal)


def print_table(table: TextTable, console: Console) -> None:
    """Print `table` (its title, the table, its caption and notes) as the module's docstring says: fitted to a
    terminal, plain otherwise."""
    if table.title:
        print_line(console, table.title)
    if not console.is_terminal:
        for line in plain_lines(table):
            console.out(line, highlight=False)
    else:
        parts = layout(table, console.width)
        if parts is None:
            _print_blocks(table, console)
        else:
            for number, (indexes, widths) in enumerate(parts):
                if number:
                    console.print()
                console.print(_rich_part(table, indexes, widths))
    if table.caption:
        print_line(console, table.caption)
    for note in table.notes:
        print_line(console, note)


def _rich_part(table: TextTable, indexes: list[int], widths: list[int]) -> object:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    part = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, GAP - 1, 0, 0))
    for index, width in zip(indexes, widths, strict=True):
        column = table.columns[index]
        part.add_column(escape(column.header), width=width, overflow="fold",
                        justify="right" if column.kind is Kind.NUMBER else "left")
    for row in table.rows:
        part.add_row(*(escape(row[index]) for index in indexes))
    return part


def _print_blocks(table: TextTable, console: Console) -> None:
    """Each row as a block: its key cells on one line, then `header: value`, one line each (wrapped, never cut)."""
    from rich.markup import escape

    keys = [i for i, column in enumerate(table.columns) if column.key]
    for row in table.rows:
        if keys:
            console.print("[bold]" + escape(" · ".join(row[i] for i in keys)) + "[/bold]", highlight=False)
        for i, column in enumerate(table.columns):
            if i not in keys:
                console.print(escape(f"  {column.header}: {row[i]}"), highlight=False)
