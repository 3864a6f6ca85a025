"""What every view shares: the view bar, the status bar, the footer, and a data loader.

A :class:`StoreView` reads its data from the session store in a worker thread (its own
read-only connection) and shows it when the worker posts :class:`ViewDataLoaded`. It
reloads when the store grows, at most once a second while the script runs, and only
while it is on screen (a hidden view reloads when it is shown again).
"""

from __future__ import annotations

import time

from execmode.tui.copy_text import focused_row_text
from execmode.tui.data import SessionReader, SessionUnreadable
from execmode.tui.messages import ViewDataFailed, ViewDataLoaded
from execmode.tui.records import SourceRef
from execmode.tui.widgets.key_hints import KeyHints
from execmode.tui.widgets.status_bar import StatusBar
from execmode.tui.widgets.view_bar import ViewBar
from textual.app import ComposeResult
from textual.screen import Screen

RELOAD_INTERVAL_S = 1.0


# Terminal sizes the views adapt to (screens/responsive.tcss has the rules).
NARROW_COLUMNS, WIDE_COLUMNS = 100, 180
SHORT_ROWS, TALL_ROWS = 30, 55


def size_classes(width: int, height: int) -> dict[str, bool]:
    """The screen classes for a terminal size: which responsive.tcss rules apply."""
    return {"narrow-screen": width < NARROW_COLUMNS, "wide-screen": width >= WIDE_COLUMNS,
            "short-screen": height < SHORT_ROWS, "tall-screen": height >= TALL_ROWS}


class ViewScreen(Screen):
    VIEW = ""

    def on_resize(self, event) -> None:
        for name, on in size_classes(event.size.width, event.size.height).items():
            self.set_class(on, name)

    def compose(self) -> ComposeResult:
        yield ViewBar(self.VIEW)
        yield from self.compose_view()
        yield StatusBar()
        yield KeyHints()

    def compose_view(self) -> ComposeResult:
        yield from ()

    def breakpoint_location(self) -> SourceRef | None:
        """The source line under the cursor, for ``b`` (None: this view has no lines)."""
        return None

    def copy_text(self) -> str | None:
        """What ``y`` copies: the selected row of the focused list (views say more)."""
        return focused_row_text(self)

    def action_copy_text(self) -> None:
        """``ctrl+c``: text selected with the mouse, else what ``y`` copies."""
        if self.get_selected_text():
            super().action_copy_text()
        else:
            self.app.action_copy()


class StoreView(ViewScreen):
    """A view whose data comes from the session store (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._shown_generation: tuple | None = None
        self._loading = False
        self._last_load = 0.0
        self._timer = None

    def on_mount(self) -> None:
        self.watch(self.app, "snapshot", self._store_changed, init=False)
        self.watch(self.app, "session_path", self._store_changed, init=False)
        self.request_load()

    def on_screen_resume(self) -> None:
        self.request_load()

    def _store_changed(self, *_) -> None:
        if self.app.screen is self:
            self.request_load()

    def _generation(self) -> tuple:
        return (self.app.session_path, self.app.snapshot.generation)

    def request_load(self) -> None:
        """Load if the store changed since the data on screen; throttled while it grows."""
        if self._loading or self._generation() == self._shown_generation:
            return
        path = self.app.session_path
        if path is None or not self.app.snapshot.meta_version:
            self.show_empty(self.app.store_status)
            return
        wait = self._last_load + RELOAD_INTERVAL_S - time.monotonic()
        if self.app.run_state.phase == "running" and wait > 0:
            if self._timer is None:
                self._timer = self.set_timer(wait, self._timer_fired)
            return
        self._loading = True
        self._last_load = time.monotonic()
        generation = self._generation()
        self.run_worker(lambda: self._load_in_thread(path, generation), thread=True,
                        group=f"load-{self.VIEW}", exit_on_error=False)

    def _timer_fired(self) -> None:
        self._timer = None
        self.request_load()

    def _load_in_thread(self, path: str, generation: tuple) -> None:
        try:
            with SessionReader(path) as reader:
                data = self.load(reader)
        except SessionUnreadable as exc:
            self.post_message(ViewDataFailed(self.VIEW, str(exc)))
            return
        self.post_message(ViewDataLoaded(self.VIEW, data, generation))

    def on_view_data_loaded(self, message: ViewDataLoaded) -> None:
        if message.view != self.VIEW:
            return
        message.stop()
        self._loading = False
        self._shown_generation = message.generation
        self.show(message.data)
        self.request_load()  # the store may have grown while we read it

    def on_view_data_failed(self, message: ViewDataFailed) -> None:
        if message.view != self.VIEW:
            return
        message.stop()
        self._loading = False
        self.show_empty(message.message)

    # --- for subclasses -------------------------------------------------------------------
    def load(self, reader: SessionReader):
        """Read this view's data (runs in a worker thread: no widgets here)."""
        raise NotImplementedError

    def show(self, data) -> None:
        """Put loaded data on screen (the UI thread)."""
        raise NotImplementedError

    def show_empty(self, why: str) -> None:
        """No session to read yet, or it could not be read."""
