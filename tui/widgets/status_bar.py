"""The status line at the bottom of every screen: running / paused at op N / finished."""

from __future__ import annotations

from execmode.tui.panels import status_text
from rich.console import RenderableType
from textual.widget import Widget


class StatusBar(Widget):
    """Shows the app's ``run_state`` (and whether the script waits on stdin) and how many
    ops the session holds; it only draws.

    One line, redrawn alone (no layout) when the state or the op count changes.
    """

    DEFAULT_CSS = """
    StatusBar { height: 1; background: $boost; }
    """

    def on_mount(self) -> None:
        self.watch(self.app, "run_state", self._changed, init=False)
        self.watch(self.app, "snapshot", self._changed, init=False)
        self.watch(self.app, "session_path", self._changed, init=False)  # another rank
        # Set while the script waits in input(), cleared when the line is sent or the run
        # ends or restarts (app.py, commands.py): the bar follows it.
        self.watch(self.app, "stdin_prompt", self._changed, init=False)
        self.watch(self.app, "stdin_line_shown", self._changed, init=False)

    def _changed(self, *_) -> None:
        self.refresh()

    def render(self) -> RenderableType:
        app = self.app
        return status_text(app.run_state, app.snapshot.ops.count, app.session_label,
                           waiting_for_input=app.stdin_prompt is not None,
                           input_line_shown=app.stdin_line_shown, width=self.size.width,
                           rank=app.rank_label)
