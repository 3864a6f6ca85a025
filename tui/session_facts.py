"""Reading a recorded session's ``meta`` into the TUI's state records."""

from __future__ import annotations

from execmode.profilers.session_end import from_meta
from execmode.tui.state import ExitSummary

# How the script ended (profilers/session_end.py: meta "end", or an older "exit") ->
# the controller's status words, which the status bar colours by.
_STATUS = {"finished": "ok", "exited": "exit", "raised": "exception", "interrupted": "quit",
           "breakpoint": "quit", "stopped": "quit", "killed": "killed", "crashed": "crashed",
           "unknown": "vanished", "recording": "recording"}


def exit_from_meta(meta: dict) -> ExitSummary:
    """How the recorded run ended, as far as the file can tell: the same words as
    ``execmode sessions`` and the reports."""
    end = from_meta(meta)
    info = meta.get("exit")
    traceback = info.get("traceback") if isinstance(info, dict) else None
    words = "finished normally" if end.kind == "finished" else end.text()
    return ExitSummary(_STATUS[end.kind], end.code, words,
                       traceback if isinstance(traceback, str) else None)
