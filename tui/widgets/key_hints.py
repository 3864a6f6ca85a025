"""KeyHints: the bottom line of keys for what has the focus, drawn as one line of text.

Textual's Footer mounts a widget per key and remounts them whenever the bindings change,
which is at every view switch: measured, half of a view switch's time (a switch took
200-300 ms with it, 90-130 ms without, under load on the 2-vCPU VM). This draws the same
keys (the screen's active bindings marked ``show``) as text and repaints one line when
they change. A click on a key presses it.
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.widget import Widget

_PALETTE = " ^p palette "


class KeyHints(Widget):
    DEFAULT_CSS = """
    KeyHints { height: 1; background: $panel; color: $text-muted; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._spans: list[tuple[int, int, str]] = []  # (start, end, key) of each hint

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, _screen) -> None:
        self.refresh()

    def hints(self) -> list[tuple[str, str, str]]:
        """(key, how it reads, description) of each key shown, one per action."""
        seen, out = set(), []
        for active in self.screen.active_bindings.values():
            binding = active.binding
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            out.append((binding.key, self.app.get_key_display(binding), binding.description))
        return out

    def render(self) -> Text:
        text, spans = Text(no_wrap=True, overflow="crop"), []
        room = self.size.width - len(_PALETTE)
        for key, shown, description in self.hints():
            hint = f" {shown} {description} "
            if text.cell_len + len(hint) > room:
                break
            start = text.cell_len
            text.append(f" {shown} ", style="bold")
            text.append(f"{description} ")
            spans.append((start, text.cell_len, key))
        self._spans = spans
        text.append(" " * max(0, room - text.cell_len))
        text.append(_PALETTE, style="dim")
        return text

    def on_click(self, event: events.Click) -> None:
        for start, end, key in self._spans:
            if start <= event.x < end:
                self.app.simulate_key(key)
                return
        if event.x >= self.size.width - len(_PALETTE):
            self.app.action_command_palette()
