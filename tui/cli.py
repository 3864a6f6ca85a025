"""The ``execmode tui`` and ``execmode open`` commands.

``execmode/cli.py`` adds the subcommands from their command objects, :data:`TUI` and
:data:`OPEN` (``cli_args.Command``). Textual is imported only when a command runs, so
``execmode --help`` stays quick.

``execmode tui [OPTIONS] SCRIPT [ARGS...]``: the TUI's own options come before the
script; everything after it goes to the script untouched. Exit status: 0 after a normal
quit, 2 for a usage error (no such script, a malformed breakpoint), for a session that
cannot be read (missing, empty, a folder or a FIFO, foreign, newer, damaged: the message
says which) and when there is no terminal to draw on (stdin or stderr redirected, as in a
pipeline or a CI job): Textual would wait forever for a terminal's answers, so the command
says so at once and points at the headless verbs. 1 when the UI itself crashed: Textual's
traceback, then one line naming the crash report and the session (kept intact).
"""

from __future__ import annotations

import os
import sys

from execmode.cli_args import (
    CliError,
    Command,
    add_break_option,
    add_script_argument,
    add_session_dir_option,
    add_session_options,
    latest_session,
    parse_script_command,
    require_script,
    whole_number,
)

NO_TERMINAL = "needs a terminal; use execmode run or execmode report instead"


def _tui_options(p) -> None:
    add_break_option(p)
    p.add_argument("--run", action="store_true",
                   help="start running instead of paused before the first op")
    p.add_argument("--pyspy", action="store_true", help="also sample the script with py-spy")
    p.add_argument("--no-summaries", dest="summaries", action="store_false",
                   help="do not record value statistics of every op output (faster on large "
                        "tensors; the op history's NaN/Inf filter then finds nothing)")
    p.add_argument("--keep-values", type=whole_number(0), metavar="N",
                   help="keep copies of the last N eager ops' tensors (default 64, each up "
                        "to 1 MiB, 64 MiB in all), so Enter on a past op shows its values "
                        "while the script is live; 0 keeps none")
    add_session_options(p, "the session file for the first run")
    add_session_dir_option(p, "where each run's session file goes (default: the session "
                              "folder, $EXECMODE_SESSION_DIR or ~/.cache/execmode/sessions)")


class TuiCommand(Command):
    name = "tui"
    help = "debug a script in the terminal UI (paused before its first op)"
    description = ("Run SCRIPT under the debugger and open the TUI, paused before the first "
                   "op. Keys: n next line, s step op, c continue, p pause, b/B breakpoints, "
                   "r restart, e export, ? help, q quit. execmode's options come before "
                   "SCRIPT; everything after SCRIPT goes to the script untouched.")

    def prepare_parser(self, p) -> None:
        _tui_options(p)
        add_script_argument(p)

    def run(self, args) -> int:
        return tui_command(args)


class OpenCommand(Command):
    name = "open"
    help = "open a recorded session in the TUI (post-mortem)"
    description = ("Browse a recorded session: ops, graphs, breaks, passes, kernels, "
                   "profile and output. Everything but stepping. Without SESSION, the "
                   "latest one in the session folder (see execmode sessions).")

    def prepare_parser(self, p) -> None:
        p.add_argument("session", nargs="?", metavar="SESSION",
                       help="the .emsession file (default: the latest in the session "
                            "folder), or the run folder of execmode launch --profile (R: the "
                            "next rank)")

    def run(self, args) -> int:
        return open_command(args)


TUI, OPEN = TuiCommand(), OpenCommand()


