"""``execmode run [--break SPEC ...] [--keep-going] SCRIPT [ARGS...]``: the debugger without
a UI. When a breakpoint hits it prints where (op, line, the tensor summary) and stops the
script, or with ``--keep-going`` prints every hit and lets it run on.

Exit codes: the script's own when it finishes (1 if it raised), 4 when stopped at a
breakpoint, 128+N when killed by signal N (or when ``execmode run`` itself gets SIGTERM or
SIGHUP N: it stops the script, which closes its session), 130 on Ctrl-C, 2 for usage errors.
The table that the help and docs/cli.md show is execmode/cli_help.py's.
"""

from __future__ import annotations

import os
import signal
import sys

from ..cli_args import (
    CliError,
    Command,
    add_break_option,
    add_script_argument,
    add_session_options,
    add_summaries_option,
    parse_script_command,
    require_script,
)
from .controller import Controller, ControllerError

EXIT_STOPPED_AT_BREAKPOINT = 4


def _options(p) -> None:
    add_break_option(p)
    p.add_argument("--keep-going", action="store_true",
                   help="print every breakpoint hit and continue")
    add_session_options(p)
    p.add_argument("--no-session", action="store_true",
                   help="record nothing (the debugger alone)")
    add_summaries_option(p)


class RunCommand(Command):
    name = "run"
    help = "run a script under the debugger, without a UI"
    description = ("Run SCRIPT under the debugger, without a UI. When a breakpoint hits, print "
                   "where (op, line, the tensor summary) and stop the script, or with "
                   "--keep-going print every hit and let it run on. execmode's options come "
                   "before SCRIPT; everything after SCRIPT goes to the script untouched.")

    def prepare_parser(self, p) -> None:
        _options(p)
        add_script_argument(p)

    def run(self, args) -> int:
        return run_command(args)


RUN = RunCommand()


def run_command(opts) -> int:
    # Imported here: `execmode --help` loads every command's module, and stays quick.
    from ..profilers.session_dir import SessionDirError, saved_line

    parse_script_command(opts.parser, opts)
    require_script(opts.parser, opts)
    if opts.no_session and opts.session:
        opts.parser.error("--session and --no-session contradict each other")
    try:
        session = _session_path(opts)
    except SessionDirError as exc:
        raise CliError(exc) from None
    _say_breakpoint_notes(opts.breaks)
    # The script's own stdin, stdout and stderr (the terminal): as under python.
    ctl = Controller(opts.script, opts.args, breakpoints=opts.breaks, session=session,
                     start_paused=False, inherit_stdin=True, inherit_output=True,
                     summaries=opts.summaries,
                     keep_values=0)  # nobody inspects past ops here: copy none
    previous = {signum: signal.signal(signum, _raise_stopped)
                for signum in (signal.SIGTERM, signal.SIGHUP)}
    try:
        return _drive(ctl, opts)
    except KeyboardInterrupt:
        ctl.stop()
        return 130
    except _Stopped as exc:
        # Passed on as SIGTERM: it ends even a sleeping script, which still closes its
        # session (lifeline.py). Killed outright, this process takes the script with it.
        ctl.stop(terminate=True)
        return 128 + exc.signum
    finally:
        ctl.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if session is not None and os.path.exists(session):
            _record_unclosed_exit(ctl, session)
            print(saved_line(session), file=sys.stderr)


def _record_unclosed_exit(ctl: Controller, session: str) -> None:
    """A script that was killed, crashed or left by os._exit could not close its session:
    say in it how the script ended (profilers/session_end.py). The controller saw how its
    process died; a session the script closed is left alone."""
    from ..profilers.session_end import record_unclosed

    info = ctl.exit
    if info is not None and info.status in ("killed", "crashed", "vanished") and \
            info.code is not None:
        record_unclosed(session, info.code)


def _say_breakpoint_notes(specs) -> None:
    """A likely typo in a condition (``maxx > 3`` reads a Python value ``maxx``) is said
    before the run, not discovered after a breakpoint that never fired. A spec that does
    not parse is refused by the agent, with its column."""
    from .breakpoints import BreakpointError, parse_breakpoint
    from .conditions import ConditionError

    for spec in specs:
        try:
            bp = parse_breakpoint(spec)
        except (BreakpointError, ConditionError):
            continue
        for note in bp.to_json()["notes"]:
            print(f"execmode run: --break {spec}: {note}", file=sys.stderr)


