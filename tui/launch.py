"""What the TUI was asked to show: a script to run under the debugger, or a recorded session."""

from __future__ import annotations

import inspect
import threading
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
    # Copies of the last N eager ops' tensors in the agent, for the Tensor view's op:N
    # (execmode tui --keep-values N; None: the agent's default).
    keep_values: int | None = None
    session_dir: str | None = None     # where each run's session file goes
    session: str | None = None         # an explicit path for the first run
    cwd: str | None = None

    # The controller prestart() spawned for the first run, until the debugger bridge
    # takes it (take_controller), and its connection, made in a thread meanwhile.
    prestarted: Any = field(default=None, repr=False, compare=False)
    early_start: EarlyStart | None = field(default=None, repr=False, compare=False)

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
        if self.keep_values is not None and "keep_values" in accepted:
            options["keep_values"] = self.keep_values
        if "stdin_pipe" in accepted:  # the input line: stdin is a pipe the TUI writes
            options["stdin_pipe"] = True
        return factory(self.script, self.args, breakpoints=breakpoints, session=None,
                       start_paused=self.start_paused, cwd=self.cwd, **options)

    def prestart(self) -> None:
        """Spawn the first run's agent now, before the TUI's imports: the agent imports
        the engine and runs to its first pause meanwhile (two cores, one wait), and a
        thread connects to it (:class:`EarlyStart`), so that its pause can be in the TUI's
        first frame. A failure here is left for the bridge's start, which reports it in
        the TUI."""
        from execmode.debug.controller import ControllerError

        controller = self.new_controller()
        controller.session = self.session_path(0)
        try:
            controller.spawn()
        except (ControllerError, OSError):
            return
        self.prestarted = controller
        self.early_start = EarlyStart(controller)

    def take_controller(self, factory=None):
        """The prestarted controller (once), or a new one from ``factory``."""
        controller, self.prestarted = self.prestarted, None
        return controller if controller is not None else self.new_controller(factory)

    def take_early_start(self) -> EarlyStart | None:
        """The prestarted controller's connection under way (once), if there is one."""
        early, self.early_start = self.early_start, None
        return early

    def session_path(self, run: int) -> str:
        """A fresh session file for run number ``run`` (restart makes a new one)."""
        if run == 0 and self.session:
            return self.session
        from execmode.profilers.session_dir import new_session_path

        return str(new_session_path(self.script, self.session_dir))


class EarlyStart:
    """Connects to a spawned agent in a thread (``Controller.start``: its hello) while the
    TUI imports Textual, and keeps what the controller publishes until the debugger bridge
    listens: the bridge then gets those events in order, and can show a pause that came
    meanwhile in the app's first frame instead of after it."""

    def __init__(self, controller) -> None:
        self.controller = controller
        self.error: Exception | None = None
        self._lock = threading.Lock()
        self._kept: list = []
        self._listener = None
        controller.listeners.append(self._publish)
        self._thread = threading.Thread(target=self._connect, name="execmode-early-start",
                                        daemon=True)
        self._thread.start()

    def _connect(self) -> None:
        from execmode.debug.controller import ControllerError

        try:
            self.controller.start()
        except (ControllerError, OSError) as exc:
            self.error = exc

    def _publish(self, event) -> None:
        # Under the lock, so that an event published while listen() hands the kept ones
        # over cannot overtake them (the listener only queues: it does not wait).
        with self._lock:
            if self._listener is None:
                self._kept.append(event)
            else:
                self._listener(event)

    @property
    def connected(self) -> bool:
        """The agent said hello (False while connecting, and after a failure)."""
        return not self._thread.is_alive() and self.error is None

    def join(self, timeout: float | None = None) -> None:
        """Until the connection is made or failed (or ``timeout`` ran out)."""
        self._thread.join(timeout)

    def wait(self) -> None:
        """Until the connection is made; raises what Controller.start raised."""
        self._thread.join()
        if self.error is not None:
            raise self.error

    def listen(self, listener, take_pause: bool = False):
        """From now on the controller's events go to ``listener``; those kept so far go
        first. With ``take_pause``, a pause already kept is returned instead of handed
        over (the caller shows it itself) when it is all that happened to the run's state
        so far: no command was sent yet, so the agent still waits there."""
        with self._lock:
            kept, self._kept = self._kept, []
            taken = None
            states = [e for e in kept if e.type in ("paused", "running", "exited")]
            if take_pause and [e.type for e in states] == ["paused"]:
                taken = states[0]
                kept.remove(taken)
            for event in kept:
                listener(event)
            self._listener = listener
        return taken


@dataclass
class SessionLaunch:
    """``execmode open SESSION``: a recorded run, post-mortem. Opened on a run folder of
    ``execmode launch --profile``, ``ranks`` holds every rank's session and ``path`` the
    one shown (``R`` goes to the next)."""

    path: str
    # The first snapshot, read in a thread while Textual loads (prestart; tail.py).
    early: Any = field(default=None, repr=False, compare=False)
    ranks: tuple = ()

    def rank_of(self, path: str) -> int | None:
        """The rank of ``path`` among ``ranks`` (their order is the ranks')."""
        return self.ranks.index(path) if path in self.ranks else None

    def prestart(self) -> None:
        """Start reading the session's row indexes now, before the TUI's imports."""
        from execmode.tui.tail import EarlySnapshot

        self.early = EarlySnapshot(self.path)

