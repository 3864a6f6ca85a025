"""What the TUI was asked to show: a script to run under the debugger, or a recorded session."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

# Always stop on an uncaught exception: the failing op's tensors stay inspectable.
CRASH_BREAKPOINT = "exception"


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

    # The controller prestart() spawned for the first run, until the debugger bridge
    # takes it (take_controller).
    prestarted: Any = field(default=None, repr=False, compare=False)

    def new_controller(self, factory=None):
        """A controller for this script with the TUI's options: the crash breakpoint, the
        input line, summaries and py-spy (those ``factory`` accepts: tests pass their own)."""
        if factory is None:
            from execmode.debug.controller import Controller as factory
        breakpoints = list(self.breakpoints)
        if CRASH_BREAKPOINT not in breakpoints:
            breakpoints.append(CRASH_BREAKPOINT)
        accepted = inspect.signature(factory).parameters
        options = {}
        if self.pyspy and "pyspy" in accepted:
            options["pyspy"] = True
        if self.summaries and "summaries" in accepted:
            options["summaries"] = True
        if "stdin_pipe" in accepted:  # the input line: stdin is a pipe the TUI writes
            options["stdin_pipe"] = True
        return factory(self.script, self.args, breakpoints=breakpoints, session=None,
                       start_paused=self.start_paused, cwd=self.cwd, **options)

    def prestart(self) -> None:
        """Spawn the first run's agent now, before the TUI's imports: the agent imports
        the engine and runs to its first pause meanwhile (two cores, one wait). A failure
        here is left for the bridge's start, which reports it in the TUI."""
        from execmode.debug.controller import ControllerError

        controller = self.new_controller()
        controller.session = self.session_path(0)
        try:
            controller.spawn()
        except (ControllerError, OSError):
            return
        self.prestarted = controller

    def take_controller(self, factory=None):
        """The prestarted controller (once), or a new one from ``factory``."""
        controller, self.prestarted = self.prestarted, None
        return controller if controller is not None else self.new_controller(factory)

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

