"""Every app-wide key in one table: the bindings, the footer and the help screen read it.

pdb/pudb habits: n next line, s step one op, c continue, p pause, b break here.
Each view adds its own keys (its screen's BINDINGS); the help screen lists those too. The
footer shows the stepping keys only in the Ops view, where they matter: 120 columns do
not hold every key.
"""

from __future__ import annotations

from typing import NamedTuple

from execmode.tui.views import VIEWS
from textual.binding import Binding


class Key(NamedTuple):
    key: str
    action: str
    description: str
    footer: bool = True


DEBUGGER_KEYS = (
    Key("n", "next", "Next line", False),
    Key("s", "step", "Step op", False),
    Key("c", "continue", "Continue", False),
    Key("p", "pause", "Pause", False),
    Key("b", "breakpoint_here", "Break here", False),
    Key("B", "breakpoint_dialog", "Breakpoint…", False),
    Key("r", "restart", "Restart", False),
    Key("e", "export", "Export…", False),
    Key("y", "copy", "Copy row", False),
    Key("ctrl+s", "screenshot_view", "Screenshot", False),
    Key("R", "next_rank", "Next rank", False),
    Key("question_mark", "help", "Help"),
    Key("q", "quit", "Quit"),
)
VIEW_KEYS = tuple(Key(v.key, f"show_view('{v.name}')", f"{v.title} view", False)
                  for v in VIEWS)
APP_KEYS = DEBUGGER_KEYS + VIEW_KEYS


def bindings() -> list[Binding]:
    return [Binding(k.key, k.action, k.description, show=k.footer) for k in APP_KEYS]


def footer_bindings(*actions: str) -> list[Binding]:
    """App keys a view shows in its footer (the Ops view shows the stepping keys)."""
    return [Binding(k.key, f"app.{k.action}", k.description)
            for k in DEBUGGER_KEYS if k.action in actions]


def display(key: str) -> str:
    """How a key name reads on screen."""
    return {"question_mark": "?", "enter": "Enter", "space": "Space",
            "left_square_bracket": "[", "right_square_bracket": "]",
            "delete": "Del", "escape": "Esc"}.get(key, key)
