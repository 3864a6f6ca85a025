"""The ``execmode`` command line (also ``python -m execmode``).

Each subcommand lives with the package that implements it, as a ``cli_args.Command``
object (its help, its options, its ``run``); add a row to :data:`COMMANDS` to add a command
(and its example in cli_help.py). A command's ``run`` returns the process exit status, or
raises ``cli_args.CliError`` (its message and status), which is said here, once;
cli_help.py holds the table of exit codes that the help shows.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from execmode.cli_args import CliError

# command -> "module:name" of its Command (in the order `--help` lists them)
COMMANDS = {
    "tui": "execmode.tui.cli:TUI",
    "open": "execmode.tui.cli:OPEN",
    "run": "execmode.debug.run_cli:RUN",
    "profile": "execmode.profilers.cli:PROFILE",
    "report": "execmode.profilers.cli:REPORT",
    "sessions": "execmode.profilers.sessions_cli:SESSIONS",
    "explain": "execmode.jit_driver.explain_cli:EXPLAIN",
    "launch": "execmode.distributed.launch_cli:LAUNCH",
}


def build_parser() -> argparse.ArgumentParser:
    from execmode import __version__
    from execmode.cli_help import finish_help

    parser = argparse.ArgumentParser(
        prog="execmode",
        description="A debugger and profiler for ML execution modes (eager vs graph).")
    parser.add_argument("--version", action="version", version=f"execmode {__version__}")
    # dest "verb": the script-running verbs keep their SCRIPT [ARGS...] in "command".
    subparsers = parser.add_subparsers(dest="verb", metavar="COMMAND")
    for target in COMMANDS.values():
        module, name = target.split(":")
        getattr(importlib.import_module(module), name).register(subparsers)
    finish_help(parser, subparsers)
    # For the help tests and docs/cli.md: verb -> its parser, verb -> its one-line help
    # (argparse keeps the latter only in a private list).
    parser.verb_parsers = dict(subparsers.choices)
    parser.verb_help = {action.dest: action.help for action in subparsers._choices_actions}
    return parser


def main(argv=None) -> int:
    """Parse ``argv`` (default: sys.argv[1:]) and run the command; return its exit status.

    Output into a pipe that closed (``execmode sessions | head -1``) ends the command
    quietly with status 0, as ``ls | head`` does."""
    try:
        try:
            return _run(argv)
        finally:
            # Here, not at exit, where a closed pipe could only be reported (also after
            # --help, whose SystemExit this lets through).
            sys.stdout.flush()
    except BrokenPipeError:
        _quiet_closed_pipes()
        return 0


def _run(argv) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verb is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.handler(args)
    except CliError as exc:
        print(f"execmode {args.verb}: error: {exc}", file=sys.stderr)
        return exc.exit_code


def _quiet_closed_pipes() -> None:
    """Point stdout (and stderr, if it is the one that closed) at /dev/null, so that the
    flush at interpreter exit finds nowhere to fail, as the Python docs recommend
    (library/signal.html, "Note on SIGPIPE")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            try:
                os.dup2(devnull, stream.fileno())
            except (OSError, ValueError):
                pass
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
