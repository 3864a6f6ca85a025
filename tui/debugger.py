"""The TUI's handle on the debugger controller.

Controller commands block until the agent replies, so every method here that talks to the
agent must run in a worker thread, never in the UI thread. The controller reports events
on its own reader threads; :meth:`DebugBridge.pump` (a worker) turns them into messages,
batching the script's output so that a script printing a million lines sends a few
messages per second, not a million.
"""

from __future__ import annotations

import inspect
import queue
import time
from collections.abc import Callable

from execmode.tui.launch import ScriptLaunch
from execmode.tui.messages import (
    AgentReported,
    BreakpointsChanged,
    OutputArrived,
    ScriptCouldNotStart,
    ScriptExited,
    ScriptPaused,
    ScriptResumed,
    ScriptStarted,
)
from execmode.tui.state import ExitSummary, PausedInfo

from execmode.debug.controller import Controller, ControllerError

_OUTPUT_BATCH_S = 0.05
# Always stop on an uncaught exception: the failing op's tensors stay inspectable.
_CRASH_BREAKPOINT = "exception"


class CommandError(Exception):
    """A controller command failed (the agent said why, or it is gone)."""


class DebugBridge:
    """Starts the script, forwards commands, and posts what happens as messages."""

    def __init__(self, launch: ScriptLaunch, post: Callable, controller_factory=Controller):
        self.launch = launch
        self.post = post
        self.run = 0
        self.session: str | None = None
        self.restarting = False
        self._events: queue.SimpleQueue = queue.SimpleQueue()
        breakpoints = list(launch.breakpoints)
        if _CRASH_BREAKPOINT not in breakpoints:
            breakpoints.append(_CRASH_BREAKPOINT)
        options = {}
        if launch.pyspy and "pyspy" in inspect.signature(controller_factory).parameters:
            options["pyspy"] = True
        self.pyspy_wired = "pyspy" in options
        self.known_breakpoints: list[dict] = []   # the agent's list at the last refresh
        self.controller = controller_factory(
            launch.script, launch.args, breakpoints=breakpoints, session=None,
            start_paused=launch.start_paused, cwd=launch.cwd, **options)
        self.controller.listeners.append(self._events.put)

    # --- lifecycle (worker threads) -------------------------------------------------------
    def start(self) -> None:
        """Start the script; posts ScriptStarted or ScriptCouldNotStart."""
        self.session = self.launch.session_path(self.run)
        self.controller.session = self.session
        try:
            self.controller.start()
        except (ControllerError, OSError) as exc:
            self.post(ScriptCouldNotStart(str(exc)))
            return
        self.post(ScriptStarted(self.controller.proc.pid if self.controller.proc else None,
                                self.session))
        self.refresh_breakpoints()

    def restart(self) -> None:
        """Run the script again from the top, with the breakpoints set meanwhile."""
        carried = list(self.known_breakpoints)
        self.restarting = True
        try:
            self.controller.stop()
        finally:
            self.restarting = False
        self.run += 1
        self.start()
        if self.controller.state in ("idle", "finished"):
            return
        present = {bp["spec"] for bp in self.known_breakpoints}
        for bp in carried:
            try:
                if bp["spec"] not in present:
                    new = self.call("set_breakpoint", bp["spec"])
                    if not bp.get("enabled", True):
                        self.call("enable_breakpoint", new["id"], False)
            except CommandError:
                continue
        self.refresh_breakpoints()

    def stop(self) -> None:
        try:
            self.controller.close()
        except (ControllerError, OSError):
            pass

    # --- commands (worker threads) --------------------------------------------------------
    def call(self, command: str, *args):
        """Run a controller command; raises CommandError with the agent's message."""
        try:
            return getattr(self.controller, command)(*args)
        except (ControllerError, OSError) as exc:
            raise CommandError(str(exc) or type(exc).__name__) from None

    def refresh_breakpoints(self) -> None:
        try:
            self.known_breakpoints = self.call("breakpoints")
        except CommandError:
            return  # the script already ended: the list the view has stays
        self.post(BreakpointsChanged(self.known_breakpoints))

    # --- events (the pump worker) ---------------------------------------------------------
    def pump(self, cancelled: Callable[[], bool]) -> None:
        """Turn controller events into messages until ``cancelled()``."""
        while not cancelled():
            try:
                event = self._events.get(timeout=0.1)
            except queue.Empty:
                continue
            lines: list[tuple[str, str]] = []
            deadline = None
            while True:
                if event.type == "output":
                    lines.append((event.get("stream", "stdout"), event.get("line", "")))
                    deadline = deadline or time.monotonic() + _OUTPUT_BATCH_S
                else:
                    if lines:
                        self.post(OutputArrived(lines))
                        lines, deadline = [], None
                    self._forward(event)
                timeout = 0.0 if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    event = self._events.get(timeout=timeout) if timeout else \
                        self._events.get_nowait()
                except queue.Empty:
                    break
            if lines:
                self.post(OutputArrived(lines))

    def _forward(self, event) -> None:
        kind = event.type
        if kind == "paused":
            self.post(ScriptPaused(PausedInfo.from_event(event.data)))
        elif kind == "running":
            self.post(ScriptResumed())
        elif kind == "exited":
            if not self.restarting:
                self.post(ScriptExited(ExitSummary.from_event(event.data)))
        elif kind in ("error", "protocol_error"):
            self.post(AgentReported(str(event.get("message", "agent error")), "error"))
        elif kind == "graph_break":
            where = event.get("location") or {}
            self.post(AgentReported(f"graph break: {event.get('reason')} "
                                    f"(op {event.get('op')}, line {where.get('lineno', '?')})"))
