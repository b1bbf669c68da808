"""Textual's internals, in this module only: every private attribute, method or module corral-tui uses.

1. DataTable's internals, for what keeps the trials table fast under a flood of events.
`DataTable.update_cell` makes the whole table stale (every visible cell is drawn again on the next
frame), `add_row` does too, and after each added row DataTable measures every cell of the new rows.
`FastTable` instead writes a cell in place and forgets only the cached renders of the cells written
(and their rows' lines), keeps the other rows' renders when a row is appended, and sizes the table
without measuring a cell (every column has a fixed width, every row one line). That needs DataTable's
private attributes and methods, listed in `PRIVATE_ATTRIBUTES` and `PRIVATE_METHODS`.

2. Classes Textual's widgets compose that have no public name (`PRIVATE_IMPORTS`): Select's current-value
row (widgets/select.py fixes its mount) and Footer's keys (widgets/status.py sizes them).

Textual is pinned at `TEXTUAL_VERSION` in pyproject.toml. tests/tui/test_textual_adapter.py checks the
version, that each private exists with the type this module expects (so a Textual whose internals differ
fails there, by name), and that no other module under corral_tui touches a Textual private or imports a
private Textual module.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text, TextType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.widgets import DataTable
from textual.widgets._footer import FooterKey
from textual.widgets._select import NoSelection, SelectCurrent
from textual.widgets.data_table import ColumnKey, RowKey

TEXTUAL_VERSION = "8.2.8"  # the release these internals were read from (pyproject.toml pins it)
PRIVATE_IMPORTS = {"textual.widgets._footer": ("FooterKey",),
                   "textual.widgets._select": ("NoSelection", "SelectCurrent")}
__all__ = ["FastTable", "FooterKey", "NoSelection", "SelectCurrent"]

# attribute -> the type its value has on a DataTable instance (a property's value for the two properties)
PRIVATE_ATTRIBUTES: dict[str, type] = {
    "_data": dict,  # row key -> column key -> cell value
    "_cell_render_cache": LRUCache,  # ((row key, column key), ...) -> rendered cell lines
    "_row_render_cache": LRUCache,  # (row key, ...) -> rendered row lines
    "_line_cache": LRUCache,  # drawn lines of the widget
    "_row_renderable_cache": LRUCache,  # (update count, row index) -> a row's renderables
    "_offset_cache": LRUCache,  # row positions, keyed by the update count
    "_row_locations": object,  # TwoWayDict row key <-> row index (textual._two_way_dict, private itself)
    "_update_count": int,  # bumped by every change that makes the whole table stale
    "_total_row_height": int,  # property: the rows' summed height
    "_row_label_column_width": int,  # property: the row labels' width (0: no labels)
}
PRIVATE_METHODS = ("_update_dimensions", "_clear_caches")  # overridden / called with DataTable's signature


class FastTable(DataTable[Text]):
    """A DataTable of `Text` cells whose cells are written in place and redrawn alone."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._written: dict[RowKey, set[ColumnKey]] = {}  # cells written since the last `repaint_written`

    def write_cell(self, row: str, column: str, value: Text) -> None:
        """Set one cell, unless it holds an equal text already (drawn by the next `repaint_written`)."""
        row_key, column_key = RowKey(row), ColumnKey(column)
        cells = self._data.get(row_key)
        if cells is None:
            return
        old = cells.get(column_key)
        if isinstance(old, Text) and old == value and old.style == value.style:
            return
        cells[column_key] = value
        self._written.setdefault(row_key, set()).add(column_key)

    def repaint_written(self) -> None:
        """Forget the cached renders of the written cells (and their rows' lines) and redraw those rows.

        What `update_cell` does, without making every other cell of the table stale too."""
        stale, self._written = self._written, {}
        if not stale:
            return
        cells, rows = self._cell_render_cache, self._row_render_cache  # LRU caches: not iterable themselves
        cell_keys, row_keys = cells.keys(), rows.keys()
        for cell_key in [key for key in cell_keys if key[1] in stale.get(key[0], ())]:
            cells.discard(cell_key)
        for row_key in [key for key in row_keys if key[0] in stale]:
            rows.discard(row_key)
        self._line_cache.clear()
        top = self.scroll_offset.y
        bottom = top + self.size.height
        for stale_row in stale:
            index = self._row_locations.get(stale_row)
            if index is not None:
                self._row_renderable_cache.discard((self._update_count, index))
                if top <= index <= bottom:  # rows out of sight are drawn afresh when scrolled to
                    self.refresh_row(index)  # (it sums the heights of the rows above: not for all)

    def forget_written(self) -> None:
        """The table was cleared: the cells written are gone with it."""
        self._written.clear()

    def columns_resized(self) -> None:
        """Column widths were changed in place: measure and draw the table again."""
        self._clear_caches()
        self._update_dimensions([])
        self.refresh()

    def add_row(self, *cells: Text, height: int | None = 1, key: str | None = None,
                label: TextType | None = None) -> RowKey:
        """Append a row, keeping the other rows' cached renders: DataTable's add makes every cell of
        the table stale, so with trials starting every tick the whole visible table was drawn again
        each frame. An appended row moves no other row; only the row positions are recomputed."""
        count = self._update_count
        row_key = super().add_row(*cells, height=height, key=key, label=label)
        self._update_count = count
        self._offset_cache.clear()  # row positions, cached by update count
        return row_key

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """The table's size after rows were added. Every column has a fixed width and every row one
        line, so unlike DataTable's this measures no cell (it measured all ten of each new row: a
        fifth of the UI thread with 256 trials in flight, 250 new rows a second)."""
        header = self.header_height if self.show_header else 0
        width = sum(column.get_render_width(self) for column in self.columns.values())
        self.virtual_size = Size(width + self._row_label_column_width, self._total_row_height + header)
