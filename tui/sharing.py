"""Taking things out of the TUI: export a report (``e``), copy (``y``, ``ctrl+c``), and
save a screenshot (``ctrl+s``).

Copy puts the selected row, or the Tensor view's summary, on the clipboard through
Textual's ``copy_to_clipboard`` (the terminal's OSC 52: most terminals and tmux with
``set-clipboard on`` pass it to the system clipboard); the notification repeats the text
so it can be read even where the terminal drops it. A screenshot is an SVG of what the
screen shows, saved beside the session file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from execmode.tui.export import default_path, export_to


class SharingCommands:
    """Mixed into the app: export, copy and screenshot actions."""

    def action_export(self) -> None:
        from execmode.tui.screens.export_dialog import ExportDialog

        path = self.session_path
        if path is None:
            self.notify("nothing recorded yet to export", severity="warning")
            return
        self.push_screen(ExportDialog(default_path(path)), self._export_chosen)

    def _export_chosen(self, out: str | None) -> None:
        path = self.session_path
        if not out or path is None:
            return
        self.notify(f"writing {out}…", title="export", timeout=3)

        def run() -> None:
            message, severity = export_to(path, out)
            self.call_from_thread(self.notify, message, title="export", severity=severity,
                                  timeout=10)

        self.run_worker(run, thread=True, group="export", exit_on_error=False)

    def action_copy(self) -> None:
        """``y``: the selected row (or the tensor summary) to the clipboard."""
        text = self.screen.copy_text() if hasattr(self.screen, "copy_text") else None
        if not text:
            self.notify("nothing selected to copy here", severity="warning")
            return
        self.copy_to_clipboard(text)
        first = text.splitlines()[0] if text else ""
        more = f" (+{len(text.splitlines()) - 1} lines)" if "\n" in text else ""
        self.notify(f"{first[:70]}{more}", title="copied", timeout=4)

    def action_screenshot_view(self) -> str:
        """``ctrl+s``: an SVG of the screen, beside the session (or here); says where."""
        folder = Path(self.session_path).parent if self.session_path else Path.cwd()
        if not os.access(folder, os.W_OK):
            folder = Path.cwd()
        name = f"execmode-{self.current_mode}-{time.strftime('%Y%m%d-%H%M%S')}.svg"
        written = self.save_screenshot(filename=name, path=str(folder))
        self.notify(written, title="screenshot saved", timeout=8)
        return written
