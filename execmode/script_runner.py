"""Running the user's script as ``__main__``: the one runner behind ``execmode run``,
``profile``, ``explain`` and the TUI's agent, so that a script behaves, fails and exits the
same way under all of them (and as under ``python script.py``).

* ``sys.argv`` is ``[script, *args]`` and ``sys.path[0]`` the script's folder (replacing the
  runner's own first entry, as ``python script.py`` has it); both are restored after.
* The script runs inside lifeline's window: SIGTERM/SIGHUP or the death of the execmode
  process that started it raise :class:`~execmode.lifeline.Terminated` there.
* How it ended is a :class:`ScriptExit`; an exception's traceback is printed to stderr as
  Python prints it, without the runner's and runpy's frames, and a SyntaxError of a script
  that does not compile shows no frame at all. ``sys.exit(n)`` gives ``n & 0xFF``, as the
  shell sees it (``sys.exit(-1)`` is 255).

Callers hook in with ``on_start`` / ``on_end`` (called just before and after the script's
code, even when it fails; the debugger opens and closes its interrupt window there) and
``quit_exception`` (the debugger's own "stop the script" exception, reported as ``quit``).
"""

from __future__ import annotations

import os
import pkgutil  # noqa: F401 - runpy's (below)
import runpy
import sys
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import lifeline

# runpy.run_path imports pkgutil on its first call (~0.3 ms): imported above, with the
# runner, not inside the script's time, where a recorder would count it as the script's.


@dataclass
class ScriptExit:
    """How a script ended. ``kind`` is "normal", "exit" (sys.exit), "exception",
    "interrupted" (KeyboardInterrupt), "terminated" (SIGTERM, SIGHUP, the parent's death:
    lifeline.Terminated) or "quit" (the debugger stopped it); ``code`` is the process exit
    status it implies."""

    kind: str
    code: int
    exception: str | None = None  # "ValueError: bad shape"
    traceback: str | None = None  # the script's frames only, as Python would print them
    # Where the script's own code was: the line that raised (its innermost frame outside
    # execmode), or where a quit or a termination landed.
    file: str | None = None
    line: int | None = None
    # The exception itself, for a post-mortem (the debugger's exception breakpoint).
    error: BaseException | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict:
        out = asdict(self)
        del out["error"]
        return out


class ScriptNotFound(Exception):
    """The script path does not name a readable file (a usage error, exit status 2)."""


def script_problem(script: str | os.PathLike) -> str | None:
    """Why ``script`` cannot be run (as python would run it), or None."""
    script = str(script)
    if os.path.isdir(script):
        if os.path.isfile(os.path.join(script, "__main__.py")):
            return None
        return f"{script}: is a folder without __main__.py"
    if not os.path.exists(script):
        return f"no such script: {script}"
    if not os.access(script, os.R_OK):
        return f"cannot read the script {script}: permission denied"
    return None


def check_script(script: str | os.PathLike) -> Path:
    problem = script_problem(script)
    if problem is not None:
        raise ScriptNotFound(problem)
    return Path(script)


def run_script(script: str | os.PathLike, args=(), *, on_start=None, on_end=None,
               quit_exception: type[BaseException] | None = None) -> ScriptExit:
    """Run ``script`` as ``__main__`` with ``args`` in ``sys.argv``; report how it ended.
    The script's own failure is reported, never re-raised."""
    path = check_script(script)
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [str(script), *[str(a) for a in args]]
    script_dir = str(path.resolve() if path.is_dir() else path.resolve().parent)
    if sys.path:
        sys.path[0] = script_dir
    else:
        sys.path.append(script_dir)
    try:
        try:
            if on_start is not None:
                on_start()
            # SIGTERM/SIGHUP or the parent's death raise Terminated only inside this window
            # (lifeline.py; the child processes of run, profile and the TUI install it).
            with lifeline.script_window():
                # An absolute path, as Python gives __main__ since 3.9: code filenames (and
                # so recorded source locations) do not depend on the working directory.
                runpy.run_path(os.path.abspath(script), run_name="__main__")
        finally:
            if on_end is not None:
                on_end()
    except SystemExit as exc:
        return _system_exit(exc)
    except KeyboardInterrupt as exc:
        return _exception_exit(exc, "interrupted", 130)
    except lifeline.Terminated as exc:
        lifeline.say(f"execmode: {exc.reason}")
        file, line = _user_place(exc.__traceback__)
        return ScriptExit("terminated", exc.exit_code, exception=exc.reason, file=file,
                          line=line, error=exc)
    except BaseException as exc:  # the script's own failure: report it, never re-raise
        if quit_exception is not None and isinstance(exc, quit_exception):
            file, line = _user_place(exc.__traceback__)
            return ScriptExit("quit", 130, file=file, line=line)
        return _exception_exit(exc, "exception", 1)
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0
    return ScriptExit("normal", 0)


def _system_exit(exc: SystemExit) -> ScriptExit:
    code = exc.code
    if code is None:
        return ScriptExit("exit", 0)
    if isinstance(code, int):
        return ScriptExit("exit", code & 0xFF)
    lifeline.say(str(code))  # sys.exit("message") prints it and exits with 1
    return ScriptExit("exit", 1, exception=str(code))


def _exception_exit(exc: BaseException, kind: str, code: int) -> ScriptExit:
    tb = exc.__traceback__
    # Skip the runner's and runpy's frames: start at the first frame of the script's code.
    while tb is not None and not _is_script_frame(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    lifeline.say(text, end="")  # never raises: the session must be closed after
    file, line = _user_place(tb)
    if isinstance(exc, SyntaxError) and tb is None:
        # The script did not compile: no frame ran; the error itself says where.
        file, line = exc.filename, exc.lineno
        message = f"{type(exc).__name__}: {exc.msg} ({os.path.basename(str(file))}, " \
                  f"line {line})"
    else:
        message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return ScriptExit(kind, code, exception=message, traceback=text, file=file, line=line,
                      error=exc)


def _user_place(tb) -> tuple[str | None, int | None]:
    """(file, line) where the script's own code was when ``tb`` was raised: the innermost
    frame outside execmode (an op that refused its inputs raises inside execmode, at the
    user's line), else the innermost frame."""
    from .source import is_internal_file

    place = last = (None, None)
    while tb is not None:
        here = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        if _is_script_frame(here[0]):
            last = here
            if not is_internal_file(here[0]):
                place = here
        tb = tb.tb_next
    return place if place[0] is not None else last


_RUNPY = os.path.abspath(runpy.__file__)


def _is_script_frame(filename: str) -> bool:
    return os.path.abspath(filename) not in (os.path.abspath(__file__), _RUNPY) \
        and not filename.startswith("<frozen runpy")