def tui_command(args) -> int:
    from execmode.tui.launch import ScriptLaunch

    from execmode.debug.breakpoints import BreakpointError, parse_breakpoint
    from execmode.debug.conditions import ConditionError

    parse_script_command(args.parser, args)
    require_script(args.parser, args)
    breaks = list(args.breaks)
    for spec in breaks:
        try:
            parse_breakpoint(spec)
        except (BreakpointError, ConditionError) as exc:
            raise CliError(f"--break {spec}: {exc}") from None
    if args.session:
        from execmode.profilers.session_dir import SessionDirError, chosen_session_path

        try:
            chosen_session_path(args.session, force=args.force)
        except SessionDirError as exc:
            raise CliError(exc) from None
    if not has_terminal():
        raise CliError(NO_TERMINAL)
    launch = ScriptLaunch(
        script=args.script, args=args.args, breakpoints=breaks, start_paused=not args.run,
        pyspy=args.pyspy, session=args.session, session_dir=args.session_dir,
        summaries=args.summaries, keep_values=args.keep_values,
    )
    # The agent starts now and imports the engine while this process imports Textual:
    # the first pause is on screen about when the TUI is (docs/tui.md, "Measured").
    launch.prestart()
    from execmode.tui.app import ExecmodeApp

    app = ExecmodeApp(launch)
    app.run()
    session = app.bridge.session if app.bridge is not None else None
    if session and os.path.exists(session):
        from execmode.profilers.session_dir import saved_line

        print(saved_line(session))
    return _exit_status(app, "tui", session)


def open_command(args) -> int:
    from execmode.tui.data import SessionReader, SessionUnreadable
    from execmode.tui.launch import SessionLaunch

    if args.session is None:
        args.session = str(latest_session("open"))
    ranks = ()
    if os.path.isdir(args.session):  # a run folder of execmode launch --profile
        from execmode.profilers.ranks import rank_sessions

        ranks = tuple(str(path) for _, path in rank_sessions(args.session))
        if not ranks:
            raise CliError(f"{args.session}: is a folder without rank sessions "
                           "(rank0.emsession ...); give a session file")
        args.session = ranks[0]
    try:
        with SessionReader(args.session) as reader:
            reader.meta()
    except SessionUnreadable as exc:
        raise CliError(exc) from None
    if not has_terminal():
        raise CliError(NO_TERMINAL)
    launch = SessionLaunch(args.session, ranks=ranks)
    launch.prestart()  # the row indexes are read while Textual loads (tail.EarlySnapshot)
    from execmode.tui.app import ExecmodeApp

    app = ExecmodeApp(launch)
    app.run()
    return _exit_status(app, "open", args.session)


def _exit_status(app, verb: str, session: str | None) -> int:
    """0 after a normal quit. A crash of the UI (Textual printed its traceback above) is
    said again in one line with a crash report's path, and exits 1: a script or a CI job
    that ran ``execmode tui`` must not read a crash as success. The session is intact (the
    agent wrote it; the UI only reads it)."""
    code = app.return_code or 0
    if code == 0:
        return 0
    # Textual keeps the first unhandled exception for its test harness; it has no public
    # accessor, and the report is worth the private read (None if it moves).
    error = getattr(app, "_exception", None)
    report = _write_crash_report(error, verb, session)
    where = f"; the crash report is {report}" if report else ""
    kept = f"; the session is kept: {session}" if session else ""
    what = f"{type(error).__name__}: {error}" if error is not None else f"exit code {code}"
    print(f"execmode {verb}: the TUI crashed ({what}){where}{kept}", file=sys.stderr)
    return code


def _write_crash_report(error, verb: str, session: str | None) -> str | None:
    """The traceback in a file (next to the session, else in the temp folder)."""
    import tempfile
    import time
    import traceback

    if error is None:
        return None
    folder = os.path.dirname(session) if session else tempfile.gettempdir()
    path = os.path.join(folder, f"execmode-{verb}-crash-{time.strftime('%Y%m%d-%H%M%S')}"
                                f"-{os.getpid()}.txt")
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"execmode {verb} crashed\nsession: {session or '-'}\n\n{text}")
    except OSError:
        return None
    return path


def has_terminal() -> bool:
    """Can Textual run here? Its Linux driver reads keys from stdin and draws on stderr
    (``sys.__stderr__``); without a terminal on both it never gets the answers it waits
    for."""
    streams = (sys.__stdin__, sys.__stderr__)
    try:
        return all(s is not None and os.isatty(s.fileno()) for s in streams)
    except (OSError, ValueError):  # a closed or replaced stream
        return False


def main(argv=None) -> int:
    """``python -m execmode.tui tui SCRIPT`` / ``... open SESSION``: the same as execmode's."""
    from execmode.cli import main as execmode_main

    return execmode_main(argv)
