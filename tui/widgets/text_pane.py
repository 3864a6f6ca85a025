"""TextPane: a fixed-size area showing one renderable; changing it redraws only itself.

Static.update() asks for a layout of the whole screen (its size may change). Measured on
the Ops view while a script runs: one layout plus the repaint it causes costs ~60-90 ms
of UI-thread time, ten times a second. A pane whose size its CSS fixes skips all that.
"""

from __future__ import annotations

from rich.console import RenderableType
from textual.widget import Widget


class TextPane(Widget):
    DEFAULT_CSS = "TextPane { height: 1; }"

    def __init__(self, content: RenderableType = "", **kwargs) -> None:
        super().__init__(**kwargs)
        self.content = content

    def show(self, content: RenderableType) -> None:
        if content is not self.content:
            self.content = content
            self.refresh()

    def render(self) -> RenderableType:
        return self.content
