"""A script's process ends with the execmode process that started it, and ends cleanly.

``execmode profile``, ``execmode run`` and the TUI run the user's script in a child process
(the profiling runner or the debugger agent). Killing the parent must not leave the script
running, and asking the script to stop must still leave a finished session. Two sides:

* **Parent** (``child_env``): the child's environment carries ``EXECMODE_PARENT_PID``. The
  parent forwards SIGTERM/SIGHUP (and a SIGINT that did not come from the terminal) to the
  child (profilers/cli.py, debug/run_cli.py).
* **Child** (``install`` at start, ``script_window`` around the script): SIGTERM and SIGHUP
  raise :class:`Terminated` in the script (its ``finally`` blocks run, then the runner
  records how it ended and closes the session). On Linux the kernel also signals the child
  when its parent dies, even by SIGKILL (``prctl(PR_SET_PDEATHSIG)``), and the child
  terminates the same way. The kernel may hand that signal to any of the child's threads,
  and the main thread would run the handler only once its sleep ends: a watcher thread
  sees the parent gone and directs the signal at the main thread. Elsewhere only the
  forwarding protects it: a parent killed by SIGKILL leaves the script running there.

Why a real-time signal for the parent's death, not SIGTERM: Linux sends the death signal
when the *thread* that started the child exits, and the TUI starts scripts from worker
threads that end long before the app does. The handler therefore checks whether the
parent process is really gone (``getppid()`` changed) and ignores the signal otherwise, and
a SIGTERM sent by a person must never be ignored, so the two need different signals.

A script that swallows :class:`Terminated` (``except BaseException``) or sits in a long C
call is given ``GRACE_S`` seconds; then faulthandler's watchdog (a C thread that needs no
GIL) prints the stacks and ends the process. Whatever the recorder had committed stays
readable in the session (SQLite WAL).
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import threading
import time

PARENT_PID_ENV = "EXECMODE_PARENT_PID"
GRACE_S = 5.0
_WATCH_S = 0.25  # how often the watcher thread checks that the parent is still there
_PR_SET_PDEATHSIG = 1
_LIFELINE = getattr(signal, "SIGRTMIN", 0) + 3 if sys.platform.startswith("linux") else None


class Terminated(BaseException):
    """Raised in the script when it is asked to end (SIGTERM, SIGHUP, or the death of the
    execmode process that started it). A BaseException, like KeyboardInterrupt: the
    script's ``except Exception`` does not stop it."""

    def __init__(self, reason: str, signum: int = signal.SIGTERM, parent_gone: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.signum = signum
        # The execmode process that started the script died: no signal was sent to the
        # script (its session says so, not "killed by SIGTERM").
        self.parent_gone = parent_gone

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


# --- parent side ---------------------------------------------------------------------------

def child_env(env: dict | None = None) -> dict:
    """``env`` (default: this process's) plus the parent pid the child checks against."""
    out = dict(os.environ if env is None else env)
    out[PARENT_PID_ENV] = str(os.getpid())
    return out


def launcher_fds(env: dict | None = None) -> tuple:
    """The file descriptors a process launcher handed this process, which the script's
    process needs to reach it: MPICH's Hydra (``mpiexec``) gives each rank its PMI
    connection as ``PMI_FD``, and a child started with the default ``close_fds`` could not
    initialise MPI (``PMI_Init returned -1``). Open MPI and Slurm pass addresses in the
    environment instead, which the child inherits anyway."""
    value = (os.environ if env is None else env).get("PMI_FD", "")
    try:
        fd = int(value)
        os.fstat(fd)
    except (ValueError, OSError):
        return ()
    return (fd,)


def interrupt_came_from_terminal() -> bool:
    """True when a SIGINT to this process was most likely the terminal's Ctrl-C, which the
    terminal sends to the whole foreground process group (the child already has it: sending
    another would interrupt the script's own cleanup)."""
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, AttributeError, ValueError):
        return False


# --- child side ----------------------------------------------------------------------------

