"""The debugger agent: runs the user's script in this (child) process under control.

Started by a controller (the TUI, ``execmode run``, a test) as
``python -m execmode.debug.agent --socket PATH [--session FILE] [--break SPEC]... [--run]
SCRIPT [ARGS...]``. It connects to the controller's Unix socket, hooks the instrumentation
points (before/after each eager op, before/after each graph kernel, graph breaks), and runs
the script as ``__main__``. It pauses before an op (step/next/pause/breakpoints on places)
or after one (tensor conditions on its output), flushes the session store, reports where,
and answers inspection commands until told to go on.

This module is the channel (the reader thread, replies, quitting a running script), the
hooks and the pause loop, and main. Whether to stop is decided in stops.py (including the
pdb-like ``next`` rule); the inspection commands are answered by inspection.py.
"""

from __future__ import annotations

import argparse
import ctypes
import faulthandler
import os
import queue
import socket
import sys
import threading

from .. import dispatch, instrument, lifeline, script_runner
from .._tensor import Tensor
from ..source import user_frame, user_location, user_stack
from . import interrupt, stdin_requests
from .breakpoints import BreakpointError, BreakpointSet
from .conditions import ConditionError
from .firing import frame_for
from .headroom import with_headroom
from .hunt import hunt
from .inspection import Inspection, _array, _internal
from .kernel_steps import member_info, member_inputs, member_values, members_of
from .numbering import RunNumbers
from .protocol import PROTOCOL_VERSION, Channel, ProtocolError, validate_command
from .pyvalues import hooks_detached
from .reach import PlacesSeen, never_hit_reason, pending_note
from .stops import NextRule, PauseDecisions
from .summary import TensorStats, summarize
from .value_ring import DEFAULT_OPS, ValueRing

# Commands the reader thread answers at once, even while the script runs.
_IMMEDIATE = {"set_breakpoint", "clear_breakpoint", "enable_breakpoint", "update_breakpoint",
              "list_breakpoints"}


class _Quit(BaseException):
    """Raised in the script's thread when the controller says quit."""


def _raise_in_thread(thread_id: int, exc_type: type[BaseException] | None) -> None:
    """Raise ``exc_type`` in another thread at its next bytecode boundary; None withdraws
    one that has not been raised yet (CPython's PyThreadState_SetAsyncExc)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exc_type) if exc_type else None)


class Debugger(PauseDecisions, Inspection):
    """The instrumentation listener that pauses the script (its pause decisions are
    stops.PauseDecisions, its answers while paused inspect.Inspection)."""

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
        # the reader thread raises _Quit in the script's thread, but only while the script
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
            # The signal ends a blocking call (sleep, read) too; its handler raises _Quit.
            if not (self.signalled and interrupt.poke(self._script_thread)):
                _raise_in_thread(self._script_thread, _Quit)

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
            raise _Quit()
        if not self.pause_requested or frame is None or _internal(frame) or \
                dispatch.current_tracer() is not None:
            return  # execmode's own code (an op, a trace): the next op's hook pauses
        self.pause_requested = False
        self.current = {}
        self._pause("pause", when="in", op="Python code (no op running)")

    def script_started(self) -> None:
        with self._interrupt_lock:
            if self.quitting:  # told to quit (or left alone) before the script began
                raise _Quit()
            self._script_thread = threading.get_ident()

    def script_ended(self) -> None:
        """Close the window for _interrupt_script; withdraw a _Quit not yet raised, so that it
        cannot land in the agent's own ending (closing the session)."""
        with self._interrupt_lock:
            thread, self._script_thread = self._script_thread, None
            if self._interrupted and thread is not None:
                _raise_in_thread(thread, None)

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
            raise _Quit()

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

    # --- hooks (the script's thread) ----------------------------------------------------
    def before_op(self, op, inputs, attrs) -> None:
        if dispatch.current_tracer() is not None:
            return  # tracing builds a graph; its kernels are where graph mode stops
        self._last_inputs = inputs
        if self.attention:
            self._drain()
        reason = self._should_pause_before(op.name, inputs)
        if reason:
            self.current = {"inputs": [x for x in inputs if isinstance(x, Tensor)]}
            self._pause(reason, op=op.name, attrs=attrs, inputs=inputs, when="before")

    def on_op(self, event, output) -> None:
        number = self.numbers.op_ran(event.seq)
        if dispatch.current_tracer() is not None:
            return
        self.seen.add(event.location, event.scope)
        self.kept.keep(number, output, self._last_inputs)
        conditions = [bp for bp in self.breakpoints.active() if bp.checks_output]
        if not conditions:
            return
        stats = TensorStats(output._data, event.op, event.scope, event.location)
        for bp in conditions:
            if bp.reaches(event.op, event.scope, event.location) and \
                    self._holds(bp, stats, frame_for(bp)) and \
                    not self._carried_on(bp, event, output) and bp.hit():
                self.current = {"inputs": [x for x in self._last_inputs
                                           if isinstance(x, Tensor)], "output": output}
                self._pause(f"breakpoint {bp.id}: {bp.spec}", op=event.op, attrs=event.attrs,
                            inputs=(), when="after", output=output, breakpoint=bp.to_json())
                return

    def before_kernel(self, plan, index, values) -> None:
        if index == 0:
            self.segment_inputs[id(plan)] = [values[s] for s in plan.input_slots]
            self.last_plan = plan
        self.numbers.kernel_begins()
        self._kernel_met = (id(plan), index, self._kernel_inputs_met(plan, index, values))
        if self.attention:
            self._drain()
        step = plan.steps[index]
        for member in step.node.body or (step.node,):
            self.seen.add(member.loc, member.scope)
        reason = self._should_pause_before_kernel(step)
        if reason:
            args = [values[a] for a in step.args if isinstance(a, int)]
            self.current = {"inputs": args, "plan": plan, "step": index}
            info = self._kernel_info(plan, index)
            self._pause(reason, when="before", kernel=info)
            if self.resumed_by == "step" and members_of(step):
                self._step_into(plan, index, info)

    def _step_into(self, plan, index, info) -> None:
        """``s`` at a fused kernel: pause before each member op (kernel_steps.py)."""
        step = plan.steps[index]
        members = members_of(step)
        try:
            with hooks_detached():  # the interpreter's ops are the debugger's, not the script's
                values = member_values(plan, step, self.segment_inputs[id(plan)])
        except Exception as exc:  # noqa: BLE001 - stepping in must never end the script
            self._send({"type": "error", "id": None, "message": f"cannot step into kernel "
                        f"{step.name}: {type(exc).__name__}: {exc}; it runs as one step"})
            return
        for i, member in enumerate(members):
            self.current = {"inputs": member_inputs(member, values), "plan": plan,
                            "step": index}
            self._pause(f"step: %{member.id} {member.op} ({i + 1}/{len(members)} in kernel "
                        f"{step.name})", when="before", kernel=info, op=member.op,
                        member=member_info(member, i, len(members), step.name),
                        location=member.loc)
            if self.mode == "run":
                return  # continue: the kernel runs, and the script with it

    def after_kernel(self, plan, index, out) -> None:
        conditions = [bp for bp in self.breakpoints.active() if bp.checks_output]
        if not conditions:
            return
        step = plan.steps[index]
        members = step.node.body or (step.node,)
        last = members[-1]
        stats = TensorStats(out, last.op, last.scope, last.loc)
        plan_id, at, met = self._kernel_met
        if (plan_id, at) != (id(plan), index):
            met = set()
        for bp in conditions:
            if not any(bp.matches_place(m.op, m.scope, m.loc) for m in members):
                continue
            bp.reached += 1
            if bp.id in met or not self._holds(bp, stats, frame_for(bp)):
                continue
            if bp.hit():
                report = None
                if stats.nan or stats.inf:
                    report = hunt(plan, self.segment_inputs.get(id(plan), []), index)
                self.current = {"output": out, "plan": plan, "step": index}
                self._pause(f"breakpoint {bp.id}: {bp.spec}", when="after",
                            kernel=self._kernel_info(plan, index), output=out,
                            breakpoint=bp.to_json(), hunt=report)
                return

    def user_breakpoint(self) -> None:
        """``em.breakpoint()`` in the script: pause right here."""
        self.current = {}
        self._pause("em.breakpoint()", when="breakpoint")

    def on_event(self, event) -> None:
        if event.kind != "graph_break":
            return
        for bp in self.breakpoints.active("graph_break"):
            if bp.hit():
                loc = event.data.get("location")
                self._send({"type": "graph_break", "reason": event.data.get("reason"),
                            "op": event.data.get("op"),
                            "location": loc.to_json() if loc else None})
                self.current = {}
                self._pause(f"graph break: {event.data.get('reason')}", when="break",
                            held_by=bp.to_json())
                return

    def _kernel_info(self, plan, index) -> dict:
        step = plan.steps[index]
        source = getattr(step.fn, "source", None)
        return {
            "graph_id": plan.graph_id, "index": index, "name": step.name, "kind": step.kind,
            "backend": step.backend, "member_nodes": list(step.member_ids),
            "member_ops": list(step.member_ops),
            "inputs": self._kernel_inputs(plan, step),
            "members": [
                {"id": m.id, "op": m.op, "type": m.type_str(), "scope": m.scope,
                 "location": m.loc.to_json() if m.loc else None}
                for m in (step.node.body or (step.node,))
            ],
            "source": source[:20000] if isinstance(source, str) else None,
        }

    @staticmethod
    def _kernel_inputs(plan, step) -> list[dict]:
        """What a kernel reads, as the ``input:N`` refs name them (inspection.py)."""
        nodes = {n.id: n for n in plan.graph.nodes}
        inputs = []
        for i in step.node.node_inputs:
            n = nodes.get(i)
            inputs.append({"id": i, "op": (n.label or n.op) if n is not None else "?",
                           "type": n.type_str() if n is not None else ""})
        return inputs

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
                raise _Quit()
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
                raise _Quit()
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
                raise _Quit()
            if kind in ("step", "next", "continue"):
                self._reply(msg, {})
                return
            self._reply(msg, self._inspect(msg))