def _session_path(opts) -> str | None:
    if opts.no_session:
        return None
    from ..profilers.ranks import launcher_rank_session
    from ..profilers.session_dir import SessionDirError, chosen_session_path, new_session_path

    if opts.session:
        return str(chosen_session_path(opts.session, force=opts.force))
    try:  # one of several ranks (mpiexec -n N execmode run): the ranks' run folder
        ranked = launcher_rank_session(opts.script)
    except OSError as exc:
        raise SessionDirError(f"cannot make the ranks' run folder: {exc}") from None
    return str(ranked or new_session_path(opts.script))


class _Stopped(BaseException):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum, frame) -> None:
    # Once: a second signal must not interrupt the stop that the first one began.
    signal.signal(signum, signal.SIG_IGN)
    raise _Stopped(signum)


def _drive(ctl: Controller, opts) -> int:
    try:
        ctl.start()
    except ControllerError as exc:
        print(f"execmode run: {exc}", file=sys.stderr)
        return 2
    while True:
        event = ctl.wait_for("paused", "exited", "error", timeout=1e9)
        if event.type == "error":
            print(f"execmode run: {event.get('message')}", file=sys.stderr)
            if ctl.proc.poll() is not None or "--break" in (event.get("message") or ""):
                ctl.stop()
                return 2
            continue
        if event.type == "exited":
            _say_never_hit(ctl)
            return _exit_code(ctl)
        print(describe_pause(event.data), file=sys.stderr, flush=True)
        if not opts.keep_going:
            ctl.stop()
            print("execmode run: stopped at the breakpoint (use --keep-going to go on)",
                  file=sys.stderr)
            return EXIT_STOPPED_AT_BREAKPOINT
        ctl.cont()


def _say_never_hit(ctl: Controller) -> None:
    """A breakpoint that never stopped the script is named with its reason, not forgotten
    (a typo'd file, a line without ops, a scope that never occurred)."""
    from .reach import never_hit_lines

    if ctl.exit is not None and ctl.exit.status in ("ok", "exit", "exception"):
        for line in never_hit_lines(ctl.exit.breakpoints):
            print(f"execmode run: {line}", file=sys.stderr)


def _exit_code(ctl: Controller) -> int:
    info = ctl.exit
    if info.status in ("killed", "crashed") and info.code is not None and info.code < 0:
        print(f"execmode run: the script {info.description}", file=sys.stderr)
        return 128 - info.code
    if info.status not in ("ok", "exit"):
        print(f"execmode run: the script {info.description}", file=sys.stderr)
    return info.code if info.code is not None else 1


def describe_pause(p: dict) -> str:
    """A few lines saying where the script stopped and what the tensor looks like."""
    # Imported here: summary.py needs NumPy, which the CLI's own process otherwise never
    # loads (tests/test_lazy_package.py).
    from .summary import format_summary

    loc = p.get("location") or {}
    where = f"{loc.get('filename')}:{loc.get('lineno')} in {loc.get('function')}" if loc else "?"
    lines = [f"[execmode] {p.get('reason')}"]
    kernel = p.get("kernel")
    # Numbered as the TUI, the session and its exports number them (debug/numbering.py).
    if kernel:
        lines.append(f"  kernel run #{p.get('kernel_index')}: {kernel['name']} of graph "
                     f"{kernel.get('graph_id')} ({kernel['backend']}): "
                     + " ".join(kernel["member_ops"]))
    elif p.get("op"):
        lines.append(f"  op #{p.get('op_index')}: {p['op']}")
    lines.append(f"  at {where}")
    if p.get("output"):
        lines.append("  output " + format_summary(p["output"]))
    for i, s in enumerate(p.get("inputs") or ()):
        if "type" in s:
            lines.append(f"  input {i} " + format_summary(s))
    hunt = p.get("hunt")
    if hunt and hunt.get("text"):
        lines.append("  origin: " + hunt["text"])
        origin = hunt.get("origin") or {}
        oloc = origin.get("location")
        if oloc:
            lines.append(f"    at {oloc['filename']}:{oloc['lineno']} in {oloc['function']}")
    return "\n".join(lines)
