"""The ``execmode`` command line (also ``python -m execmode``).

Each subcommand lives with the package that implements it and registers itself through
one function that adds its argparse subparser and sets ``handler``; add a row to
:data:`COMMANDS` to add a command (and its example in cli_help.py). Handlers return the
process exit status; cli_help.py holds the table of exit codes that the help shows.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# command -> "module:function" adding its subparser (in the order `--help` lists them)
COMMANDS = {
    "tui": "execmode.tui.cli:register_tui",
    "open": "execmode.tui.cli:register_open",
    "run": "execmode.debug.run_cli:add_parser",
    "profile": "execmode.profilers.cli:register_profile",
    "report": "execmode.profilers.cli:register_report",
    "sessions": "execmode.profilers.sessions_cli:register_sessions",
    "explain": "execmode.jit_driver.explain_cli:add_parser",
}


def build_parser() -> argparse.ArgumentParser:
    from execmode import __version__
    from execmode.cli_help import finish_help

    parser = argparse.ArgumentParser(
        prog="execmode",
        description="A debugger and profiler for ML execution modes (eager vs graph).")
    parser.add_argument("--version", action="version", version=f"execmode {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for target in COMMANDS.values():
        module, function = target.split(":")
        getattr(importlib.import_module(module), function)(subparsers)
    finish_help(parser, subparsers)
    # For the help tests and docs/cli.md: verb -> its parser, verb -> its one-line help
    # (argparse keeps the latter only in a private list).
    parser.verb_parsers = dict(subparsers.choices)
    parser.verb_help = {action.dest: action.help for action in subparsers._choices_actions}
    return parser


def main(argv=None) -> int:
    """Parse ``argv`` (default: sys.argv[1:]) and run the command; return its exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
