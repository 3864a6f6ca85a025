"""The row of view names at the top of every screen; click one to open it.

It fits its width: with room, every title and the help keys; narrower, tighter spacing;
at 80 columns, short titles for the views not shown (the current one stays whole), so
every key is always on screen. Ranks is there only for a run folder of ranks.
"""

from __future__ import annotations

from execmode.tui.views import VIEWS
from textual import events
from textual.widgets import Static

_HINT = "  ? help  ctrl+p commands"
# Short titles for narrow terminals (the current view keeps its whole title).
SHORT = {"tensor": "Tens", "breaks": "Brks", "passes": "Pass", "kernels": "Kern",
         "profile": "Prof", "breakpoints": "Bpts", "output": "Out", "ranks": "Rnk"}


def bar_markup(current: str, width: int, ranks: bool = False) -> str:
    """The bar's markup for ``width`` columns: the roomiest form that fits; ``ranks``: the
    app shows a run folder of ranks (the Ranks view is listed)."""
    views = [v for v in VIEWS if ranks or not v.only_ranks or v.name == current]
    for pad, short, hint in ((" ", False, True), (" ", False, False), ("", False, False),
                             (" ", True, False), ("", True, False)):
        parts, used = [], 0
        for view in views:
            title = view.title if view.name == current or not short else \
                SHORT.get(view.name, view.title)
            label = f" {view.key} {title} " if view.name == current else \
                f"{pad}{view.key} {title}{pad}"
            used += len(label) + (0 if pad else 1)
            if view.name == current:
                parts.append(f"[reverse b]{label}[/]")
            else:
                parts.append(f"[@click=app.show_view('{view.name}')]{label}[/]")
        joiner = "" if pad else " "
        if hint:
            used += len(_HINT)
        if used <= width or short:
            return joiner.join(parts) + (f"[dim]{_HINT}[/]" if hint else "")
    raise AssertionError("unreachable")


class ViewBar(Static):
    DEFAULT_CSS = """
    ViewBar { height: 1; background: $panel; color: $text-muted; }
    """

    def __init__(self, current: str, **kwargs) -> None:
        self.current = current
        super().__init__(bar_markup(current, 10_000), **kwargs)

    def on_resize(self, event: events.Resize) -> None:
        ranks = len(getattr(self.app.launch, "ranks", ()) or ()) > 1
        self.update(bar_markup(self.current, event.size.width, ranks))
