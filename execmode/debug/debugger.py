"""The debugger: the instrumentation listener that pauses the script and serves the pause.

It holds the channel's reader thread (commands answered at once, queued for the next pause,
or acted on now: pause, quit), stops a script that runs plain Python between ops (a signal
or an asynchronous exception, interrupt.py), and the pause loop: flush the session, report
where, answer inspection commands until told to go on. Its parts: script_hooks.py (the
hooks), stops.py (whether to stop), inspection.py (the answers while paused).
"""

from __future__ import annotations

import queue
import threading

from .. import dispatch
from .._tensor import Tensor
from ..source import user_frame, user_location, user_stack
from . import interrupt
from .breakpoints import BreakpointError, BreakpointSet
from .conditions import ConditionError
from .headroom import with_headroom
from .inspection import Inspection, _array, _internal
from .interrupt import raise_in_thread
from .numbering import RunNumbers
from .protocol import Channel, ProtocolError, validate_command
from .reach import PlacesSeen, never_hit_reason, pending_note
from .script_hooks import ScriptHooks
from .stops import NextRule, PauseDecisions
from .summary import summarize
from .value_ring import DEFAULT_OPS, ValueRing

# Commands the reader thread answers at once, even while the script runs.
_IMMEDIATE = {"set_breakpoint", "clear_breakpoint", "enable_breakpoint", "update_breakpoint",
              "list_breakpoints"}


class QuitScript(BaseException):
    """Raised in the script's thread when the controller says quit."""


