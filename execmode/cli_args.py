"""Script-running commands take ``[OPTIONS] SCRIPT [ARGS...]``, as py-spy and memray do:
execmode's options come before SCRIPT, and everything after SCRIPT goes to the script
untouched, even spellings of our own options and a ``--`` (``execmode profile train.py -o
out.html`` gives ``-o out.html`` to train.py). A ``--`` before SCRIPT ends our options, for a
script whose name starts with a dash.

argparse cannot keep a ``--`` that follows a separate SCRIPT positional, so each command
takes one REMAINDER positional, ``command``, that :func:`parse_script_command` splits.
"""

from __future__ import annotations

import argparse
import sys

from .script_runner import script_problem

SCRIPT_METAVAR = "SCRIPT [ARGS...]"
SCRIPT_HELP = "the Python script and its own arguments: everything after SCRIPT is the script's"


def add_script_argument(parser: argparse.ArgumentParser, help: str = SCRIPT_HELP) -> None:
    """The ``SCRIPT [ARGS...]`` positional, last in a command's arguments."""
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar=SCRIPT_METAVAR, help=help)


def parse_script_command(parser: argparse.ArgumentParser, opts, *_ignored) -> argparse.Namespace:
    """Set ``opts.script`` and ``opts.args`` from ``opts.command``; a missing SCRIPT is a usage
    error (exit 2). Extra positional arguments are accepted and ignored: they were the table
    of options that could once follow the script (jit_driver/explain_cli.py still passes one)."""
    command = list(opts.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        parser.error(f"the script to run is missing: {parser.prog} [OPTIONS] {SCRIPT_METAVAR}")
    opts.script, opts.args = command[0], command[1:]
    return opts


def require_script(parser: argparse.ArgumentParser, opts) -> None:
    """What every verb does before running ``opts.script``: one that is not a readable file
    (or a folder with ``__main__.py``) is a usage error, exit 2, said the same way."""
    problem = script_problem(opts.script)
    if problem is not None:
        print(f"{parser.prog}: {problem}", file=sys.stderr)
        raise SystemExit(2)
