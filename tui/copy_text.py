"""What ``y`` and ``ctrl+c`` copy: the focused list's selected row as plain text.

Views with more to say about their selection (the Ops view's op in full, the Tensor
view's summary) override ``copy_text``; this is the shared fallback.
"""

from __future__ import annotations

import os

from rich.console import Console, RenderableType


def plain(renderable: RenderableType, width: int = 120) -> str:
    """A rich renderable as the plain text a person would paste."""
    console = Console(width=width, record=True, color_system=None, file=open(os.devnull, "w"))
    console.print(renderable)
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()).strip()


def focused_row_text(screen) -> str | None:
    """The selected row of the focused list or table, or None."""
    from execmode.tui.widgets.row_list import RowList
    from textual.widgets import DataTable

    widget = screen.focused
    if isinstance(widget, RowList) and widget.row_count:
        return widget.source.line(widget.cursor).plain.rstrip()
    if isinstance(widget, DataTable) and widget.row_count:
        cells = widget.get_row_at(widget.cursor_row)
        return "  ".join(plain(c) if not isinstance(c, str) else c for c in cells)
    return None
