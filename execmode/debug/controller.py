"""The controller: the parent side of a debugging session.

It starts the agent (a child Python running the user's script), listens on a Unix socket
in a private temporary directory (mode 0700, removed once the agent has connected),
forwards the child's stdout/stderr, and turns agent messages and the child's exit into
events. The TUI, ``execmode run`` and the tests all drive scripts through it. A crash of
the script never takes the controller down.

Its parts: agent_commands.py (the commands and their replies), output_pipes.py (the
script's output, line by line), run_events.py (the events, how the script ended, the
error type).
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import NamedTuple

from .. import lifeline
from .agent_commands import GONE, AgentCommands, Pending
from .output_pipes import read_lines
from .protocol import PROTOCOL_VERSION, Channel, ProtocolError
from .run_events import ControllerError, Event, ExitInfo, describe_exit

OUTPUT_LINES_KEPT = 10_000  # a run's last output lines the controller keeps (``output``)


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
        self.pending: dict[int, Pending] = {}
        self.send_lock = threading.Lock()   # one command on the socket at a time
        self.finished_msg: dict | None = None
        self.gone = False                   # the channel closed: no reply can come
        self.retired = False                # stopped and joined: publishes nothing more


class Controller(AgentCommands):
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
            # pass_fds: a rank's connection to its MPI launcher (lifeline.launcher_fds).
            run.proc = subprocess.Popen(cmd, cwd=self.cwd, env=env, stdin=stdin,
                                        stdout=piped, stderr=piped,
                                        pass_fds=lifeline.launcher_fds())
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
                pending.replies.put_nowait({"type": "error", "message": GONE})
            except queue.Full:
                pass
        run.pending.clear()

    def _read_outputs(self, run: _Run, pipes) -> None:
        def on_line(stream: str, line: str) -> None:
            run.output.append((stream, line))
            self._publish(run, Event("output", {"stream": stream, "line": line}))

        read_lines(pipes, on_line)

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
