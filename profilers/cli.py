"""The ``execmode profile`` and ``execmode report`` commands.

``execmode/cli.py`` builds the top-level parser and adds these subcommands from their
command objects, :data:`PROFILE` and :data:`REPORT` (``cli_args.Command``). Only argparse is imported here at module level: ``execmode --help`` stays
quick.

Exit statuses: ``profile`` returns the script's own status (128+N when a signal N killed
it, or when ``execmode profile`` itself was stopped by SIGTERM/SIGHUP N, which it passes on
to the script: no report then, the session is kept); 2 is a usage error (bad option,
missing script, unknown format) or, from ``report``, a session that cannot be read (the
message names the file and the problem); 1 is a report that cannot be written.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from execmode import lifeline
from execmode.cli_args import (
    CliError,
    Command,
    add_script_argument,
    add_session_options,
    add_summaries_option,
    latest_session,
    parse_script_command,
    require_script,
    whole_number,
)

FORMAT_CHOICES = ("html", "chrome", "speedscope", "json", "csv", "md")


class ProfileCommand(Command):
    name = "profile"
    help = "run a script with recording on and write a report"
    description = ("Run SCRIPT (with ARGS) as __main__ in a child process with execmode's "
                   "recorder on; write the session file and a report, and print a short "
                   "summary. execmode's options come before SCRIPT; everything after SCRIPT "
                   "goes to the script untouched.")

    def prepare_parser(self, p) -> None:
        _profile_options(p)
        add_script_argument(p)

    def run(self, args) -> int:
        return profile_command(args)


class ReportCommand(Command):
    name = "report"
    help = "export a report from a recorded session"
    description = ("Write a report (HTML, Chrome trace, speedscope, JSON, CSV, Markdown) "
                   "from a session file recorded by execmode profile, run or tui, or "
                   "em.profile().")

    def prepare_parser(self, p) -> None:
        p.add_argument("session", nargs="?", metavar="SESSION",
                       help="the .emsession file (default: the latest in the session folder, "
                            "as for execmode open), or the run folder of execmode launch "
                            "--profile (its ranks merged into one Chrome trace)")
        p.add_argument("-o", "--output", metavar="FILE",
                       help="the report to write, in an existing folder (default: the "
                            "session's name, format suffix)")
        p.add_argument("--format", choices=FORMAT_CHOICES,
                       help="report format (default: from the -o suffix, else html)")
        p.add_argument("--table", default="ops",
                       help="csv only: ops, op_totals, kernel_totals (each compiled step's "
                            "runs summed), kernels (a row per kernel run, with --kernel-rows), "
                            "memory, comparisons, samples or session (how the script ended)")
        p.add_argument("--summary", action="store_true", help="also print the text summary")

    def run(self, args) -> int:
        return report_command(args)


PROFILE, REPORT = ProfileCommand(), ReportCommand()


def _profile_options(p) -> None:
    p.add_argument("-o", "--output", metavar="FILE",
                   help="the report to write, in an existing folder (default: beside the "
                        "session, format suffix)")
    p.add_argument("--format", choices=FORMAT_CHOICES,
                   help="report format (default: from the -o suffix, else html)")
    add_session_options(p)
    p.add_argument("--pyspy", action="store_true",
                   help="also sample the script with py-spy (user code vs dispatch vs "
                        "kernels)")
    p.add_argument("--rate", type=whole_number(1), default=100, metavar="N",
                   help="py-spy samples per second (default 100)")
    p.add_argument("--native", action="store_true",
                   help="py-spy: include native (C) frames; pauses the script per sample")
    add_summaries_option(p)
    p.add_argument("--no-memory", action="store_true", help="do not track live/peak memory")
    p.add_argument("--kernel-rows", action="store_true",
                   help="record every kernel run as its own row (a timeline of kernels); "
                        "without it, each compiled step's runs are summed where they run, "
                        "which costs a clock read per step instead of an event")
    p.add_argument("--top", type=whole_number(1), default=10, metavar="N",
                   help="rows in the printed summary tables (default 10)")


# --- profile ------------------------------------------------------------------------------
def profile_command(args) -> int:
    from execmode.profilers import session_end
    from execmode.profilers.session_dir import (
        SessionDirError,
        chosen_session_path,
        new_session_path,
        saved_line,
    )

    parse_script_command(args.parser, args)
    require_script(args.parser, args)
    script_args = args.args
    fmt = _choose_format(args.output, args.format)
    _check_output(args.output)  # before the run, not after minutes of it
    try:
        session = chosen_session_path(args.session, force=args.force) if args.session \
            else _rank_session_path(args.script) or new_session_path(args.script)
    except SessionDirError as exc:
        raise CliError(exc) from None
    output = Path(args.output) if args.output else _beside(session, fmt)

    _say(f"recording {args.script} into {session}")
    if session.name == "rank0.emsession" and not args.session:  # the ranks' shared folder
        _say(f"every rank: execmode report {session.parent} / execmode open {session.parent}")
    returncode, stopped_by = _run_child(args, session, script_args)
    code = 128 - returncode if returncode < 0 else returncode  # a signal N: 128+N, as a shell
    if stopped_by is not None:
        # Told to end: no report (it could take long); the session was closed by the child.
        name = signal.Signals(stopped_by).name
        where = f"; the session is {session} (execmode report {session})" \
            if session.exists() else ""
        _say(f"stopped by {name}{where}")
        return 128 + stopped_by
    if not session.exists():
        _say("the script ended before a session was written; no report")
        return code if code else 1
    unclosed = session_end.record_unclosed(session, returncode)
    try:
        text = _write_report(session, output, fmt, table="ops", top=args.top)
    except Exception as exc:  # noqa: BLE001 - any report failure: say it, keep the session
        print(saved_line(session), file=sys.stderr)
        raise CliError(f"could not write the report: {exc}", code or 1) from None
    print(text)
    print(saved_line(session), file=sys.stderr)
    if unclosed is not None and unclosed.signal:
        how = "crashed with" if unclosed.kind == "crashed" else "was killed by"
        _say(f"the script {how} {unclosed.signal} (exit status {code})")
    elif code != 0:
        _say(f"the script exited with status {code}")
    return code


def _rank_session_path(script: str) -> Path | None:
    from execmode.profilers.ranks import launcher_rank_session
    from execmode.profilers.session_dir import SessionDirError

    try:
        return launcher_rank_session(script)
    except OSError as exc:
        raise SessionDirError(f"cannot make the ranks' run folder: {exc}") from None


def _run_child(args, session: Path, script_args: list[str]) -> tuple[int, int | None]:
    """(Popen's return code of the runner, the SIGTERM/SIGHUP that stopped it or None)."""
    cmd = [sys.executable, "-m", "execmode.profilers.runner", "--session", str(session)]
    if args.summaries:
        cmd.append("--summaries")
    if args.no_memory:
        cmd.append("--no-memory")
    if args.kernel_rows:
        cmd.append("--kernel-rows")
    if args.pyspy:
        cmd += ["--pyspy", "--rate", str(args.rate)]
        if args.native:
            cmd.append("--native")
    cmd += ["--", args.script, *script_args]
    return _wait_forwarding_signals(lambda: subprocess.Popen(
        cmd, env=lifeline.child_env(), pass_fds=lifeline.launcher_fds()))


def _wait_forwarding_signals(start) -> tuple[int, int | None]:
    """Start the child and wait for it, passing on what would end this process: SIGTERM and
    SIGHUP as SIGTERM (the child ends the script and closes the session, lifeline.py), a
    SIGINT that did not come from the terminal as SIGINT (the terminal's Ctrl-C reached the
    child already). Returns (the child's status, the SIGTERM/SIGHUP received or None). If
    this process is killed outright, the child learns it from the kernel (lifeline.py)."""
    proc = None
    stopped_by: list[int] = []

    def forward(signum, frame) -> None:
        if signum != signal.SIGINT:
            stopped_by.append(signum)
        elif lifeline.interrupt_came_from_terminal():
            return
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM)

    handled = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
    previous = {signum: signal.signal(signum, forward) for signum in handled}
    try:
        proc = start()
        if stopped_by:  # it came while the child was being started
            proc.send_signal(signal.SIGTERM)
        code = proc.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return code, (stopped_by[0] if stopped_by else None)


