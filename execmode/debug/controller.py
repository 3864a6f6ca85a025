"""The controller: the parent side of a debugging session.

It starts the agent (a child Python running the user's script), listens on a Unix socket
in a private temporary directory (mode 0700), forwards the child's stdout/stderr, and turns
agent messages and the child's exit into events. The TUI, ``execmode run`` and the tests
all drive scripts through it. A crash of the script never takes the controller down.
"""

from __future__ import annotations

import itertools
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from .protocol import PROTOCOL_VERSION, Channel, ProtocolError


class ControllerError(Exception):
    """The script could not be started, or the agent stopped answering."""


@dataclass
class ExitInfo:
    """How the script ended."""

    status: str            # ok | exit | exception | quit | killed | crashed | vanished
    code: int | None       # exit code (or -signal)
    description: str
    traceback: str | None = None

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Event:
    type: str
    data: dict = field(default_factory=dict)

    def __getitem__(self, key):
        return self.data[key]

    def get(self, key, default=None):
        return self.data.get(key, default)


class Controller:
    """Drive one run of a script under the agent; ``restart()`` runs it again."""

    def __init__(self, script: str, args=(), breakpoints=(), session: str | None = None,
                 start_paused: bool = True, cwd: str | None = None, env: dict | None = None,
                 python: str | None = None, pyspy: bool = False):
        self.script = script
        self.args = list(args)
        self.initial_breakpoints = list(breakpoints)
        self.session = session
        self.start_paused = start_paused
        self.cwd = cwd
        self.env = env
        self.python = python or sys.executable
        self.pyspy = pyspy  # sample the script with py-spy into the session (needs session)
        self.events: queue.Queue[Event] = queue.Queue()
        self.listeners: list = []
        self.state = "idle"        # idle | starting | running | paused | finished
        self.paused: dict | None = None
        self.exit: ExitInfo | None = None
        self.output: list[tuple[str, str]] = []   # (stream, line)
        self._ids = itertools.count(1)
        self._replies: dict[int, queue.Queue] = {}
        self._finished_msg: dict | None = None
        self.proc: subprocess.Popen | None = None
        self.channel: Channel | None = None

    # --- lifecycle ---------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> Controller:
        if not os.path.isfile(self.script):
            raise ControllerError(f"cannot start {self.script}: no such file")
        self._tmp = tempfile.mkdtemp(prefix="execmode-")
        os.chmod(self._tmp, 0o700)
        path = os.path.join(self._tmp, "control.sock")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(1)
        server.settimeout(0.2)
        cmd = [self.python, "-m", "execmode.debug.agent", "--socket", path]
        if self.session:
            cmd += ["--session", self.session]
            if self.pyspy:
                cmd.append("--pyspy")
        for spec in self.initial_breakpoints:
            cmd += ["--break", spec]
        if not self.start_paused:
            cmd.append("--run")
        cmd += [self.script] + self.args
        env = dict(os.environ if self.env is None else self.env)
        env["PYTHONUNBUFFERED"] = "1"
        self.state, self.paused, self.exit, self._finished_msg = "starting", None, None, None
        self.output = []
        self.proc = subprocess.Popen(cmd, cwd=self.cwd, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for stream, pipe in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr)):
            threading.Thread(target=self._read_output, args=(stream, pipe), daemon=True,
                             name=f"execmode-{stream}").start()
        deadline = time.monotonic() + timeout
        conn = None
        while conn is None:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    server.close()
                    self._wait_output()
                    err = "".join(line + "\n" for s, line in self.output if s == "stderr")
                    raise ControllerError(
                        f"the script could not start (exit code {self.proc.poll()}):\n"
                        + (err.strip() or "no output")) from None
        server.close()
        conn.settimeout(None)
        self.channel = Channel(conn)
        threading.Thread(target=self._read_channel, args=(self.channel, self.proc),
                         daemon=True, name="execmode-controller").start()
        hello = self.wait_for("hello", timeout=max(1.0, deadline - time.monotonic()))
        if hello.get("version") != PROTOCOL_VERSION:
            raise ControllerError(f"agent speaks protocol {hello.get('version')}, "
                                  f"expected {PROTOCOL_VERSION}")
        self.state = "running"
        return self

    def stop(self, timeout: float = 3.0) -> None:
        """End the script (quit, then kill) and wait for it."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.send({"type": "quit"})
            except (OSError, ControllerError):
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._wait_output()

    def restart(self) -> Controller:
        self.stop()
        self.events = queue.Queue()
        return self.start()

    def close(self) -> None:
        self.stop()
        if self.channel is not None:
            self.channel.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
        return False

    # --- commands ----------------------------------------------------------------------
    def send(self, msg: dict) -> int:
        if self.channel is None or self.channel.closed:
            raise ControllerError("the agent is not connected")
        msg_id = next(self._ids)
        msg = dict(msg, id=msg_id)
        self._replies[msg_id] = queue.Queue(maxsize=1)
        self.channel.send(msg)
        return msg_id

    def request(self, msg: dict, timeout: float = 30.0) -> dict:
        """Send a command and wait for its reply (raises ControllerError on an error)."""
        msg_id = self.send(msg)
        try:
            reply = self._replies[msg_id].get(timeout=timeout)
        except queue.Empty:
            raise ControllerError(f"no reply to {msg['type']} within {timeout} s") from None
        finally:
            self._replies.pop(msg_id, None)
        if reply.get("type") == "error":
            raise ControllerError(reply.get("message", "error"))
        return reply

    def _resume(self, kind: str) -> None:
        self.request({"type": kind})
        self.state, self.paused = "running", None

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

    def recompute(self, node: int) -> dict:
        return self.request({"type": "recompute", "node": node})["summary"]

    def hunt(self) -> dict:
        return self.request({"type": "hunt"})["report"]

    def differential_check(self) -> dict:
        return self.request({"type": "differential_check"})["report"]

    # --- events ------------------------------------------------------------------------
    def wait_for(self, *types: str, timeout: float = 60.0) -> Event:
        """The next event of one of ``types`` (others are kept in ``self.history``)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ControllerError(f"no {'/'.join(types)} event within {timeout} s "
                                      f"(state {self.state})")
            try:
                event = self.events.get(timeout=remaining)
            except queue.Empty:
                continue
            if event.type in types:
                return event

    def wait_until_stopped(self, timeout: float = 60.0) -> Event:
        """Wait for a pause or the end of the script."""
        return self.wait_for("paused", "exited", timeout=timeout)

    def _publish(self, event: Event) -> None:
        if event.type == "paused":
            self.state, self.paused = "paused", event.data
        elif event.type == "running":
            self.state = "running"
        self.events.put(event)
        for fn in list(self.listeners):
            fn(event)

    def _read_channel(self, channel: Channel, proc: subprocess.Popen) -> None:
        # This run's channel and process: after restart() a new pair has its own thread.
        while True:
            try:
                msg = channel.recv()
            except ProtocolError as exc:
                self._publish(Event("protocol_error", {"message": str(exc)}))
                continue
            if msg is None:
                break
            kind = msg.get("type")
            if kind in ("reply", "error") and msg.get("id") in self._replies:
                try:
                    self._replies[msg["id"]].put_nowait(msg)
                except queue.Full:
                    pass
                continue
            if kind == "finished":
                self._finished_msg = msg
            self._publish(Event(kind or "unknown", msg))
        self._on_exit(proc)

    def _read_output(self, stream: str, pipe) -> None:
        for raw in iter(pipe.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.output.append((stream, line))
            self._publish(Event("output", {"stream": stream, "line": line}))
        pipe.close()

    def _wait_output(self) -> None:
        for t in threading.enumerate():
            if t.name in ("execmode-stdout", "execmode-stderr"):
                t.join(timeout=2.0)

    def _on_exit(self, proc: subprocess.Popen) -> None:
        code = proc.wait()
        if proc is not self.proc:
            return  # an old run ending after restart(): nothing to report
        self._wait_output()
        self.exit = describe_exit(code, self._finished_msg)
        self.state, self.paused = "finished", None
        self._publish(Event("exited", self.exit.to_json()))


def describe_exit(code: int, finished: dict | None) -> ExitInfo:
    """What ended the script: its own report if it sent one, else the process's status."""
    if finished is not None:
        status = finished.get("status", "ok")
        text = {
            "ok": "finished normally",
            "exit": f"exited with sys.exit({finished.get('code')})",
            "exception": "raised an exception",
            "quit": "stopped by the debugger",
        }.get(status, status)
        return ExitInfo(status, finished.get("code"), text, finished.get("traceback"))
    if code < 0:
        sig = -code
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
            return ExitInfo("killed", code, f"was killed by signal {name}")
        return ExitInfo("crashed", code, f"crashed with signal {name}")
    return ExitInfo("vanished", code, f"exited with code {code} without reporting "
                                      "(os._exit, or the interpreter died)")