# --- entry point -----------------------------------------------------------------------

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="execmode.debug.agent")
    parser.add_argument("--socket", required=True)
    parser.add_argument("--session")
    parser.add_argument("--break", dest="breaks", action="append", default=[])
    parser.add_argument("--break-json", dest="carried", action="append", default=[],
                        help="a breakpoint carried from an earlier run: "
                             '{"id", "spec", "enabled", "ignore"} (and "disabled_reason")')
    parser.add_argument("--run", action="store_true", help="start running, not paused")
    parser.add_argument("--stdin-requests", action="store_true",
                        help="stdin is the controller's pipe: say input_requested before a "
                             "read waits (the TUI's input line)")
    parser.add_argument("--pyspy", action="store_true",
                        help="sample this process with py-spy into the session")
    parser.add_argument("--summaries", action="store_true",
                        help="record value statistics of every op output in the session")
    parser.add_argument("--keep-values", type=int, default=DEFAULT_OPS, metavar="N",
                        help="keep copies of the last N eager ops' tensors for inspection "
                             f"(default {DEFAULT_OPS}; 0 keeps none)")
    # SCRIPT and its ARGS as one REMAINDER after a `--`: a script named like an option
    # (-x.py) is still the script, and a `--` among its arguments stays its own.
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- SCRIPT [ARGS...]")
    opts = parser.parse_args(argv)
    command = opts.command[1:] if opts.command[:1] == ["--"] else opts.command
    if not command:
        parser.error("the script to run is missing")
    opts.script, opts.args = command[0], command[1:]

    lifeline.install()  # end with the controller, and end cleanly (lifeline.py)
    faulthandler.enable()  # a segfault prints the Python stack to stderr (the controller)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(opts.socket)
    channel = Channel(sock)
    breakpoints = BreakpointSet()
    debugger = Debugger(channel, breakpoints, start_paused=not opts.run,
                        keep_values=opts.keep_values)
    debugger.script = opts.script
    debugger._send({"type": "hello", "version": PROTOCOL_VERSION, "pid": os.getpid(),
                    "script": opts.script})
    given = [(spec, breakpoints.add, "--break") for spec in opts.breaks]
    given += [(text, breakpoints.restore, "--break-json") for text in opts.carried]
    for spec, add, option in given:
        try:
            bp = add(spec)
        except (BreakpointError, ConditionError) as exc:
            debugger._send({"type": "error", "id": None, "message": f"{option} {spec}: {exc}"})
            return 2
        debugger._send({"type": "breakpoint_set", "breakpoint": debugger.describe(bp)})
    threading.Thread(target=debugger.read_commands, name="execmode-agent-reader",
                     daemon=True).start()
    if opts.session:
        debugger.recorder = _start_recording(opts.session, opts.script, opts.args,
                                             summaries=opts.summaries)
    if debugger.recorder is not None:
        debugger.numbers.seq_base = debugger.recorder.seq_base
    sampler = _start_pyspy(debugger.recorder) if opts.pyspy and debugger.recorder else None
    instrument.add_listener(debugger)
    if opts.stdin_requests:
        stdin_requests.install(debugger._send)
    debugger.signalled = interrupt.install(debugger.on_interrupt)
    with _captured_output(debugger.recorder):
        result = run_script(opts.script, opts.args, debugger)
    interrupt.uninstall()
    instrument.remove_listener(debugger)
    if sampler is not None:
        _fold_pyspy(debugger.recorder, sampler)
    if debugger.recorder is not None:
        _record_end(debugger.recorder, result, debugger.held)
    # The protocol's words: "ok" for a normal end.
    status, code = "ok" if result.kind == "normal" else result.kind, result.code
    debugger._send({"type": "finished", "status": status, "code": code,
                    "traceback": result.traceback,
                    "breakpoints": [debugger.describe(bp, ended=True)
                                    for bp in breakpoints.items.values()]})
    lifeline.flush_quietly()  # the controller, and with it our pipes, may be gone
    channel.close()
    return code


