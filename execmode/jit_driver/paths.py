"""The switches that force each execution path, so tests and the fuzzer can compare them.

An operation can run on more than one path, all meant to give the same results, events
and errors (the path matrix, docs/architecture.md "Paths"):

=========  ==========================================  ===================================
what       paths                                       switch (read once at import)
=========  ==========================================  ===================================
eager      ``python`` operators and unary functions    ``EXECMODE_EAGER_PATH=python|c|auto``
           (dispatch.make_operator ...), ``c``
           (native/eager_operators.c); ``auto``: C
           after dispatch.HOT_CALLS plain calls
jit        ``general`` (``JitFunction._call``),        ``EXECMODE_JIT_REPLAY=general|
           ``generated`` (fastcall._python_replay),    generated|native|auto``
           ``native`` (native/fast_entry.c where the
           plan qualifies); ``auto`` = native
recorder   ``python`` (an OpEvent per op), ``c`` (the  ``EXECMODE_NATIVE_RECORDER=0|1``
           op ring, profilers/native.py)               (read when a recording starts)
=========  ==========================================  ===================================

:func:`pinned` forces paths within a block (tests/conftest.py pins them for every test, so
no test depends on what the tests before it ran); :func:`current` says what is in force.
Switching the jit tier makes every live jitted function rebuild its fast replay on its
next call.
"""

from __future__ import annotations

import contextlib
import os

from .._tensor import Tensor
from ..codegen import eager_operators
from . import fastcall
from .registry import all_jit_functions

RECORDER_PATHS = ("python", "c", "auto")
_RECORDER_ENV = "EXECMODE_NATIVE_RECORDER"


def defaults() -> dict:
    """The paths the environment asked for when execmode was imported."""
    return {"eager": eager_operators.ENV_PATH, "replay": fastcall.ENV_REPLAY,
            "recorder": _recorder_path()}


def current() -> dict:
    """What is in force now: ``eager`` the operators installed ("python" or "c") and
    whether they are pinned, ``replay`` the tier new replays are built for, ``recorder``
    the path a recording started now would take (when its ring builds)."""
    return {"eager": eager_operators.current_path(Tensor),
            "eager_pinned": eager_operators.pinned_path(),
            "replay": fastcall._replay, "recorder": _recorder_path()}


def eager_c_available() -> bool:
    """Whether the C eager operators can be installed here (a compiler, the headers)."""
    return eager_operators.load_extension() is not None


def set_eager(path: str) -> str:
    """Put eager ops on ``path`` (python, c, auto); returns the path they now take."""
    return eager_operators.use_path(Tensor, path)


def set_replay(tier: str) -> str:
    """Build jitted replays for ``tier`` (general, generated, native, auto) from now on;
    the live functions drop theirs and rebuild them on their next call. Returns the
    previous tier."""
    previous = fastcall.set_replay(tier)
    if previous != tier:
        for jitted in all_jit_functions():
            jitted._fast, jitted._fast_stale = None, True
    return previous


def set_recorder(path: str) -> None:
    """Recordings started from now on record eager ops in ``path`` (python, c or auto)."""
    if path not in RECORDER_PATHS:
        raise ValueError(f"recorder path must be one of {', '.join(RECORDER_PATHS)}, "
                         f"got {path!r}")
    if path == "auto":
        os.environ.pop(_RECORDER_ENV, None)
    else:
        os.environ[_RECORDER_ENV] = "1" if path == "c" else "0"


def _recorder_path() -> str:
    text = os.environ.get(_RECORDER_ENV, "").strip().lower()
    if not text:
        return "auto"
    return "python" if text in ("0", "off", "no", "false") else "c"


@contextlib.contextmanager
def pinned(eager: str | None = None, replay: str | None = None,
           recorder: str | None = None):
    """Force the named paths inside the block (None: leave that one as it is); everything
    is put back as it was at the end. Yields :func:`current` (``eager`` is "python" when
    the C operators cannot be built here)."""
    restore_eager = eager_operators.snapshot(Tensor) if eager is not None else None
    recorder_env = os.environ.get(_RECORDER_ENV)
    previous_replay = None
    try:
        if eager is not None:
            set_eager(eager)
        if replay is not None:
            previous_replay = set_replay(replay)
        if recorder is not None:
            set_recorder(recorder)
        yield current()
    finally:
        if restore_eager is not None:
            restore_eager()
        if previous_replay is not None:
            set_replay(previous_replay)
        if recorder is not None:
            if recorder_env is None:
                os.environ.pop(_RECORDER_ENV, None)
            else:
                os.environ[_RECORDER_ENV] = recorder_env
