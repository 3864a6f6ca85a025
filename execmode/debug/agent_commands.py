"""The commands a controller sends to its agent, each a small JSON message with a reply.

A command waits for its reply on the queue the controller's reader thread fills
(:class:`Pending`); one that resumes the script (step, next, continue) marks the run
"running" when its reply arrives. A command to an agent that is gone fails at once.
"""

from __future__ import annotations

import contextlib
import queue
from dataclasses import dataclass

from .protocol import ProtocolError
from .run_events import ControllerError

GONE = "the agent is gone (the script ended or closed the connection)"


@dataclass
class Pending:
    """A command waiting for its reply."""

    replies: queue.Queue
    resumes: bool          # step/next/continue: its reply means the script runs again


class AgentCommands:
    """The Controller's commands (a part of :class:`~.controller.Controller`, on its
    state: ``_lock``, ``_run``, ``_ids``)."""

    def send(self, msg: dict) -> int:
        """Send a command without waiting; its reply is taken in (not an event)."""
        return self._send(msg, resumes=False)[0]

    def _send(self, msg: dict, resumes: bool) -> tuple[int, object, Pending]:
        with self._lock:
            run = self._run
            if run is None or run.channel is None:
                raise ControllerError("the agent is not connected")
            if run.gone or run.retired or run.channel.closed:
                raise ControllerError(GONE)
            msg_id = next(self._ids)
            pending = run.pending[msg_id] = Pending(queue.Queue(maxsize=1), resumes)
        try:
            with run.send_lock:
                run.channel.send(dict(msg, id=msg_id))
        except (OSError, ProtocolError) as exc:
            with self._lock:
                run.pending.pop(msg_id, None)
            if isinstance(exc, ProtocolError):
                raise ControllerError(str(exc)) from None
            raise ControllerError(f"{GONE}: {exc}") from None
        return msg_id, run, pending

    def request(self, msg: dict, timeout: float = 30.0) -> dict:
        """Send a command and wait for its reply (raises ControllerError on an error, or
        as soon as the agent is gone)."""
        return self._request(msg, timeout, resumes=False)

    def _request(self, msg: dict, timeout: float, resumes: bool) -> dict:
        msg_id, run, pending = self._send(msg, resumes)
        try:
            reply = pending.replies.get(timeout=timeout)
        except queue.Empty:
            raise ControllerError(f"no reply to {msg['type']} within {timeout} s") from None
        finally:
            with self._lock:
                run.pending.pop(msg_id, None)
        if reply.get("type") == "error":
            raise ControllerError(reply.get("message", "error"))
        return reply

    def _resume(self, kind: str) -> None:
        # The reader thread marks the run "running" when this reply arrives, before it
        # reads what the agent sends next (the next pause): never after it.
        self._request({"type": kind}, 30.0, resumes=True)

    def step(self) -> None:
        self._resume("step")

    def next(self) -> None:
        self._resume("next")

    def cont(self) -> None:
        self._resume("continue")

    def pause(self) -> None:
        self.request({"type": "pause"})

    def set_breakpoint(self, spec: str, ignore: int = 0) -> dict:
        return self.request({"type": "set_breakpoint", "spec": spec, "ignore": ignore})[
            "breakpoint"]

    def clear_breakpoint(self, bp: int) -> list:
        return self.request({"type": "clear_breakpoint", "bp": bp})["breakpoints"]

    def enable_breakpoint(self, bp: int, enabled: bool = True) -> list:
        return self.request({"type": "enable_breakpoint", "bp": bp,
                             "enabled": enabled})["breakpoints"]

    def update_breakpoint(self, bp: int, spec: str | None = None,
                          ignore: int | None = None) -> list:
        """A new spec (its condition) and/or ignore count; the id and enabled state stay."""
        msg = {"type": "update_breakpoint", "bp": bp}
        if spec is not None:
            msg["spec"] = spec
        if ignore is not None:
            msg["ignore"] = ignore
        return self.request(msg)["breakpoints"]

    def breakpoints(self) -> list:
        return self.request({"type": "list_breakpoints"})["breakpoints"]

    def inspect(self, ref: str, histogram: bool = True) -> dict:
        return self.request({"type": "inspect", "ref": ref, "histogram": histogram})["summary"]

    def slice(self, ref: str, index: str) -> dict:
        return self.request({"type": "slice", "ref": ref, "index": index})["slice"]

    def stack(self) -> list:
        return self.request({"type": "stack"})["stack"]

    def locals(self) -> list:
        return self.request({"type": "locals"})["tensors"]

    def variables(self, frame: int = 0, scope: str = "locals", path=()) -> list:
        """Python values of a paused frame (0: innermost): rows of name, kind, text; a
        ``path`` of row names expands containers and objects."""
        return self.request({"type": "variables", "frame": frame, "scope": scope,
                             "path": list(path)})["variables"]

    def evaluate(self, expr: str, frame: int = 0) -> dict:
        """``expr`` evaluated in a paused frame: {ok, text, kind, type}; an error is the
        result (ok false), never the script's end."""
        return self.request({"type": "evaluate", "expr": expr, "frame": frame})["result"]

    def recompute(self, node: int) -> dict:
        return self.request({"type": "recompute", "node": node})["summary"]

    def jit_variables(self) -> dict:
        """At a stop inside a jitted function: its Python names with their values at this
        call ({"function", "rows"}; rows empty elsewhere), graph/py_names.py."""
        return self.request({"type": "jit_variables"})["jit"]

    def hunt(self) -> dict:
        return self.request({"type": "hunt"})["report"]

    def differential_check(self) -> dict:
        return self.request({"type": "differential_check"})["report"]

    def send_stdin(self, text: str) -> None:
        """Write ``text`` to the script's stdin (``stdin_pipe``: the TUI's input line)."""
        pipe = self._stdin()
        try:
            pipe.write(text.encode("utf-8"))
            pipe.flush()
        except (OSError, ValueError) as exc:
            raise ControllerError(f"the script's stdin is closed: {exc}") from None

    def close_stdin(self) -> None:
        """End of file on the script's stdin (ctrl+d in the input line)."""
        with contextlib.suppress(OSError):
            self._stdin().close()

    def _stdin(self):
        with self._lock:
            run = self._run
        if run is None or run.proc is None or run.proc.stdin is None:
            raise ControllerError("the script's stdin is not a pipe (stdin_pipe=False)")
        return run.proc.stdin
