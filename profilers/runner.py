"""Running a user's script as ``__main__``, the way ``python script.py args`` would.

Two layers, so the debugger's agent can reuse the first:

* :func:`run_script` runs a script in this process: ``sys.argv`` is the script and its
  arguments, ``sys.path[0]`` its folder, the working directory is left alone, and
  ``if __name__ == "__main__":`` blocks run. It never raises for the script: it returns a
  :class:`ScriptExit` (normal end, ``sys.exit(n)``, an exception with the script's own
  traceback, Ctrl-C).
* :func:`record_script` does that with a recorder on (and optionally py-spy and output
  capture), then stores the exit status and closes the session.

The CLI runs the second in a child process::

    python -m execmode.profilers.runner --session run.emsession [--pyspy] -- script.py args

and the child's exit status is the script's.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import runpy
import sys
import traceback
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path

from execmode.profilers.output import captured_output
from execmode.profilers.recorder import Recorder
from execmode.profilers.writer import SampleRow

from execmode import lifeline


@dataclass
class ScriptExit:
    """How a script ended. ``kind`` is "normal", "exit" (sys.exit), "exception",
    "interrupted" (KeyboardInterrupt) or "terminated" (SIGTERM, SIGHUP, the parent's death:
    lifeline.Terminated); ``code`` is the process exit status it implies."""

    kind: str
    code: int
    exception: str | None = None  # "ValueError: bad shape"
    traceback: str | None = None  # the script's frames only, as Python would print them
    file: str | None = None       # where the exception was raised, in the script's code
    line: int | None = None

    def to_json(self) -> dict:
        return asdict(self)


class ScriptNotFound(Exception):
    """The script path does not name a readable file (a usage error, exit status 2)."""


def check_script(script: str | os.PathLike) -> Path:
    path = Path(script)
    if path.is_dir() and not (path / "__main__.py").is_file():
        raise ScriptNotFound(f"{script}: is a folder without __main__.py")
    if not path.exists():
        raise ScriptNotFound(f"{script}: no such script")
    if not os.access(path, os.R_OK):
        raise ScriptNotFound(f"{script}: cannot be read")
    return path


def run_script(script: str | os.PathLike, args=()) -> ScriptExit:
    """Run ``script`` as ``__main__`` with ``args`` in ``sys.argv``; report how it ended.

    The exception (if any) is printed to stderr the way Python prints it, with execmode's
    own frames (this runner, runpy) left out. ``sys.argv`` and ``sys.path`` are restored.
    """
    path = check_script(script)
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [str(script), *[str(a) for a in args]]
    script_dir = str(path.resolve() if path.is_dir() else path.resolve().parent)
    if sys.path:
        sys.path[0] = script_dir
    else:
        sys.path.append(script_dir)
    try:
        # SIGTERM/SIGHUP or the parent's death raise Terminated only inside this window
        # (execmode/lifeline.py; the child process of `execmode profile` installs it).
        with lifeline.script_window():
            # An absolute path, as Python gives __main__ since 3.9: code filenames (and so
            # recorded source locations) do not depend on the working directory.
            runpy.run_path(os.path.abspath(script), run_name="__main__")
    except SystemExit as exc:
        return _system_exit(exc)
    except KeyboardInterrupt as exc:
        return _exception_exit(exc, path, "interrupted", 130)
    except lifeline.Terminated as exc:
        lifeline.say(f"execmode: {exc.reason}")
        return ScriptExit("terminated", exc.exit_code, exception=exc.reason)
    except BaseException as exc:  # the script's own failure: report it, never re-raise
        return _exception_exit(exc, path, "exception", 1)
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
        return ScriptExit("exit", code & 0xFF if code >= 0 else code % 256)
    lifeline.say(str(code))  # sys.exit("message") prints it and exits with 1
    return ScriptExit("exit", 1, exception=str(code))


def _exception_exit(exc: BaseException, script: Path, kind: str, code: int) -> ScriptExit:
    tb = exc.__traceback__
    # Skip the runner's and runpy's frames: start at the first frame of the script's code.
    while tb is not None and not _is_script_frame(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    lifeline.say(text, end="")  # never raises: the session must be closed after
    file = line = None
    last = tb
    while last is not None and last.tb_next is not None:
        last = last.tb_next
    if last is not None:
        file, line = last.tb_frame.f_code.co_filename, last.tb_lineno
    if isinstance(exc, SyntaxError) and tb is None:
        # The script did not compile: no frame ran; the error itself says where.
        file, line = exc.filename, exc.lineno
        message = f"{type(exc).__name__}: {exc.msg} ({os.path.basename(str(file))}, " \
                  f"line {line})"
    else:
        message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return ScriptExit(kind, code, exception=message, traceback=text, file=file, line=line)


_RUNPY = os.path.abspath(runpy.__file__)


def _is_script_frame(filename: str) -> bool:
    return os.path.abspath(filename) not in (os.path.abspath(__file__), _RUNPY) \
        and not filename.startswith("<frozen runpy")


def record_script(script: str | os.PathLike, args=(), *, session: str | os.PathLike,
                  summaries: bool = False, memory: bool = True, calibrate: bool = True,
                  capture_output: bool = True, pyspy: bool = False, rate: int = 100,
                  native: bool = False, pyspy_format: str = "raw",
                  listeners=()) -> ScriptExit:
    """Run ``script`` with a recorder writing to ``session`` (a new file); return its exit.

    ``listeners`` are attached too while the script runs (the debugger's controller).
    """
    check_script(script)
    from execmode import instrument

    meta = {"script": os.path.abspath(script), "argv": [str(script), *map(str, args)],
            "cwd": os.getcwd()}
    recorder = Recorder(session, summaries=summaries, memory=memory, calibrate=calibrate,
                        meta=meta)
    sampler = None
    try:
        if calibrate:
            recorder.calibrate()  # before py-spy starts: its samples are the script's
        if pyspy:
            sampler = _start_pyspy(recorder, rate, native, pyspy_format)
        recorder.start()
        for listener in listeners:
            instrument.add_listener(listener)
        try:
            with captured_output(recorder.writer.put) if capture_output else nullcontext():
                result = run_script(script, args)
        finally:
            for listener in listeners:
                instrument.remove_listener(listener)
        recorder.stop()
        if sampler is not None:
            _fold_pyspy(recorder, sampler)
            sampler = None
        recorder.set_meta("exit", result.to_json())
    finally:
        if sampler is not None:  # something above failed: do not leave py-spy running
            sampler.stop()
        recorder.close()
    return result


def _start_pyspy(recorder: Recorder, rate: int, native: bool, fmt: str):
    from execmode.profilers.pyspy import Sampler

    sampler = Sampler(os.getpid(), rate=rate, native=native, fmt=fmt)
    status = sampler.start()
    recorder.set_meta("pyspy", status.to_json())
    if status.status != "sampling":
        print(f"execmode: {status.message}; continuing without samples", file=sys.stderr)
        return None
    return sampler


def _fold_pyspy(recorder: Recorder, sampler) -> None:
    from execmode.profilers.stacks import Classifier

    status, stacks = sampler.stop()
    classify = Classifier().category
    for stack in stacks:
        frames = list(stack.frames)
        recorder.writer.put(SampleRow(stack.thread, ";".join(frames), stack.count,
                                      classify(frames)))
    recorder.set_meta("pyspy", status.to_json())
    if status.status != "ok":
        print(f"execmode: {status.message}", file=sys.stderr)


# --- the child-process entry point ------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m execmode.profilers.runner",
        description="Run a script as __main__ with execmode's recorder on.")
    p.add_argument("--session", required=True, help="the session file to create")
    p.add_argument("--summaries", action="store_true", help="store value summaries per op")
    p.add_argument("--no-memory", action="store_true", help="do not track live/peak memory")
    p.add_argument("--no-calibrate", action="store_true", help="skip the overhead calibration")
    p.add_argument("--no-output", action="store_true", help="do not record stdout/stderr")
    p.add_argument("--pyspy", action="store_true", help="sample with py-spy as well")
    p.add_argument("--rate", type=int, default=100, help="py-spy samples per second")
    p.add_argument("--native", action="store_true", help="py-spy: include native frames")
    p.add_argument("--pyspy-format", choices=("raw", "speedscope"), default="raw")
    # SCRIPT and its ARGS as one REMAINDER: passed on verbatim (a `--` after the script
    # stays the script's own).
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="[--] SCRIPT [ARGS...]")
    return p


def main(argv=None) -> int:
    """Entry point of the child process: exit status is the script's (2: usage error)."""
    lifeline.install()  # end with `execmode profile`, and end cleanly (lifeline.py)
    faulthandler.enable()  # a segfault prints the Python stack of the crash to stderr
    parser = build_parser()
    ns = parser.parse_args(argv)
    command = ns.command[1:] if ns.command[:1] == ["--"] else ns.command
    if not command:
        parser.error("the script to run is missing")
    from execmode.profilers.errors import SessionError

    try:
        result = record_script(
            command[0], command[1:], session=ns.session, summaries=ns.summaries,
            memory=not ns.no_memory, calibrate=not ns.no_calibrate,
            capture_output=not ns.no_output, pyspy=ns.pyspy, rate=ns.rate, native=ns.native,
            pyspy_format=ns.pyspy_format)
    except ScriptNotFound as exc:
        print(f"execmode: error: {exc}", file=sys.stderr)
        return 2
    except SessionError as exc:
        print(f"execmode: error: {exc}", file=sys.stderr)
        return 2
    lifeline.flush_quietly()  # the controller, and with it our pipes, may be gone
    return result.code


if __name__ == "__main__":
    sys.exit(main())
