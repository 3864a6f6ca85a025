"""The row of view names at the top of every screen; click one to open it."""

from __future__ import annotations

from execmode.tui.views import VIEWS
from textual.widgets import Static


class ViewBar(Static):
    DEFAULT_CSS = """
    ViewBar { height: 1; background: $panel; color: $text-muted; }
    """

    def __init__(self, current: str, **kwargs) -> None:
        parts = []
        for view in VIEWS:
            label = f" {view.key} {view.title} "
            if view.name == current:
                parts.append(f"[reverse b]{label}[/]")
            else:
                parts.append(f"[@click=app.show_view('{view.name}')]{label}[/]")
        parts.append("[dim]  ? help  ctrl+p commands[/]")
        super().__init__("".join(parts), **kwargs)
