"""The control channel: small JSON messages, one per line, over a Unix socket.

Bulk data (events, graphs, kernels) goes through the session store; this channel carries
only commands (controller -> agent) and state changes (agent -> controller). Every message
is a JSON object with a ``type``; commands carry an ``id`` that the reply repeats. The
protocol is versioned (``PROTOCOL_VERSION``, sent in ``hello``). Malformed or unknown
messages get an ``error`` reply; nothing read from the socket is unpickled or evaluated.

Commands (controller -> agent)::

    step | next | continue | pause                      execution control
    set_breakpoint {spec, ignore?, enabled?}            -> reply {breakpoint}
    clear_breakpoint {bp}    enable_breakpoint {bp, enabled}
    update_breakpoint {bp, spec?, ignore?}              -> reply {breakpoints}
    list_breakpoints                                    -> reply {breakpoints}
    inspect {ref, histogram?}                           -> reply {summary}
    slice {ref, index}                                  -> reply {slice}
    stack                                               -> reply {stack}
    locals                                              -> reply {tensors}
    variables {frame, scope, path}                      -> reply {variables} (Python values)
    evaluate {expr, frame?}                             -> reply {result}  (pdb's p expr)
    recompute {node}                                    -> reply {summary} (graph mode)
    hunt                                                -> reply {report}  (NaN/Inf origin)
    differential_check                                  -> reply {report}
    quit                                                   stop the script

Events (agent -> controller)::

    hello {version, pid, script}
    paused {reason, when, mode, op_index, kernel_index, seq, op, location, stack, scope,
            inputs, output, kernel, breakpoint, hunt, traceback?}
    running
    graph_break {reason, op, location}
    input_requested {prompt}                a read of stdin is about to wait (--stdin-requests)
    finished {status, code, traceback?, breakpoints}   status: ok | exception | exit
                                            (each breakpoint's note: why it never hit)
    reply {id, ...}    error {id, message}
"""

from __future__ import annotations

import json
import socket

PROTOCOL_VERSION = 1
MAX_MESSAGE_BYTES = 4 * 1024 * 1024

COMMANDS = {
    "step": {}, "next": {}, "continue": {}, "pause": {}, "quit": {},
    "set_breakpoint": {"spec": str},
    "clear_breakpoint": {"bp": int},
    "enable_breakpoint": {"bp": int, "enabled": bool},
    "update_breakpoint": {"bp": int},
    "list_breakpoints": {},
    "inspect": {"ref": str},
    "slice": {"ref": str, "index": str},
    "stack": {}, "locals": {},
    "variables": {"frame": int, "scope": str, "path": list},
    "evaluate": {"expr": str},
    "recompute": {"node": int},
    "jit_variables": {},
    "hunt": {}, "differential_check": {},
}
EVENTS = {"hello", "paused", "running", "graph_break", "finished", "reply", "error", "output",
          "input_requested"}


class ProtocolError(Exception):
    """A message that breaks the protocol; the reply names what is wrong."""


def validate_command(msg) -> dict:
    if not isinstance(msg, dict):
        raise ProtocolError("a message must be a JSON object")
    kind = msg.get("type")
    if kind not in COMMANDS:
        raise ProtocolError(f"unknown command {kind!r}; commands are {', '.join(sorted(COMMANDS))}")
    for name, typ in COMMANDS[kind].items():
        if name not in msg:
            raise ProtocolError(f"{kind}: missing field {name!r}")
        if not isinstance(msg[name], typ) or (typ is int and isinstance(msg[name], bool)):
            raise ProtocolError(f"{kind}: field {name!r} must be {typ.__name__}")
    return msg


def encode(msg: dict) -> bytes:
    data = json.dumps(msg, separators=(",", ":"), allow_nan=False, default=_default).encode()
    if len(data) > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {len(data)} bytes exceeds {MAX_MESSAGE_BYTES}")
    return data + b"\n"


def _default(value):
    to_json = getattr(value, "to_json", None)
    if to_json is not None:
        return to_json()
    if isinstance(value, tuple | set):
        return list(value)
    return str(value)


class Channel:
    """Newline-framed JSON over a connected stream socket."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._buffer = b""
        self.closed = False

    def send(self, msg: dict) -> None:
        self.sock.sendall(encode(msg))

    def recv(self) -> dict | None:
        """The next message; None when the peer closed. Raises ProtocolError for a line
        that is not a JSON object (the caller replies and reads on)."""
        while b"\n" not in self._buffer:
            if len(self._buffer) > MAX_MESSAGE_BYTES:
                self._buffer = b""
                raise ProtocolError("message too long")
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            msg = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ProtocolError(f"malformed JSON: {exc}") from None
        if not isinstance(msg, dict):
            raise ProtocolError("a message must be a JSON object")
        return msg

    def shutdown(self) -> None:
        """End the connection both ways now: a recv() blocked in another thread returns."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self) -> None:
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass
