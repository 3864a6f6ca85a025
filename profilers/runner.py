"""Recording a user's script: ``record_script`` runs it with a recorder on (and optionally
py-spy and output capture), then stores how it ended (session_end.py) and closes the
session. The running itself (``sys.argv``, ``sys.path[0]``, the exit status, the
traceback as Python prints it) is :mod:`execmode.script_runner`'s, the same for run,
profile, explain and the TUI.

The CLI runs it in a child process::

    python -m execmode.profilers.runner --session run.emsession [--pyspy] -- script.py args

and the child's exit status is the script's.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import sys
from contextlib import nullcontext

from execmode.profilers import session_end
from execmode.profilers.output import captured_output
from execmode.profilers.recorder import Recorder
from execmode.profilers.writer import SampleRow

from execmode import lifeline
from execmode.script_runner import (  # noqa: F401 - ScriptNotFound: part of this API
    ScriptExit,
    ScriptNotFound,
    check_script,
    run_script,
)


def record_script(script: str | os.PathLike, args=(), *, session: str | os.PathLike,
                  summaries: bool = False, memory: bool = True, calibrate: bool = True,
                  kernel_rows: bool = False, capture_output: bool = True, pyspy: bool = False, rate: int = 100,
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
                        kernel_rows=kernel_rows, meta=meta)
    sampler = None
    try:
        if calibrate:
            recorder.calibrate()  # before py-spy starts: its samples are the script's
        if pyspy:
            sampler = start_pyspy(recorder, rate, native, pyspy_format)
        # The engine, loaded before recording starts: the script's first em.<name> would
        # otherwise load it (~0.1 s) inside the recording, as the time before its first op.
        import execmode.api  # noqa: F401

        recorder.start()
        for listener in listeners:
            instrument.add_listener(listener)
        try:
            with captured_output(recorder.writer.put) if capture_output else nullcontext() \
                    as capture:
                result = run_script(script, args, on_start=recorder.script_started,
                                    on_end=recorder.script_ended)
            if capture is not None:
                recorder.runner_ns(capture.recording_ns)
        finally:
            for listener in listeners:
                instrument.remove_listener(listener)
        recorder.stop()
        if sampler is not None:
            fold_pyspy(recorder, sampler)
            sampler = None
        session_end.record(recorder.set_meta, result, session_end.from_script_exit(result))
    finally:
        if sampler is not None:  # something above failed: do not leave py-spy running
            sampler.stop()
        recorder.close()
    return result


def start_pyspy(recorder: Recorder, rate: int, native: bool, fmt: str):
    from execmode.profilers.pyspy import Sampler

    sampler = Sampler(os.getpid(), rate=rate, native=native, fmt=fmt)
    status = sampler.start()
    recorder.set_meta("pyspy", status.to_json())
    if status.status != "sampling":
        print(f"execmode: {status.message}; continuing without samples", file=sys.stderr)
        return None
    return sampler


def fold_pyspy(recorder: Recorder, sampler) -> None:
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
    p.add_argument("--kernel-rows", action="store_true",
                   help="a row per kernel run (plans run step by step), not only sums")
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
            kernel_rows=ns.kernel_rows, capture_output=not ns.no_output, pyspy=ns.pyspy, rate=ns.rate, native=ns.native,
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