class _State:
    parent: int | None = None
    in_script = False
    pending: Terminated | None = None   # a request that came outside the script window
    fork_hook = False
    pid: int | None = None              # the process install() ran in


def install() -> None:
    """Child side: handle SIGTERM/SIGHUP, and die with the parent named by
    ``EXECMODE_PARENT_PID`` (removed from the environment: the script's own children are
    not ours). Call from the main thread, first thing."""
    _State.pid = os.getpid()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _on_terminate)
    if not _State.fork_hook and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forget_in_forked_child)
        _State.fork_hook = True
    text = os.environ.pop(PARENT_PID_ENV, "")
    if not text.isdigit() or _LIFELINE is None:
        return
    _State.parent = int(text)
    signal.signal(_LIFELINE, _on_lifeline)
    if not _set_parent_death_signal(_LIFELINE):
        return
    if os.getppid() != _State.parent:  # it died before the prctl: no signal will come
        _request(_parent_gone())
        return
    threading.Thread(target=_watch_parent, name="execmode-lifeline", daemon=True).start()


def _forget_in_forked_child() -> None:
    # A process the script forks (a multiprocessing worker) is the script's, not ours: it
    # ends on SIGTERM as under plain python (Pool.terminate() sends it; a Terminated
    # traceback from each worker would be noise), and its parent is the script.
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)
    if _LIFELINE is not None and _State.parent is not None:
        signal.signal(_LIFELINE, signal.SIG_DFL)
    _State.parent, _State.in_script, _State.pending = None, False, None


def _watch_parent() -> None:
    # The kernel's death signal goes to the process, and Linux may hand it to any thread
    # (the session writer, a BLAS thread) when the main thread has a signal pending. The
    # main thread then runs the handler only at its next bytecode: never, while it sleeps
    # in a C call. This thread (which blocks the signals itself) sees the parent gone and
    # directs the signal at the main thread, whose sleep it interrupts.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGHUP, _LIFELINE})
    main = threading.main_thread().ident
    parent = _State.parent
    while _State.parent == parent and _State.pending is None:
        if os.getppid() != parent:
            signal.pthread_kill(main, _LIFELINE)
            return
        time.sleep(_WATCH_S)


def _set_parent_death_signal(signum: int) -> bool:
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


@contextlib.contextmanager
def script_window():
    """While the script itself runs, a termination request raises Terminated in it;
    outside (start-up, closing the session) it is only remembered, so that it cannot cut
    the session short. A request that came before the window opens raises at once."""
    if _State.pending is not None:
        raise _State.pending
    _State.in_script = True
    try:
        yield
    finally:
        _State.in_script = False


def say(text: str, end: str = "\n") -> None:
    """Text on stderr that never raises: the parent that read our stderr may be gone (a
    dead pipe raises BrokenPipeError), and the session must still be closed after."""
    try:
        print(text, end=end, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def flush_quietly() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass


def _on_terminate(signum, frame) -> None:
    if os.getpid() != _State.pid:
        # A forked child before _forget_in_forked_child ran (threading's own fork hook runs
        # first, and Pool.terminate() may signal a worker that young): end as plain
        # python would, not with a Terminated traceback.
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    name = signal.Signals(signum).name
    _request(Terminated(f"the script was stopped by {name}", signum))


def _on_lifeline(signum, frame) -> None:
    if os.getppid() == _State.parent:
        return  # only the parent's thread that started us ended; the parent lives
    _request(_parent_gone())


def _parent_gone() -> Terminated:
    return Terminated("the execmode process that started the script is gone", parent_gone=True)


def _request(exc: Terminated) -> None:
    first = _State.pending is None
    if first:
        _State.pending = exc
        # The backstop: a C watchdog thread, so it fires even while the GIL is held.
        with contextlib.suppress(ValueError, OSError):
            faulthandler.dump_traceback_later(GRACE_S, exit=True, file=sys.__stderr__)
    if _State.in_script and first:
        raise exc
