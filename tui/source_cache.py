"""Source files, read and syntax-highlighted once per run (in a worker: files can be big)."""

from __future__ import annotations

import threading
from pathlib import Path

from rich.text import Text

_MAX_BYTES = 4 * 2**20
THEME = "monokai"


def highlight(code: str, lexer: str) -> list[Text]:
    """One Text per line of ``code``, coloured by Pygments."""
    # Imported here, in the worker that reads the file: Pygments is not needed before
    # the first source is shown (~10 ms of the launch otherwise).
    from rich.syntax import Syntax

    text = Syntax(code, lexer, theme=THEME, background_color="default").highlight(code)
    text.expand_tabs(4)
    lines = text.split("\n", allow_blank=True)
    if lines and not lines[-1].plain and code.endswith("\n"):
        lines.pop()
    return lines


def read_source(path: str) -> list[Text]:
    """The file's lines, highlighted; one explanatory line when it cannot be read."""
    p = Path(path)
    try:
        if p.stat().st_size > _MAX_BYTES:
            return [Text(f"{path}: too large to show", style="dim")]
        code = p.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return [Text(f"source not available: {path} ({exc.strerror or exc})", style="dim")]
    return highlight(code, "python")


class SourceCache:
    """path -> highlighted lines; safe to fill from worker threads."""

    def __init__(self) -> None:
        self._lines: dict[str, list[Text]] = {}
        self._lock = threading.Lock()

    def get(self, path: str) -> list[Text] | None:
        with self._lock:
            return self._lines.get(path)

    def load(self, path: str) -> list[Text]:
        lines = self.get(path)
        if lines is None:
            lines = read_source(path)
            with self._lock:
                self._lines[path] = lines
        return lines

    def clear(self) -> None:
        with self._lock:
            self._lines.clear()