def run_script(path: str, args: list, debugger: Debugger) -> script_runner.ScriptExit:
    """Run ``path`` as __main__ (execmode.script_runner, as run and profile do); an
    exception breakpoint pauses post mortem at the failure."""
    result = script_runner.run_script(path, args, on_start=debugger.script_started,
                                      on_end=debugger.script_ended, quit_exception=_Quit)
    exc = result.error
    if result.kind == "exception" and exc is not None and \
            debugger.breakpoints.active("exception"):
        bp = debugger.breakpoints.active("exception")[0]
        bp.hit()
        debugger.paused_frame = _innermost_user_frame(exc.__traceback__)
        # The failing op's inputs stay inspectable (input:N).
        debugger.current = {"inputs": [x for x in debugger._last_inputs
                                       if isinstance(x, Tensor)]}
        debugger.post_mortem_stack = _user_frames(exc.__traceback__)
        try:
            debugger.pause_post_mortem(exc, result.traceback, bp)
        except _Quit:
            pass
    return result


def _held_record(event: dict, bp: dict | None) -> dict:
    """Where a pause holds the script, as the session's end keeps it if it is quit there."""
    from ..profilers.session_end import stop_record

    kernel = event.get("kernel") or {}
    return stop_record(event.get("reason") or "", event.get("when") or "at",
                       breakpoint=bp, op=event.get("op"), kernel=kernel.get("name"),
                       location=event.get("location"), hunt=event.get("hunt"))


def _record_end(recorder, result, held: dict | None) -> None:
    """How the script ended, with where the debugger held it (a breakpoint and its
    evidence), into the session; then close it."""
    from ..profilers import session_end

    session_end.record(recorder.set_meta, result, session_end.from_script_exit(result, held))
    recorder.close()


def _user_frames(tb) -> list[dict]:
    from ..source import location_of

    out = []
    while tb is not None:
        if not _internal(tb.tb_frame):
            loc = location_of(tb.tb_frame)
            out.append({"filename": loc.filename, "lineno": tb.tb_lineno,
                        "function": loc.function})
        tb = tb.tb_next
    return out[::-1]  # innermost first, like user_stack()


def _innermost_user_frame(tb):
    frame = None
    while tb is not None:
        if not _internal(tb.tb_frame):
            frame = tb.tb_frame
        tb = tb.tb_next
    return frame




def _start_pyspy(recorder):
    """py-spy on this process (the same sampler and folding as `execmode profile --pyspy`);
    where it cannot attach, the run goes on and the session's meta says why."""
    from ..profilers.runner import start_pyspy

    return start_pyspy(recorder, rate=100, native=False, fmt="raw")


def _fold_pyspy(recorder, sampler) -> None:
    from ..profilers.runner import fold_pyspy

    fold_pyspy(recorder, sampler)


def _captured_output(recorder):
    """Record the script's stdout/stderr lines in the session (they still reach the
    controller through the pipes)."""
    if recorder is None:
        import contextlib

        return contextlib.nullcontext()
    from ..profilers.output import captured_output

    return captured_output(recorder.writer.put)


def _start_recording(session_path: str, script: str, args: list, summaries: bool = False):
    """Record the run into the session store (the profilers package)."""
    try:
        from ..profilers.recorder import start_recording
    except ImportError:
        return None
    # A row per kernel run: the TUI lists and steps kernels one run at a time (the plans run
    # step by step under the debugger's hooks anyway).
    return start_recording(session_path, script=script, argv=list(args), summaries=summaries,
                           kernel_rows=True)


if __name__ == "__main__":
    sys.exit(main())
