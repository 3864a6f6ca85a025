"""What the TUI was asked to show: a script to run under the debugger, or a recorded session."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ScriptLaunch:
    """``execmode tui SCRIPT [ARGS...]``: run the script under the agent, paused at first."""

    script: str
    args: list[str] = field(default_factory=list)
    breakpoints: list[str] = field(default_factory=list)
    start_paused: bool = True
    pyspy: bool = False
    # Value statistics of every op output in the session, as tfdbg's health pills: the op
    # history's NaN/Inf filter reads them (execmode tui --no-summaries turns them off).
    summaries: bool = True
    session_dir: str | None = None     # where each run's session file goes
    session: str | None = None         # an explicit path for the first run
    cwd: str | None = None

    def session_path(self, run: int) -> str:
        """A fresh session file for run number ``run`` (restart makes a new one)."""
        if run == 0 and self.session:
            return self.session
        from execmode.profilers.session_dir import new_session_path

        return str(new_session_path(self.script, self.session_dir))


@dataclass
class SessionLaunch:
    """``execmode open SESSION``: a recorded run, post-mortem."""

    path: str

