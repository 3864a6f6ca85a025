"""Reaching a script that runs plain Python between ops: pdb's Ctrl-C, as a signal.

The agent's hooks see the script only when it dispatches an op. A script in a data loader,
a ``time.sleep`` or a loop of Python arithmetic dispatches none for as long as it likes,
so a pause (``p``) or a quit (``q``) queued for the next op would wait that long. The
reader thread sends this signal to the script's thread (the main thread, where Python runs
signal handlers): a blocking call returns with EINTR, the handler runs between two
bytecodes, and the agent pauses there (its frame is the paused frame) or quits. Linux
only (a real-time signal beside lifeline.py's); elsewhere the pause waits for the next op.
"""

from __future__ import annotations

import ctypes
import signal
import sys
import threading

SIGNAL = signal.SIGRTMIN + 4 if sys.platform.startswith("linux") and \
    hasattr(signal, "SIGRTMIN") else None


def install(handler) -> bool:
    """Route the signal to ``handler(signum, frame)``; False where it cannot be (not the
    main thread, not Linux): the caller then falls back to the next op."""
    if SIGNAL is None or threading.current_thread() is not threading.main_thread():
        return False
    signal.signal(SIGNAL, handler)
    return True


def poke(thread_id: int) -> bool:
    """Interrupt ``thread_id`` (the script's, the main thread); False if it is not the main
    thread (its handler would not run there)."""
    if SIGNAL is None or thread_id != threading.main_thread().ident:
        return False
    signal.pthread_kill(thread_id, SIGNAL)
    return True


def uninstall() -> None:
    if SIGNAL is not None and threading.current_thread() is threading.main_thread():
        signal.signal(SIGNAL, signal.SIG_DFL)


def raise_in_thread(thread_id: int, exc_type: type[BaseException] | None) -> None:
    """Raise ``exc_type`` in another thread at its next bytecode boundary; None withdraws
    one that has not been raised yet (CPython's PyThreadState_SetAsyncExc). Unlike the
    signal it does not end a blocking call, but it reaches any thread on any platform."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exc_type) if exc_type else None)
