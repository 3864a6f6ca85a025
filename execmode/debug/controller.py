"""The controller: the parent side of a debugging session.

It starts the agent (a child Python running the user's script), listens on a Unix socket
in a private temporary directory (mode 0700, removed once the agent has connected),
forwards the child's stdout/stderr, and turns agent messages and the child's exit into
events. The TUI, ``execmode run`` and the tests all drive scripts through it. A crash of
the script never takes the controller down.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import NamedTuple

from .. import lifeline
from .protocol import PROTOCOL_VERSION, Channel, ProtocolError


class ControllerError(Exception):
    """The script could not be started, or the agent stopped answering."""


@dataclass
class ExitInfo:
    """How the script ended."""

    status: str  # ok | exit | exception | quit | terminated | killed | crashed | vanished
    code: int | None       # exit code (or -signal)
    description: str
    traceback: str | None = None
    # The agent's breakpoints as the run ended, each with a note saying why it never hit.
    breakpoints: list | None = None

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


OUTPUT_LINES_KEPT = 10_000  # a run's last output lines the controller keeps (``output``)
_GONE = "the agent is gone (the script ended or closed the connection)"


@dataclass
class _Pending:
    """A command waiting for its reply."""

    replies: queue.Queue
    resumes: bool          # step/next/continue: its reply means the script runs again


class _Spawned(NamedTuple):
    """A run spawn() started: the socket it listens on and the private folder holding it."""

    run: _Run
    server: socket.socket
    folder: str


class _Run:
    """One start() of the script: its process, channel, threads and pending commands.

    Threads carry their run, and the controller publishes only the current run's events, so
    a run that ends late (after restart()) cannot touch the next one's state or events.
    """

    def __init__(self, generation: int):
        self.generation = generation
        self.proc: subprocess.Popen | None = None
        self.channel: Channel | None = None
        # The last lines only: a script may print gigabytes (the session keeps its own).
        self.output: collections.deque[tuple[str, str]] = collections.deque(
            maxlen=OUTPUT_LINES_KEPT)
        self.reader: threading.Thread | None = None
        self.output_threads: list[threading.Thread] = []
        self.pending: dict[int, _Pending] = {}
        self.send_lock = threading.Lock()   # one command on the socket at a time
        self.finished_msg: dict | None = None
        self.gone = False                   # the channel closed: no reply can come
        self.retired = False                # stopped and joined: publishes nothing more


class Controller:
    """Drive one run of a script under the agent; ``restart()`` runs it again.

    ``state`` and ``paused`` move forward only on the reader thread, in the order the agent
    reported: when ``wait_for("paused")`` returns, ``state`` is "paused" and ``paused`` the
    event's data (until the next command). Listeners are called on the controller's reader
    threads, in each thread's order; a listener must not wait for a reply (the reader
    thread it runs on delivers them).
    """

    def __init__(self, script: str, args=(), breakpoints=(), session: str | None = None,
                 start_paused: bool = True, cwd: str | None = None, env: dict | None = None,
                 python: str | None = None, pyspy: bool = False,
                 inherit_stdin: bool = False, stdin_pipe: bool = False,
                 inherit_output: bool = False, summaries: bool = False,
                 keep_values: int | None = None):
        self.script = script
        self.args = list(args)
        self.initial_breakpoints = list(breakpoints)
        self.session = session
        self.start_paused = start_paused
        self.cwd = cwd
        self.env = env
        self.python = python or sys.executable
        self.pyspy = pyspy  # sample the script with py-spy into the session (needs session)
        # Value statistics (min/max/mean/std, NaN/Inf counts) of every op output in the
        # session: the TUI's NaN/Inf filter reads them (needs session).
        self.summaries = summaries
        # Copies of the last N eager ops' tensors in the agent (value_ring.py; None: its
        # default), so a past op's values can be inspected while the script is live.
        self.keep_values = keep_values
        # `execmode run` gives the script its own stdin (the terminal: input() works); the
        # TUI must not (it reads the keys there), nor must tests: /dev/null, input() ends.
        self.inherit_stdin = inherit_stdin
        # The TUI's input line: stdin is a pipe that send_stdin() writes, and the agent says
        # input_requested before a read would wait (stdin_requests.py).
        self.stdin_pipe = stdin_pipe
        # `execmode run` lets the script write straight to its stdout/stderr (as under
        # python: no copy, any volume at full speed); the TUI reads them through pipes,
        # line by line, into output events.
        self.inherit_output = inherit_output
        self.events: queue.Queue[Event] = queue.Queue()
        self.listeners: list = []
        self.state = "idle"        # idle | starting | running | paused | finished
        self.paused: dict | None = None
        self.exit: ExitInfo | None = None
        self.output: collections.deque = collections.deque()  # (stream, line), the last ones
        self._ids = itertools.count(1)
        self._generations = itertools.count(1)
        # Guards the run identity, state/paused/exit, pending commands and publishing.
        self._lock = threading.RLock()
        self._run: _Run | None = None
        self.proc: subprocess.Popen | None = None
        self.channel: Channel | None = None
        self._spawned: _Spawned | None = None  # spawn() done, start() not yet

    # --- lifecycle ---------------------------------------------------------------------
    def spawn(self) -> None:
        """Start the agent's process now; :meth:`start` connects to it later.

        The TUI spawns before it imports Textual, so that the agent's own imports (the
        engine, the script's) overlap the TUI's instead of following them. The agent
        connects to the listening socket at once and runs to its first pause; its output
        waits in the pipes until start() reads it (so no event is published before the
        caller has added its listeners)."""
        if not os.path.isfile(self.script):
            raise ControllerError(f"cannot start {self.script}: no such file")
        self.stop()  # a previous run, if any, ends (and is joined) before this one begins
        cmd = [self.python, "-m", "execmode.debug.agent", "--socket", "PATH"]
        if self.session:
            cmd += ["--session", self.session]
            if self.pyspy:
                cmd.append("--pyspy")
            if self.summaries:
                cmd.append("--summaries")
        if self.keep_values is not None:
            cmd += ["--keep-values", str(self.keep_values)]
        for bp in self.initial_breakpoints:
            # A breakpoint carried from an earlier run keeps its id, enabled state and
            # ignore count (JSON: the agent parses it, never evaluates it).
            if isinstance(bp, dict):
                cmd += ["--break-json", json.dumps(carried_breakpoint(bp))]
            else:
                cmd += ["--break", bp]
        if self.stdin_pipe:
            cmd.append("--stdin-requests")
        if not self.start_paused:
            cmd.append("--run")
        cmd += ["--", self.script, *self.args]
        # The agent dies with this process (even by SIGKILL, on Linux): lifeline.py.
        env = lifeline.child_env(os.environ if self.env is None else self.env)
        env["PYTHONUNBUFFERED"] = "1"
        run = _Run(next(self._generations))
        with self._lock:
            self._run = run
            # A fresh queue: what is left of an earlier run is stale (restart() or stop()
            # then start(), as the TUI does), and the wait for hello in start() must not
            # take that run's "exited" for this one's.
            self.events = queue.Queue()
            self.state, self.paused, self.exit = "starting", None, None
            self.output = run.output
            self.channel = None
        # Only this user can reach the socket (a private directory); the socket file and
        # the directory go as soon as the agent is connected, or the start failed.
        tmp = tempfile.mkdtemp(prefix="execmode-")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            os.chmod(tmp, 0o700)
            path = os.path.join(tmp, "control.sock")
            cmd[cmd.index("PATH")] = path
            server.bind(path)
            server.listen(1)
            stdin = subprocess.PIPE if self.stdin_pipe else \
                None if self.inherit_stdin else subprocess.DEVNULL
            piped = None if self.inherit_output else subprocess.PIPE
            run.proc = subprocess.Popen(cmd, cwd=self.cwd, env=env, stdin=stdin,
                                        stdout=piped, stderr=piped)
        except OSError:
            server.close()
            _remove_private_dir(tmp)
            with self._lock:
                self.state = "idle"  # no process (the interpreter could not be started)
            raise
        with self._lock:
            self.proc = run.proc
        self._spawned = _Spawned(run, server, tmp)

    @property
    def spawned(self) -> bool:
        """A process started by spawn() that start() has not connected to yet."""
        return self._spawned is not None

    def start(self, timeout: float = 30.0) -> Controller:
        """Start the agent (or take the one spawn() started) and wait for its hello."""
        if self._spawned is None:
            self.spawn()
        run, server, tmp = self._spawned
        self._spawned = None
        deadline = time.monotonic() + timeout
        try:
            conn = self._accept(run, server, deadline)
        finally:
            server.close()
            _remove_private_dir(tmp)
        conn.settimeout(None)
        run.channel = Channel(conn)
        with self._lock:
            self.channel = run.channel
        run.reader = threading.Thread(target=self._read_channel, args=(run,), daemon=True,
                                      name=f"execmode-controller-{run.generation}")
        run.reader.start()
        try:
            hello = self.wait_for("hello", "exited",
                                  timeout=max(1.0, deadline - time.monotonic()))
            if hello.type == "exited":
                raise ControllerError(f"the agent ended before it said hello "
                                      f"({hello['description']}):\n" + self._stderr_of(run))
            if hello.get("version") != PROTOCOL_VERSION:
                raise ControllerError(f"agent speaks protocol {hello.get('version')}, "
                                      f"expected {PROTOCOL_VERSION}")
        except ControllerError:
            self.stop()
            raise
        return self

    def _accept(self, run: _Run, server: socket.socket, deadline: float):
        """Read the agent's output, and accept its connection on ``server``."""
        proc = run.proc
        pipes = [] if self.inherit_output else [("stdout", proc.stdout),
                                                ("stderr", proc.stderr)]
        if pipes:
            t = threading.Thread(target=self._read_outputs, args=(run, pipes), daemon=True,
                                 name=f"execmode-output-{run.generation}")
            run.output_threads.append(t)
            t.start()
        server.settimeout(0.2)
        while True:
            try:
                return server.accept()[0]
            except TimeoutError:
                if proc.poll() is None and time.monotonic() <= deadline:
                    continue
                # A short script may have connected just after that wait ended, run and
                # exited (its connection waits in the backlog): take it then.
                server.settimeout(0)
                with contextlib.suppress(BlockingIOError, TimeoutError):
                    return server.accept()[0]
                self._abandon(run)
                raise ControllerError(
                    f"the script could not start (exit code {proc.poll()}):\n"
                    + self._stderr_of(run)) from None

    def _stderr_of(self, run: _Run) -> str:
        """What a run that failed to start wrote on stderr, for the error that says so."""
        err = "".join(line + "\n" for s, line in run.output if s == "stderr").strip()
        return err or ("its output is above" if self.inherit_output else "no output")

    def _abandon(self, run: _Run) -> None:
        """A run that never connected: end its process, keep its output, say it ended."""
        if run.proc.poll() is None:
            run.proc.kill()
        code = run.proc.wait()
        self._join(run.output_threads)
        with self._lock:
            run.retired = True
            if run is self._run:
                self.exit = describe_exit(code, None)
                self.state, self.paused = "finished", None

    def stop(self, timeout: float = 3.0, terminate: bool = False) -> None:
        """End the script (quit, then SIGTERM, then kill), wait for it and for this run's
        threads: its last output and its ``exited`` event are in before this returns.

        ``terminate`` starts at SIGTERM (the controller itself was told to end): unlike a
        quit message, the signal also ends a sleep or a blocking read, and the agent still
        closes the session (lifeline.py)."""
        if self._spawned is not None:  # spawned, never connected: nothing to say quit to
            _, server, tmp = self._spawned
            self._spawned = None
            server.close()
            _remove_private_dir(tmp)
            terminate = True
        with self._lock:
            run = self._run
        if run is None or run.proc is None or run.retired:
            return
        proc = run.proc
        if proc.poll() is None and not terminate:
            try:
                self.send({"type": "quit"})
            except ControllerError:
                pass
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(min(timeout, 1.0) if proc.stdin is not None else timeout)
            if proc.stdin is not None and proc.poll() is None:
                # Still there: maybe blocked reading the input line's pipe, where the quit
                # (raised in the script's thread) waits for the read to return. End of
                # file ends the read, and the quit lands, before the SIGTERM below.
                with contextlib.suppress(OSError):
                    proc.stdin.close()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(lifeline.GRACE_S + 1.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        code = proc.wait()
        if run.reader is not None:
            self._join([run.reader], timeout=5.0)
            if run.reader.is_alive():
                # Something else holds the agent's end open (a child of the script): the
                # process is gone, so nothing more can come; wake the reader.
                run.channel.shutdown()
                self._join([run.reader], timeout=5.0)
            run.channel.close()
        self._join(run.output_threads)
        with self._lock:
            ended = run is not self._run or run.retired or self.state == "finished"
            if not ended:
                self._fail_pending(run)
        if not ended:  # the reader could not finish (see above): the run still ends here
            info = describe_exit(code, run.finished_msg)
            self._publish(run, Event("exited", info.to_json()), info)
        with self._lock:
            run.retired = True

    def restart(self) -> Controller:
        self.stop()
        return self.start()  # with a fresh event queue

    def close(self) -> None:
        self.stop()
        with self._lock:
            run = self._run
        if run is not None and run.channel is not None:
            run.channel.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()
        return False

    # --- commands ----------------------------------------------------------------------
    def send(self, msg: dict) -> int:
        """Send a command without waiting; its reply is taken in (not an event)."""
        return self._send(msg, resumes=False)[0]

    def _send(self, msg: dict, resumes: bool) -> tuple[int, _Run, _Pending]:
        with self._lock:
            run = self._run
            if run is None or run.channel is None:
                raise ControllerError("the agent is not connected")
            if run.gone or run.retired or run.channel.closed:
                raise ControllerError(_GONE)
            msg_id = next(self._ids)
            pending = run.pending[msg_id] = _Pending(queue.Queue(maxsize=1), resumes)
        try:
            with run.send_lock:
                run.channel.send(dict(msg, id=msg_id))
        except (OSError, ProtocolError) as exc:
            with self._lock:
                run.pending.pop(msg_id, None)
            if isinstance(exc, ProtocolError):
                raise ControllerError(str(exc)) from None
            raise ControllerError(f"{_GONE}: {exc}") from None
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

    # --- events ------------------------------------------------------------------------
    def wait_for(self, *types: str, timeout: float = 60.0) -> Event:
        """The next event of one of ``types`` (others are taken from ``events`` and
        dropped)."""
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

    def _publish(self, run: _Run, event: Event, exit_info: ExitInfo | None = None) -> None:
        # State and queue change together under the lock, and only for the current run:
        # whoever takes an event from the queue sees the state it brought. Listeners are
        # called after, outside the lock (one may be slow; none can block the controller).
        with self._lock:
            if run is not self._run or run.retired:
                return
            if event.type == "paused":
                self.state, self.paused = "paused", event.data
            elif event.type == "running":
                self.state, self.paused = "running", None
            elif event.type == "hello" and self.state == "starting":
                self.state = "running"
            elif event.type == "exited":
                if self.state == "finished":
                    return  # already reported (stop() and a late reader both got here)
                self.exit, self.state, self.paused = exit_info, "finished", None
            self.events.put(event)
            listeners = list(self.listeners)
        for fn in listeners:
            fn(event)

    def _read_channel(self, run: _Run) -> None:
        channel = run.channel
        while True:
            try:
                msg = channel.recv()
            except ProtocolError as exc:
                self._publish(run, Event("protocol_error", {"message": str(exc)}))
                continue
            if msg is None:
                break
            kind = msg.get("type")
            if kind in ("reply", "error") and self._deliver(run, msg):
                continue
            if kind == "finished":
                run.finished_msg = msg
            self._publish(run, Event(kind or "unknown", msg))
        with self._lock:
            run.gone = True
            self._fail_pending(run)  # the agent cannot answer any more: fail them now
        self._on_exit(run)

    def _deliver(self, run: _Run, msg: dict) -> bool:
        """Hand a reply to the command waiting for it; False if none waits."""
        msg_id = msg.get("id")
        if not isinstance(msg_id, int):
            return False
        with self._lock:
            pending = run.pending.pop(msg_id, None)
            if pending is None:
                return False
            if pending.resumes and msg["type"] == "reply" and run is self._run \
                    and not run.retired:
                self.state, self.paused = "running", None
            pending.replies.put_nowait(msg)
        return True

    def _fail_pending(self, run: _Run) -> None:
        for pending in run.pending.values():
            try:
                pending.replies.put_nowait({"type": "error", "message": _GONE})
            except queue.Full:
                pass
        run.pending.clear()

    def _read_outputs(self, run: _Run, pipes) -> None:
        """Both pipes in one thread, in the order the script wrote them: a thread per pipe
        raced, and the lines a script printed just before an uncaught exception came after
        its traceback. The script's streams are unbuffered, so what it wrote to stdout
        before writing to stderr is already in the pipe when stderr's bytes are: whatever
        stdout holds is read (to its end) before stderr is."""
        order = {stream: i for i, (stream, _) in enumerate(pipes)}  # stdout first
        open_pipes = {pipe.fileno(): [stream, pipe, b""] for stream, pipe in pipes}
        while open_pipes:
            ready, _, _ = select.select(list(open_pipes), [], [])
            for fd in sorted(ready, key=lambda fd: order[open_pipes[fd][0]]):
                while fd in open_pipes and self._read_chunk(run, open_pipes, fd):
                    if not select.select([fd], [], [], 0)[0]:
                        break

    def _read_chunk(self, run: _Run, open_pipes: dict, fd: int) -> bool:
        """Read what ``fd`` holds and publish its whole lines; False at its end."""
        entry = open_pipes[fd]
        stream, pipe, partial = entry
        chunk = os.read(fd, 65536)
        lines = (partial + chunk).split(b"\n")
        entry[2] = lines.pop() if chunk else b""
        if not chunk and lines == [b""]:
            lines = []
        for raw in lines:
            line = raw.decode("utf-8", "replace")
            run.output.append((stream, line))
            self._publish(run, Event("output", {"stream": stream, "line": line}))
        if not chunk:
            del open_pipes[fd]
            pipe.close()
        return bool(chunk)

    @staticmethod
    def _join(threads, timeout: float = 2.0) -> None:
        # Not the calling thread: a listener may stop() from the reader thread.
        for t in threads:
            if t is not threading.current_thread():
                t.join(timeout)

    def _on_exit(self, run: _Run) -> None:
        code = run.proc.wait()
        self._join(run.output_threads)  # the last lines come before "exited"
        info = describe_exit(code, run.finished_msg)
        self._publish(run, Event("exited", info.to_json()), info)


def carried_breakpoint(bp: dict) -> dict:
    """What of a breakpoint (as the agent lists it) starts the next run with it: one the
    agent disabled because its condition failed keeps that reason, or the next run's list
    would show it off with no word why."""
    carried = {"id": bp.get("id"), "spec": bp["spec"], "enabled": bp.get("enabled", True),
               "ignore": bp.get("ignore", 0)}
    if bp.get("disabled_reason") and not carried["enabled"]:
        carried["disabled_reason"] = bp["disabled_reason"]
    return carried


def _remove_private_dir(path: str) -> None:
    try:
        for name in os.listdir(path):
            os.unlink(os.path.join(path, name))
        os.rmdir(path)
    except OSError:
        pass  # never hide why start() failed; the directory is private anyway


def describe_exit(code: int, finished: dict | None) -> ExitInfo:
    """What ended the script: its own report if it sent one, else the process's status."""
    if finished is not None:
        status = finished.get("status", "ok")
        text = {
            "ok": "finished normally",
            "exit": f"exited with sys.exit({finished.get('code')})",
            "exception": "raised an exception",
            "quit": "stopped by the debugger",
            "terminated": f"was stopped by a signal (exit code {finished.get('code')})",
            "interrupted": "was interrupted (KeyboardInterrupt)",
        }.get(status, status)
        return ExitInfo(status, finished.get("code"), text, finished.get("traceback"),
                        finished.get("breakpoints"))
    if code < 0:
        sig = -code
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
            return ExitInfo("killed", code, f"was killed by signal {name}")
        return ExitInfo("crashed", code, f"crashed with signal {name}")
    return ExitInfo("vanished", code, f"exited with code {code} without reporting "
                                      "(os._exit, or the interpreter died)")