class Debugger(ScriptHooks, PauseDecisions, Inspection):
    """The instrumentation listener that pauses the script (its hooks are
    script_hooks.ScriptHooks, its pause decisions stops.PauseDecisions, its answers while
    paused inspection.Inspection)."""

    def __init__(self, channel: Channel, breakpoints: BreakpointSet, start_paused: bool,
                 keep_values: int = DEFAULT_OPS):
        self.channel = channel
        self.breakpoints = breakpoints
        self.lock = threading.Lock()
        self.commands: queue.Queue = queue.Queue()
        self.attention = False          # the reader thread queued something
        self.pause_requested = start_paused
        self.start_reason = "start" if start_paused else None
        self.mode = "run"               # run | step | next
        self.resumed_by = None          # the command that ended the last pause
        self.next_rule = NextRule()     # what `next` steps over (stops.py)
        self.numbers = RunNumbers()     # ops and kernel runs, numbered as the store numbers them
        self.paused_info: dict = {}
        self.current: dict = {}         # what inspect can look at while paused
        self.segment_inputs: dict = {}  # id(plan) -> the plan's input arrays
        self.last_plan = None
        self.recorder = None
        self.quitting = False
        self.script: str | None = None  # the script's path (reach.py: did a file run)
        self.paused_frame = None
        # Where the script is held while paused (profilers/session_end.stop_record): if it
        # is quit there, the session says "stopped at breakpoint 1 (nan) after kernel k7".
        self.held: dict | None = None
        self._last_inputs: tuple = ()
        self._kernel_met: tuple = (None, None, set())  # see _kernel_inputs_met
        self.seen = PlacesSeen()        # where ops ran: why a breakpoint has not hit
        self.kept = ValueRing(keep_values)  # the last ops' values (inspect op:N)
        # Stopping a script that runs plain Python (no ops, so no hook to notice a quit):
        # the reader thread raises QuitScript in the script's thread, but only while the script
        # itself runs (not while paused, not before or after it), and at most once.
        self._interrupt_lock = threading.Lock()
        self._script_thread: int | None = None   # set while the script runs
        self._in_pause = False
        self._interrupted = False
        self.signalled = False  # interrupt.py's signal reaches the script (set by main)

    # --- the reader thread ---------------------------------------------------------------
    def read_commands(self) -> None:
        while True:
            try:
                msg = self.channel.recv()
            except ProtocolError as exc:
                self._send({"type": "error", "id": None, "message": str(exc)})
                continue
            if msg is None:  # the controller went away: stop the script
                self.quitting = True
                self.attention = True
                self.commands.put({"type": "quit"})
                self._interrupt_script()
                return
            try:
                validate_command(msg)
            except ProtocolError as exc:
                self._send({"type": "error", "id": msg.get("id"), "message": str(exc)})
                continue
            kind = msg["type"]
            if kind in _IMMEDIATE:
                self._reply(msg, self._breakpoint_command(msg))
            elif kind == "pause":
                self.pause_requested = True
                self._reply(msg, {})
                self._interrupt_for_pause()
            else:
                if kind == "quit":
                    self.quitting = True
                self.commands.put(msg)
                self.attention = True
                if kind == "quit":
                    self._interrupt_script()

    # --- stopping a running script ---------------------------------------------------------
    def _interrupt_script(self) -> None:
        """Quit now, not at the next op: a script in plain Python (a data loader, a sleep, a
        loop of arithmetic) may dispatch no op for a long time, or ever. A paused script
        reads the queued quit itself. A blocking call (sleep, read) ends first."""
        with self._interrupt_lock:
            if self._script_thread is None or self._in_pause or self._interrupted:
                return
            self._interrupted = True
            # The signal ends a blocking call (sleep, read) too; its handler raises QuitScript.
            if not (self.signalled and interrupt.poke(self._script_thread)):
                raise_in_thread(self._script_thread, QuitScript)

    def _interrupt_for_pause(self) -> None:
        """``p``: pause now, not at the next op (on_interrupt pauses in the script's own
        Python, or leaves it to the next op's hook when execmode's code runs)."""
        with self._interrupt_lock:
            if self._script_thread is None or self._in_pause or not self.signalled:
                return
            interrupt.poke(self._script_thread)

    def on_interrupt(self, signum, frame) -> None:
        """interrupt.py's signal, in the script's thread between two bytecodes. Reads flags
        only (no lock: the interrupted code may hold it)."""
        if self._script_thread is None or self._in_pause:
            return  # not running the script, or paused: the queue serves the command
        if self.quitting:
            raise QuitScript()
        if not self.pause_requested or frame is None or _internal(frame) or \
                dispatch.current_tracer() is not None:
            return  # execmode's own code (an op, a trace): the next op's hook pauses
        self.pause_requested = False
        self.current = {}
        self._pause("pause", when="in", op="Python code (no op running)")

    def script_started(self) -> None:
        with self._interrupt_lock:
            if self.quitting:  # told to quit (or left alone) before the script began
                raise QuitScript()
            self._script_thread = threading.get_ident()

    def script_ended(self) -> None:
        """Close the window for _interrupt_script; withdraw a QuitScript not yet raised, so that it
        cannot land in the agent's own ending (closing the session)."""
        with self._interrupt_lock:
            thread, self._script_thread = self._script_thread, None
            if self._interrupted and thread is not None:
                raise_in_thread(thread, None)

    def _enter_pause(self) -> None:
        with self._interrupt_lock:
            self._in_pause = True

    def _leave_pause(self) -> None:
        with self._interrupt_lock:
            self._in_pause = False
            # _interrupt_script leaves a paused script to its queue; a quit that came just
            # as the pause ended (after its last read of the queue) is acted on here.
            quit_now = self.quitting and not self._interrupted
            self._interrupted = self._interrupted or quit_now
        if quit_now:
            raise QuitScript()

    def _send(self, msg: dict) -> None:
        with self.lock:
            try:
                self.channel.send(msg)
            except OSError:
                pass

    def _reply(self, msg: dict, result: dict) -> None:
        if "__error__" in result:
            self._send({"type": "error", "id": msg.get("id"), "message": result["__error__"]})
        else:
            self._send({"type": "reply", "id": msg.get("id"), **result})

    def _breakpoint_command(self, msg: dict) -> dict:
        kind = msg["type"]
        try:
            if kind == "set_breakpoint":
                bp = self.breakpoints.add(msg["spec"], ignore=msg.get("ignore", 0),
                                          enabled=msg.get("enabled", True))
                return {"breakpoint": self.describe(bp)}
            if kind == "clear_breakpoint":
                self.breakpoints.remove(msg["bp"])
            elif kind == "update_breakpoint":
                self.breakpoints.update(msg["bp"], spec=msg.get("spec"),
                                        ignore=msg.get("ignore"))
            elif kind == "enable_breakpoint":
                bp = self.breakpoints.get(msg["bp"])
                bp.enabled = msg["enabled"]
                if bp.enabled:
                    bp.disabled_reason = None
            return {"breakpoints": [self.describe(bp) for bp in self.breakpoints.items.values()]}
        except (BreakpointError, ConditionError) as exc:
            return {"__error__": str(exc)}

    def describe(self, bp, ended: bool = False) -> dict:
        """A breakpoint as the controller sees it, with a note on why it has not hit: while
        the script runs, pending (its place has run no op yet); when it ended, never hit."""
        note = never_hit_reason(bp, self.seen, self.script) if ended else \
            (bp.disabled_reason or pending_note(bp, self.seen))
        return dict(bp.to_json(), note=note)

    # --- pausing -------------------------------------------------------------------------
    def _drain(self) -> None:
        """Handle queued commands at an op boundary while running (quit, mostly)."""
        self.attention = False
        pending = []
        while True:
            try:
                msg = self.commands.get_nowait()
            except queue.Empty:
                break
            if msg["type"] == "quit":
                raise QuitScript()
            pending.append(msg)
        for msg in pending:  # inspection needs a pause; say so
            self._reply(msg, {"__error__": f"{msg['type']}: the script is running; pause first"})

    @with_headroom
    def _pause(self, reason: str, when: str, **info) -> None:
        self._enter_pause()
        try:
            self._pause_and_serve(reason, when, **info)
        finally:
            self._leave_pause()

    def _pause_and_serve(self, reason: str, when: str, **info) -> None:
        self.next_rule.end()
        if self.recorder is not None:
            self.recorder.flush()  # the controller reads every event up to this point
        frame = user_frame()
        self.paused_frame = frame
        # A member of a fused kernel has its own line (in the jitted function).
        loc = info.get("location") or user_location()
        from .. import scope

        event = {
            "type": "paused", "reason": reason, "when": when,
            "mode": "graph" if "kernel" in info else "eager",
            # The paused op's and kernel run's numbers, as the store numbers them (numbering.py).
            "op_index": self.numbers.op_paused_at(when),
            "kernel_index": self.numbers.kernel_runs,
            # The store's seq of the paused op's event (after an op), or of the last op
            # recorded before it (before an op: its own event does not exist yet).
            "seq": self.numbers.last_op or None,
            "seq_is_paused_op": when == "after" and "kernel" not in info,
            "op": info.get("op"), "location": loc.to_json() if loc else None,
            "stack": [s.to_json() for s in user_stack()], "scope": scope.current_scope(),
            "inputs": [summarize(x._data) if isinstance(x, Tensor) else {"scalar": repr(x)}
                       for x in info.get("inputs", ())],
            "output": summarize(_array(info["output"])) if info.get("output") is not None
            else None,
            "kernel": info.get("kernel"), "breakpoint": info.get("breakpoint"),
            "hunt": info.get("hunt"), "member": info.get("member"),
        }
        if self.current.get("inputs") and not event["inputs"]:
            event["inputs"] = [summarize(_array(x)) for x in self.current["inputs"]]
        self.held = _held_record(event, info.get("held_by") or self._breakpoint_named(reason))
        self._send(event)
        while True:
            msg = self.commands.get()
            self.attention = False
            kind = msg["type"]
            if kind == "quit":
                raise QuitScript()
            if kind in ("step", "next", "continue"):
                self.mode = {"continue": "run"}.get(kind, kind)
                self.resumed_by = kind
                self.held = None
                if kind == "next":
                    self.next_rule.begin(frame)
                self._reply(msg, {})
                self._send({"type": "running"})
                return
            self._reply(msg, self._inspect(msg))

    def _breakpoint_named(self, reason: str) -> dict | None:
        """The breakpoint a pause's reason names ("breakpoint 2: op:matmul": a place
        breakpoint's pause carries only the reason), or em.breakpoint()'s stand-in."""
        if reason == "em.breakpoint()":
            return {"id": None, "spec": "em.breakpoint()"}
        return next((bp.to_json() for bp in self.breakpoints.items.values()
                     if reason == f"breakpoint {bp.id}: {bp.spec}"), None)

    def pause_post_mortem(self, exc, tb_text, bp) -> None:
        """Stop after the script raised: its stack and locals stay inspectable."""
        frame = self.paused_frame
        loc = None
        if frame is not None:
            from ..source import location_of

            loc = location_of(frame)
        self._send({"type": "paused", "reason": f"exception: {type(exc).__name__}: {exc}",
                    "when": "exception", "mode": "eager",
                    "op_index": self.numbers.op_paused_at("exception"),
                    "kernel_index": self.numbers.kernel_runs, "op": getattr(exc, "op", None),
                    "location": loc.to_json() if loc else None,
                    "stack": getattr(self, "post_mortem_stack", []), "scope": "",
                    "inputs": [summarize(_array(x)) for x in self.current.get("inputs", [])],
                    "output": None, "kernel": None, "breakpoint": None,
                    "hunt": None, "traceback": tb_text})
        self.held = _held_record({"reason": "exception", "when": "after",
                                  "location": loc.to_json() if loc else None}, bp.to_json())
        while True:
            msg = self.commands.get()
            kind = msg["type"]
            if kind == "quit":
                raise QuitScript()
            if kind in ("step", "next", "continue"):
                self._reply(msg, {})
                return
            self._reply(msg, self._inspect(msg))


def _held_record(event: dict, bp: dict | None) -> dict:
    """Where a pause holds the script, as the session's end keeps it if it is quit there."""
    from ..profilers.session_end import stop_record

    kernel = event.get("kernel") or {}
    return stop_record(event.get("reason") or "", event.get("when") or "at",
                       breakpoint=bp, op=event.get("op"), kernel=kernel.get("name"),
                       location=event.get("location"), hunt=event.get("hunt"))


