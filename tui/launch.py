"""What the TUI was asked to show: a script to run under the debugger, or a recorded session."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

SESSION_SUFFIX = ".emsession"


@dataclass
class ScriptLaunch:
    """``execmode tui SCRIPT [ARGS...]``: run the script under the agent, paused at first."""

    script: str
    args: list[str] = field(default_factory=list)
    breakpoints: list[str] = field(default_factory=list)
    start_paused: bool = True
    pyspy: bool = False
    session_dir: str | None = None     # where each run's session file goes
    session: str | None = None         # an explicit path for the first run
    cwd: str | None = None

    def session_path(self, run: int) -> str:
        """A fresh session file for run number ``run`` (restart makes a new one)."""
        if run == 0 and self.session:
            return self.session
        directory = Path(self.session_dir or default_session_dir())
        directory.mkdir(parents=True, exist_ok=True)
        stem = Path(self.script).stem or "script"
        stamp = time.strftime("%Y%m%d-%H%M%S")
        return str(directory / f"{stem}-{stamp}-{os.getpid()}-{run}{SESSION_SUFFIX}")


@dataclass
class SessionLaunch:
    """``execmode open SESSION``: a recorded run, post-mortem."""

    path: str


def default_session_dir() -> str:
    """Sessions of TUI runs live in the user's cache (``EXECMODE_SESSION_DIR`` overrides)."""
    override = os.environ.get("EXECMODE_SESSION_DIR")
    if override:
        return override
    try:
        from platformdirs import user_cache_dir
    except ImportError:
        return os.path.join(os.path.expanduser("~"), ".cache", "execmode", "sessions")
    return os.path.join(user_cache_dir("execmode"), "sessions")
