"""The debugger agent: runs the user's script in this (child) process under control.

Started by a controller (the TUI, ``execmode run``, a test) as
``python -m execmode.debug.agent --socket PATH [--session FILE] [--break SPEC]... [--run]
SCRIPT [ARGS...]``. It connects to the controller's Unix socket, hooks the instrumentation
points (before/after each eager op, before/after each graph kernel, graph breaks), and runs
the script as ``__main__``. It pauses before an op (step/next/pause/breakpoints on places)
or after one (tensor conditions on its output), flushes the session store, reports where,
and answers inspection commands until told to go on.

This module is the agent's process: main (the options, the connection, the recording) and
the script's run. The listener that pauses it is debugger.py's Debugger, its hooks are in
script_hooks.py; whether to stop is decided in stops.py (including the pdb-like ``next``
rule); the inspection commands are answered by inspection.py.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import socket
import sys
import threading

from .. import instrument, lifeline, script_runner
from .._tensor import Tensor
from . import interrupt, stdin_requests
from .breakpoints import BreakpointError, BreakpointSet
from .conditions import ConditionError
from .debugger import Debugger, QuitScript
from .inspection import _internal
from .protocol import PROTOCOL_VERSION, Channel
from .value_ring import DEFAULT_OPS

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
        result = run_debugged(opts.script, opts.args, debugger)
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


def run_debugged(path: str, args: list, debugger: Debugger) -> script_runner.ScriptExit:
    """Run ``path`` as __main__ (execmode.script_runner, as run and profile do); an
    exception breakpoint pauses post mortem at the failure."""
    result = script_runner.run_script(path, args, on_start=debugger.script_started,
                                      on_end=debugger.script_ended, quit_exception=QuitScript)
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
        except QuitScript:
            pass
    return result


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