# --- report -------------------------------------------------------------------------------
def report_command(args) -> int:
    from execmode.profilers.errors import SessionError

    fmt = _choose_format(args.output, args.format)
    _check_output(args.output)
    if args.session is None:
        args.session = latest_session("report")
    session = Path(args.session)
    if session.is_dir():
        return _report_ranks(session, args)
    output = Path(args.output) if args.output else _beside(session, fmt)
    try:
        text = _write_report(session, output, fmt, table=args.table, top=10)
    except SessionError as exc:
        raise CliError(exc) from None
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        # A file that passed the checks but holds values no execmode writes (a column of
        # the wrong type): name the file, never a traceback (EXECMODE_DEBUG=1 shows it).
        if os.environ.get("EXECMODE_DEBUG"):
            import traceback

            traceback.print_exc()
        raise CliError(f"{session}: the session holds values this execmode cannot read "
                       f"({type(exc).__name__}: {exc}); it is damaged or was not written by "
                       "execmode") from None
    except OSError as exc:
        raise CliError(f"could not write the report {output}: {exc}", 1) from None
    if args.summary:
        print(text)
    return 0


def _report_ranks(folder: Path, args) -> int:
    """A run folder of rank sessions (execmode launch --profile): one Chrome trace of
    every rank, a process each (profilers/ranks.py), and a line per rank."""
    from contextlib import ExitStack

    from execmode.profilers.errors import SessionError
    from execmode.profilers.exporters import format_for_path
    from execmode.profilers.exporters.chrome import export_chrome_ranks
    from execmode.profilers.rank_compare import rank_ops, rank_ops_table
    from execmode.profilers.ranks import collective_waits, rank_sessions, straggler_line
    from execmode.profilers.session import open_session
    from execmode.profilers.tables import render_table

    ranks = rank_sessions(folder)
    if not ranks:
        raise CliError(f"{folder}: is a folder without rank sessions (rank0.emsession ...); "
                       "give a session file, or a run folder of execmode launch --profile")
    fmt = args.format or (format_for_path(args.output) if args.output else "chrome")
    if fmt != "chrome":
        raise CliError(f"{folder}: a run of {len(ranks)} ranks merges into a Chrome trace "
                       f"(--format chrome); for {fmt}, report one rank: {ranks[0][1]}")
    output = Path(args.output) if args.output else \
        folder.with_name(folder.name + ".trace.json")
    try:
        with ExitStack() as stack:
            sessions = [(rank, stack.enter_context(open_session(path)))
                        for rank, path in ranks]
            export_chrome_ranks(sessions, output, progress=_progress("merging the ranks"))
            waits = {rank: collective_waits(s) for rank, s in sessions}
            lines = [f"rank {rank}: {s.count('op_events'):,} ops, {waits[rank].calls} "
                     f"collectives ({waits[rank].waited_ns / 1e6:.1f} ms waiting for the "
                     f"other ranks), {s.end.text()} ({s.path.name})"
                     for rank, s in sessions]
            straggler = straggler_line(waits)
            by_rank = rank_ops_table(rank_ops(sessions, limit=10), [r for r, _ in sessions])
    except SessionError as exc:
        raise CliError(exc) from None
    except OSError as exc:
        raise CliError(f"could not write the trace {output}: {exc}", 1) from None
    if args.summary:
        print("\n".join(lines + ([straggler] if straggler else [])))
        print("\n" + render_table(by_rank))
    _say(f"{len(ranks)} ranks in one trace: {output} (open it in https://ui.perfetto.dev)")
    return 0


