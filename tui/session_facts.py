"""Reading a recorded session's ``meta`` into the TUI's state records."""

from __future__ import annotations

from execmode.tui.state import ExitSummary

# meta "exit" is {"kind", "code", "exception"?, "traceback"?} (the profilers' runner and
# the debugger agent write it); kind -> the controller's status words.
_STATUS = {"normal": "ok", "ok": "ok", "exit": "exit", "exception": "exception",
           "interrupted": "quit", "quit": "quit"}


def exit_from_meta(meta: dict) -> ExitSummary:
    """How the recorded run ended, as far as the file can tell."""
    info = meta.get("exit")
    if isinstance(info, dict):
        kind = str(info.get("kind") or info.get("status") or "normal")
        status = _STATUS.get(kind, kind)
        code = info.get("code")
        words = {
            "ok": "finished normally",
            "exit": f"exited with sys.exit({code})",
            "exception": f"raised {info.get('exception') or 'an exception'}",
            "quit": "stopped before the end",
            "crashed": f"crashed with {info.get('signal')} (rows up to the last flush)",
            "killed": f"was killed by {info.get('signal')} (rows up to the last flush)",
            "vanished": f"ended with code {code} without reporting (os._exit, or the "
                        "interpreter died; rows up to the last flush)",
        }.get(status, kind)
        return ExitSummary(status, code, words, info.get("traceback"))
    if "end_ns" in meta:
        return ExitSummary("ok", 0, "recording ended normally")
    return ExitSummary("vanished", None, "the recording has no end: the script was killed, "
                                         "crashed, or is still running")
