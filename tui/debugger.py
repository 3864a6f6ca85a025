"""The TUI's handle on the debugger controller.

Controller commands block until the agent replies, so every method here that talks to the
agent must run in a worker thread, never in the UI thread. The controller reports events
on its own reader threads; :meth:`DebugBridge.pump` (a worker) turns them into messages,
batching the script's output so that a script printing a million lines sends a few
messages per second, not a million.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

from execmode.tui import next_run_breakpoints as next_run
from execmode.tui.launch import ScriptLaunch
from execmode.tui.messages import (
    AgentReported,
    BreakpointsChanged,
    InputRequested,
    OutputArrived,
    ScriptCouldNotStart,
    ScriptExited,
    ScriptPaused,
    ScriptResumed,
    ScriptStarted,
)
from execmode.tui.state import ExitSummary, PausedInfo

from execmode.debug.controller import Controller, ControllerError, carried_breakpoint

_OUTPUT_BATCH_S = 0.05


class CommandError(Exception):
    """A controller command failed (the agent said why, or it is gone)."""


class DebugBridge:
    """Starts the script, forwards commands, and posts what happens as messages.

    Runs are numbered: ``requested_run`` counts the restarts asked for (UI thread), ``run``
    the one started. Lifecycle messages carry their run, and the app drops those of an
    earlier one, so a restart pressed while the old run pauses or ends cannot show the old
    run's state. Starts, restarts and stops take ``_lifecycle`` in turn: `r c r` pressed
    fast runs two restarts one after the other (or one, when the second came before the
    first began), never two starts racing for one controller.
    """

    def __init__(self, launch: ScriptLaunch, post: Callable, controller_factory=Controller):
        self.launch = launch
        self.post = post
        self.run = 0
        self.requested_run = 0
        self.session: str | None = None
        self.closing = False
        self._lifecycle = threading.Lock()
        self._events: queue.SimpleQueue = queue.SimpleQueue()
        # The agent's list at the last refresh; between runs, the list the next run gets.
        self.known_breakpoints: list[dict] = []
        self.controller = launch.take_controller(controller_factory)
        # The connection prestart() began while Textual loaded: it keeps the controller's
        # events until the first start takes it (take_early_start, or start()).
        self._early = launch.take_early_start()
        if self._early is None:
            self.controller.listeners.append(self._queue_event)

    def _queue_event(self, event) -> None:
        # Tagged with the run that published it (the controller publishes only the current
        # run's events, and stop() returns after the last of them).
        self._events.put((self.run, event))

    # --- lifecycle (worker threads) -------------------------------------------------------
    def start(self) -> None:
        """Start the script; posts ScriptStarted or ScriptCouldNotStart."""
        with self._lifecycle:
            if not self.closing:
                self._start()

    def _start(self) -> None:
        run = self.run
        early = self._settle_early()
        if early is not None:  # prestart() spawned the agent and connected to it
            connect = early.wait  # raises what the connection raised
        else:
            if not getattr(self.controller, "spawned", False):  # else prestart() chose it
                self.controller.session = self.launch.session_path(run)
            connect = self.controller.start
        self.session = self.controller.session
        try:
            connect()
        except (ControllerError, OSError) as exc:
            self.post(ScriptCouldNotStart(str(exc), run=run))
            return
        self.post(self._started(run))
        self.refresh_breakpoints()

    def _started(self, run: int) -> ScriptStarted:
        return ScriptStarted(self.controller.proc.pid if self.controller.proc else None,
                             self.session, run=run)

    def take_early_start(self) -> tuple[ScriptStarted, ScriptPaused | None] | None:
        """UI thread, as the app mounts: when the agent prestart() spawned has connected
        meanwhile, its start is taken here, without a worker: the messages that say so
        (ScriptStarted, and ScriptPaused when it paused already) are returned for the app
        to handle before its first frame; the controller's later events go to the pump.
        None when there is no such start, or it is not connected yet: start() (a worker)
        then waits for it."""
        early = self._early
        if early is None or not early.connected or not self._lifecycle.acquire(blocking=False):
            return None
        try:
            self._early = None
            paused = early.listen(self._queue_event, take_pause=True)
            self.session = self.controller.session
            started = self._started(self.run)
            if paused is None:
                return started, None
            return started, ScriptPaused(PausedInfo.from_event(paused.data), run=self.run)
        finally:
            self._lifecycle.release()

    def _settle_early(self, timeout: float | None = None):
        """Take the connection prestart() began, if no start took it yet, once it ended
        (connected or failed; or ``timeout`` ran out): its events go to the pump from now
        on. Under ``_lifecycle``: a restart or a stop waits for it, as for any start,
        rather than race it on the controller."""
        early, self._early = self._early, None
        if early is not None:
            early.listen(self._queue_event)
            early.join(timeout)
        return early

    def request_restart(self) -> int:
        """UI thread: count a restart asked for; its number tags the new run's messages."""
        self.requested_run += 1
        return self.requested_run

    def restart(self) -> None:
        """Run the script again from the top. The previous child is ended and reaped first;
        the breakpoints (with their ids, enabled state, conditions and ignore counts, and
        those set after the script ended) come along."""
        with self._lifecycle:
            target = self.requested_run
            if target <= self.run or self.closing:
                return  # a later request already ran this restart
            self._settle_early()  # pressed before the first start took the prestarted agent
            self.controller.stop()
            self.controller.initial_breakpoints = [
                carried_breakpoint(bp) for bp in self.known_breakpoints] or \
                self.controller.initial_breakpoints
            self.run = target
            self._start()

    def stop(self, wait_s: float = 10.0) -> None:
        """End the script for good (quit): a restart under way finishes first."""
        self.closing = True
        locked = self._lifecycle.acquire(timeout=wait_s)
        try:
            if locked:
                self._settle_early(wait_s)  # quit before the first start took it
            self.controller.close()
        except (ControllerError, OSError):
            pass
        finally:
            if locked:
                self._lifecycle.release()

    # --- commands (worker threads) --------------------------------------------------------
    def call(self, command: str, *args):
        """Run a controller command; raises CommandError with the agent's message."""
        try:
            return getattr(self.controller, command)(*args)
        except (ControllerError, OSError) as exc:
            raise CommandError(str(exc) or type(exc).__name__) from None

    def breakpoint_call(self, command: str, *args):
        """set/clear/enable/update a breakpoint: the agent's while a run is live, else the
        list the next run starts with (next_run_breakpoints.py). Waits for a restart under
        way, so an edit made meanwhile goes to the new run, not to a list already handed
        over. Returns what the agent returns (set: the breakpoint, with its note)."""
        with self._lifecycle:
            if self.controller.state in ("running", "paused"):
                try:
                    result = self.call(command, *args)
                except CommandError:
                    if self.controller.state != "finished":
                        raise
                else:
                    self.refresh_breakpoints()
                    return result
            try:
                result = self._edit_next_run(command, *args)
            except (ValueError, next_run.NoSuchBreakpoint) as exc:
                raise CommandError(str(exc)) from None
            self.post(BreakpointsChanged(self.known_breakpoints))
            return result

    def _edit_next_run(self, command: str, *args):
        bps = self.known_breakpoints
        if command == "set_breakpoint":
            self.known_breakpoints, entry = next_run.added(bps, *args)
            return entry
        if command == "clear_breakpoint":
            self.known_breakpoints = next_run.cleared(bps, *args)
        elif command == "enable_breakpoint":
            self.known_breakpoints = next_run.enabled(bps, *args)
        elif command == "update_breakpoint":
            self.known_breakpoints = next_run.updated(bps, *args)
        else:
            raise CommandError(f"{command}: not a breakpoint command")
        return self.known_breakpoints

    def send_stdin(self, line: str | None) -> None:
        """A line for the script's stdin (None: end of file)."""
        if line is None:
            self.call("close_stdin")
        else:
            self.call("send_stdin", line + "\n")

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
                event = self._next_event(timeout=0.1)
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
                        self.post(OutputArrived(lines, run=self.run))
                        lines, deadline = [], None
                    self._forward(event)
                timeout = 0.0 if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    event = self._next_event(timeout)
                except queue.Empty:
                    break
            if lines:
                self.post(OutputArrived(lines, run=self.run))

    def _next_event(self, timeout: float):
        """The next event of the current run (an earlier run's are stale: dropped)."""
        deadline = time.monotonic() + timeout
        while True:
            run, event = self._events.get(timeout=timeout) if timeout else \
                self._events.get_nowait()
            if run == self.run:
                return event
            timeout = max(0.0, deadline - time.monotonic())

    def _forward(self, event) -> None:
        kind, run = event.type, self.run
        if kind == "paused":
            self.post(ScriptPaused(PausedInfo.from_event(event.data), run=run))
        elif kind == "running":
            self.post(ScriptResumed(run=run))
        elif kind == "exited":
            if self.session and event.get("status") in ("killed", "crashed", "vanished"):
                # Its process died without closing the session: say how in it, as `execmode
                # run` and `profile` do (profilers/session_end.py).
                from execmode.profilers.session_end import record_unclosed

                record_unclosed(self.session, event.get("code"))
            ended = event.get("breakpoints")
            if ended is not None:  # with a note on each that never hit (reach.py)
                self.known_breakpoints = ended
                self.post(BreakpointsChanged(ended))
            self.post(ScriptExited(ExitSummary.from_event(event.data), run=run))
        elif kind == "input_requested":
            self.post(InputRequested(str(event.get("prompt") or ""), run=run))
        elif kind in ("error", "protocol_error"):
            self.post(AgentReported(str(event.get("message", "agent error")), "error"))
        elif kind == "graph_break":
            where = event.get("location") or {}
            self.post(AgentReported(f"graph break: {event.get('reason')} "
                                    f"(op {event.get('op')}, line {where.get('lineno', '?')})"))
