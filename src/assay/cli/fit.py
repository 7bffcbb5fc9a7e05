"""Tables fitted to the terminal: every number and name printed whole, at 80 columns as at 200.

A table (``{"title", "columns", "rows", "notes"}``, :mod:`assay.report.tables`' form) whose cells do not fit the
width beside each other is reshaped rather than cut ("lla…", "0.0…" tell a reader nothing): its headers and cells
wrap on their spaces; its key columns (run, method, judge: the first ``keys`` columns) are replaced by a number,
spelt out once in a legend under the table; its other columns are split over several tables, each repeating the
key. :func:`fit` is pure (widths and new table dicts); :func:`render` makes them rich tables of fixed widths.
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len

Table = dict[str, Any]

#: What a rich table with heavy borders spends beside its cells: one space each side and one rule per column.
_PER_COLUMN = 3


def fit(table: Table, width: int, keys: int | None = None) -> list[Table]:
    """``table`` as one or more tables whose columns fit ``width`` cells, each with ``widths`` set.

    In order, the first that fits: as it is; headers wrapped on their words; cells wrapped on their spaces too
    ("0.12 [0.01, 0.25]" on two lines); the key columns in a legend (then the same wrapping); the columns split
    over several tables. No word is ever cut.

    Args:
        table: A table dict; its ``keys`` (default 1) says how many leading columns identify a row.
        width: The terminal's width in cells.
        keys: Overrides ``table["keys"]``.

    Returns:
        The fitted table(s); split parts are titled ``(part i of n)`` and repeat the key column(s); a legend is in
        ``legend`` (lines to print under the table).
    """
    keys = table.get("keys", 1) if keys is None else keys
    widths = _widths(table, width)
    if widths is not None:
        return [{**table, "widths": widths}]
    if _total(_narrowest(table)[:keys]) <= width // 3:  # short keys (a dimension) repeat in parts better than a legend
        return _split(table, keys, width)
    if keys:
        table, keys = with_legend(table, keys), 1
        widths = _widths(table, width)
        if widths is not None:
            return [{**table, "widths": widths}]
    return _split(table, keys, width)


def with_legend(table: Table, keys: int) -> Table:
    """The table with its first ``keys`` columns replaced by a number per distinct key, spelt out in ``legend``."""
    ids: dict[tuple[str, ...], str] = {}
    rows = []
    for row in table["rows"]:
        key = tuple(row[:keys])
        ids.setdefault(key, str(len(ids) + 1))
        rows.append([ids[key], *row[keys:]])
    legend = [f"#{i}: " + ", ".join(f"{col} {value}" for col, value in zip(table["columns"][:keys], key, strict=True))
              for key, i in ids.items()]
    return {**table, "columns": ["#", *table["columns"][keys:]], "rows": rows,
            "legend": legend, "keys": 1}


def render(table: Table) -> Any:
    """A rich table of the fitted ``table``: fixed column widths, headers wrapped on words, cells never cut."""
    from rich.table import Table as RichTable
    from rich.text import Text

    title = table.get("title") or ""
    # a narrow part of a split table keeps its title on one line where the terminal allows (rich wraps it otherwise)
    t = RichTable(title=Text(title, style="table.title") if title else None,
                  min_width=min(cell_len(title), table.get("width") or cell_len(title)))
    for i, (col, w) in enumerate(zip(table["columns"], table["widths"], strict=True)):
        t.add_column(Text(col), justify="left" if i < table.get("keys", 1) else "right", width=w, overflow="fold")
    for row in table["rows"]:
        t.add_row(*(Text(cell) for cell in row))  # names and numbers as they are: "[0.1, 0.3]" is no markup
    return t


def _cols(table: Table) -> list[list[str]]:
    return [[row[i] for row in table["rows"]] for i in range(len(table["columns"]))]


def _widest(header: str, cells: list[str]) -> int:
    return max([cell_len(header), *(cell_len(c) for c in cells)])


def _narrowest(table: Table, *, cells: bool = False) -> list[int]:
    """Each column's width with its header wrapped on words, and its cells too with ``cells``; no word is cut."""
    def longest(text: str, split: bool) -> int:
        return max(cell_len(w) for w in text.split() or [""]) if split else cell_len(text)

    return [max([longest(header, True), *(longest(c, cells) for c in col)])
            for header, col in zip(table["columns"], _cols(table), strict=True)]


def _total(widths: list[int]) -> int:
    return sum(widths) + _PER_COLUMN * len(widths) + 1


def _spread(narrow: list[int], natural: list[int], width: int) -> list[int]:
    """Give the room left over to the headers that wrap, left to right, up to their natural widths."""
    widths, room = list(narrow), width - _total(narrow)
    for i, want in enumerate(natural):
        extra = min(room, want - widths[i])
        widths[i] += extra
        room -= extra
    return widths


def _split(table: Table, keys: int, width: int) -> list[Table]:
    """The value columns over as many tables as they need, the key column(s) repeated in each.

    Columns are grouped by their widths with headers wrapped (cells too where a column needs it to fit at all),
    as few parts as fit and then as even as fit; each part is then fitted on its own (its cells unwrapped where
    its width allows).
    """
    narrow = [min(a, b) if _total([*_narrowest(table)[:keys], a]) > width else a
              for a, b in zip(_narrowest(table), _narrowest(table, cells=True), strict=True)]
    values = list(range(keys, len(narrow)))
    parts: list[list[int]] = [[]]
    for i in values:  # greedy: as few parts as fit...
        if parts[-1] and _total([*narrow[:keys], *(narrow[j] for j in parts[-1]), narrow[i]]) > width:
            parts.append([])
        parts[-1].append(i)
    size = -(-len(values) // len(parts))  # ...then as even as fit (no part of one lone column after a full one)
    even = [values[k:k + size] for k in range(0, len(values), size)]
    if len(even) == len(parts) and all(_total([*narrow[:keys], *(narrow[j] for j in part)]) <= width
                                       for part in even):
        parts = even
    out = []
    for n, part in enumerate(parts, 1):
        cols = [*range(keys), *part]
        sub = {**table, "title": f"{table.get('title', '')} (part {n} of {len(parts)})",
               "columns": [table["columns"][i] for i in cols],
               "rows": [[row[i] for i in cols] for row in table["rows"]],
               "notes": table.get("notes", []) if n == len(parts) else [],
               "legend": table.get("legend", []) if n == len(parts) else []}
        out.append({**sub, "widths": _widths(sub, width) or [narrow[i] for i in cols]})
    return out


def _widths(table: Table, width: int) -> list[int] | None:
    """The widest column widths up to ``width``: natural, else headers wrapped, else cells wrapped too; None."""
    natural = [_widest(c, col) for c, col in zip(table["columns"], _cols(table), strict=True)]
    if _total(natural) <= width:
        return natural
    for cells in (False, True):
        narrow = _narrowest(table, cells=cells)
        if _total(narrow) <= width:
            return _spread(narrow, natural, width)
    return None
