"""RowList: a scrolling list that renders only the rows on screen (Textual's Line API).

DataTable measures every cell when rows are added (seconds for 100k rows); RowList asks
its source for the length and for the visible rows' text only, so a list of ten million
ops costs what a list of forty does. The source (see :mod:`execmode.tui.lines`) does the
formatting and the paging; this widget draws, moves a cursor and reports it.
"""

from __future__ import annotations

from execmode.tui.pages import RowsLoaded
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip


class RowList(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {"row-list--cursor", "row-list--cursor-blurred"}

    DEFAULT_CSS = """
    RowList { height: 1fr; }
    RowList > .row-list--cursor { background: $accent 40%; }
    RowList > .row-list--cursor-blurred { background: $accent 15%; }
    """

    BINDINGS = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
        Binding("enter", "choose", "Choose", show=False),
    ]

    cursor: reactive[int] = reactive(0, init=False)
    rows_arrived: reactive[int] = reactive(0, init=False)  # counts pages read for us

    class CursorMoved(Message):
        def __init__(self, row_list: RowList, index: int) -> None:
            self.row_list = row_list
            self.index = index
            super().__init__()

        @property
        def control(self) -> RowList:
            return self.row_list

    class RowChosen(Message):
        """Enter or a double click on a row."""

        def __init__(self, row_list: RowList, index: int) -> None:
            self.row_list = row_list
            self.index = index
            super().__init__()

        @property
        def control(self) -> RowList:
            return self.row_list

    def __init__(self, source=None, *, follow: bool = False, show_cursor: bool = True,
                 name=None, id=None, classes=None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.source = source
        self.follow = follow            # keep the cursor on the last row as rows arrive
        self.show_cursor = show_cursor

    # --- the data -------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self.source) if self.source is not None else 0

    def set_source(self, source, cursor: int | None = None) -> None:
        """Show another source; the cursor goes to ``cursor`` (or stays, clamped)."""
        self.source = source
        if hasattr(source, "owner"):
            source.owner = self  # a paged source tells us when rows arrive
        self._resize()
        target = self.cursor if cursor is None else cursor
        if self.follow and cursor is None:
            target = self.row_count - 1
        self._set_cursor(target, announce=cursor is not None)
        self.refresh()

    def rows_changed(self) -> None:
        """The source grew or shrank: follow the tail if the cursor was there."""
        at_end = self.cursor >= self._last_count - 1
        self._resize()
        if self.follow and at_end:
            self._set_cursor(self.row_count - 1, announce=True)
        else:
            self._set_cursor(self.cursor, announce=False)
        self.refresh()

    _last_count = 0

    def _resize(self) -> None:
        self._last_count = self.row_count
        # Only a source that says how wide it is scrolls sideways (IR text, source files);
        # rows cut to the pane (the op list) would get a horizontal scrollbar from the
        # vertical one's two columns, hiding the last row, the paused op, behind it.
        width = getattr(self.source, "width", None) or 0
        self.virtual_size = Size(width, self.row_count)

    def on_resize(self, event: events.Resize) -> None:
        self._resize()
        if self._centred:  # the layout settled after center_on(): centre with the new size
            self._centre()
        else:
            self._scroll_to_cursor()

    _centred = False

    def center_on(self, index: int) -> None:
        """The cursor on row ``index``, scrolled to the middle (the source pane's paused
        line), and kept there when the list is resized before anyone moves it."""
        self._set_cursor(index, announce=False)
        self._centred = True
        self._centre()
        self.call_after_refresh(self._centre)  # once the scroll range is laid out

    def _centre(self) -> None:
        if self._centred:
            self.scroll_to(y=max(0, self.cursor - self.size.height // 2), animate=False,
                           immediate=True, force=True)

    # --- the cursor -----------------------------------------------------------------------
    def _set_cursor(self, index: int, announce: bool = True) -> None:
        self._centred = False
        index = max(0, min(index, self.row_count - 1))
        changed = index != self.cursor
        self.set_reactive(RowList.cursor, index)
        self._scroll_to_cursor()
        if changed or announce:
            self.refresh()
            if self.row_count:
                self.post_message(self.CursorMoved(self, index))

    def move_to(self, index: int) -> None:
        self._set_cursor(index)

    def _scroll_to_cursor(self) -> None:
        height = max(1, self.scrollable_content_region.height)
        top = round(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True, force=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True, force=True)

    def action_move(self, delta: int) -> None:
        self._set_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        height = max(1, self.scrollable_content_region.height)
        self._set_cursor(self.cursor + direction * height)

    def action_jump(self, index: int) -> None:
        self._set_cursor(self.row_count - 1 if index < 0 else index)

    def action_choose(self) -> None:
        if self.row_count:
            self.post_message(self.RowChosen(self, self.cursor))

    def on_click(self, event: events.Click) -> None:
        index = round(self.scroll_y) + event.y
        if 0 <= index < self.row_count:
            self._set_cursor(index)
            if event.chain >= 2:
                self.post_message(self.RowChosen(self, index))

    def on_rows_loaded(self, message: RowsLoaded) -> None:
        """Rows a paged source was reading have arrived: draw them."""
        message.stop()
        self.rows_arrived += 1
        self.refresh()
        if message.start <= self.cursor < message.start + message.count:
            self.post_message(self.CursorMoved(self, self.cursor))

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    # --- drawing --------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if index >= self.row_count:
            return Strip.blank(width, base)
        text: Text = self.source.line(index).copy()
        text.stylize_before(base)  # under the source's own colours
        if self.show_cursor and index == self.cursor:
            text.pad_right(max(0, scroll_x + width - text.cell_len))
            cls = "row-list--cursor" if self.has_focus else "row-list--cursor-blurred"
            text.stylize(self.get_component_rich_style(cls))
        strip = Strip(text.render(self.app.console), text.cell_len)
        return strip.crop_extend(scroll_x, scroll_x + width, base)