# --- shared -------------------------------------------------------------------------------
def _write_report(session: Path, output: Path, fmt: str, *, table: str, top: int) -> str:
    """Export ``session`` to ``output``; return the text summary."""
    from execmode.profilers.exporters import export
    from execmode.profilers.report import build_report
    from execmode.profilers.session import open_session
    from execmode.profilers.tables import render_summary

    started = time.monotonic()
    with open_session(session) as s:
        options = {"table": table} if fmt == "csv" else {}
        export(s, output, fmt, progress=_progress(f"writing {fmt} report"), **options)
        if sys.stderr.isatty():
            print(file=sys.stderr)
        _say(f"wrote {fmt} report to {output} ({time.monotonic() - started:.1f} s)")
        return render_summary(build_report(s, top=top))


def _choose_format(output: str | None, fmt: str | None) -> str:
    from execmode.profilers.exporters import format_for_path

    if fmt is not None:
        return fmt
    if output is None:
        return "html"
    guessed = format_for_path(output)
    if guessed is None:
        raise CliError(f"{output}: cannot tell the report format from the name; "
                          f"add --format ({', '.join(FORMAT_CHOICES)})")
    return guessed


def _check_output(output: str | None) -> None:
    """-o into a missing folder is a usage error (exit 2), as py-spy and memray refuse it."""
    from execmode.profilers.errors import SessionError
    from execmode.profilers.exporters.common import check_output_folder

    if output is not None:
        try:
            check_output_folder(Path(output))
        except SessionError as exc:
            raise CliError(exc) from None


def _beside(session: Path, fmt: str) -> Path:
    from execmode.profilers.exporters import suffix_for

    name = session.name
    stem = name[: -len(".emsession")] if name.endswith(".emsession") else session.stem
    return session.with_name(stem + suffix_for(fmt))


def _progress(label: str):
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        print(f"\rexecmode: {label}: {done:,}/{total:,} rows", end="", file=sys.stderr,
              flush=True)

    return show


def _say(text: str) -> None:
    print(f"execmode: {text}", file=sys.stderr, flush=True)
