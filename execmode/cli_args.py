"""What the verbs of the command line share: :class:`Command`, the shape of a verb; the
script's arguments and the options several verbs take (defined once here); and
:class:`CliError`, the one way a command ends with an error.

Script-running commands take ``[OPTIONS] SCRIPT [ARGS...]``, as py-spy and memray do:
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
from pathlib import Path

from .script_runner import script_problem


class Command:
    """A verb of ``execmode`` (memray's pattern): its name and help, the options
    :meth:`prepare_parser` adds, and :meth:`run`, which returns the exit status or raises
    :class:`CliError`. execmode/cli.py's table names each command's object."""

    name = ""
    help = ""
    description = ""

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        pass

    def run(self, args: argparse.Namespace) -> int:
        raise NotImplementedError

    def register(self, subparsers) -> None:
        """Add the verb's parser; the parsed arguments carry its ``handler`` and ``parser``."""
        parser = subparsers.add_parser(self.name, help=self.help, description=self.description)
        self.prepare_parser(parser)
        parser.set_defaults(handler=self.run, parser=parser)


class CliError(Exception):
    """A command that cannot do its job: raised anywhere in it, said once by the entry point
    (execmode/cli.py) as ``execmode VERB: error: MESSAGE``, which exits with
    :attr:`exit_code` (2: a usage error or an unreadable session; cli_help.py's table)."""

    def __init__(self, message, exit_code: int = 2):
        super().__init__(str(message))
        self.exit_code = exit_code


SESSION_FOLDER = "the session folder, $EXECMODE_SESSION_DIR or ~/.cache/execmode/sessions"


def add_session_options(parser: argparse.ArgumentParser,
                        session_help: str = "the session file to record into (default: a "
                                            f"new file in {SESSION_FOLDER})") -> None:
    """``--session FILE`` and ``--force``, for the verbs that record."""
    parser.add_argument("--session", metavar="FILE", help=session_help)
    parser.add_argument("--force", action="store_true",
                        help="replace the --session file if it exists (only a session file)")


def add_session_dir_option(parser: argparse.ArgumentParser, help: str) -> None:
    """``--session-dir DIR``: where a verb that records puts its session files (tui: each
    run's; launch --profile: its run folder of ranks)."""
    parser.add_argument("--session-dir", metavar="DIR", help=help)


def add_summaries_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--summaries", action="store_true",
                        help="record value statistics (min/max/mean/std, NaN/Inf counts) of "
                             "every op output in the session (costs about an op per op)")


def add_break_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--break", dest="breaks", action="append", default=[], metavar="SPEC",
                        help="op:NAME, FILE:LINE, scope:PATH, graph_break, exception, or a "
                             "condition such as nan, inf, 'max > 1e3' (repeatable)")


def whole_number(minimum: int):
    """An argparse ``type``: an integer of at least ``minimum`` (0 or 1); anything else is
    a usage error saying what was expected."""
    wanted = "a positive integer" if minimum == 1 else f"{minimum} or more"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            kind = "a positive integer" if minimum == 1 else "a whole number"
            raise argparse.ArgumentTypeError(f"expected {kind}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {value}")
        return value

    return parse


def latest_session(verb: str) -> Path:
    """The newest session in the session folder, for a verb given no SESSION: announced
    on stderr, or a :class:`CliError` saying why there is none."""
    from execmode.profilers.session_dir import SessionDirError, session_dir
    from execmode.profilers.session_dir import latest_session as newest

    try:
        latest = newest()
    except SessionDirError as exc:
        raise CliError(exc) from None
    if latest is None:
        raise CliError(f"no sessions in {session_dir()}; give a SESSION file (or set "
                       "EXECMODE_SESSION_DIR)")
    print(f"execmode {verb}: the latest session, {latest}", file=sys.stderr)
    return latest


SCRIPT_METAVAR = "SCRIPT [ARGS...]"
SCRIPT_HELP = "the Python script and its own arguments: everything after SCRIPT is the script's"


def add_script_argument(parser: argparse.ArgumentParser, help: str = SCRIPT_HELP) -> None:
    """The ``SCRIPT [ARGS...]`` positional, last in a command's arguments."""
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar=SCRIPT_METAVAR, help=help)


def parse_script_command(parser: argparse.ArgumentParser, opts) -> argparse.Namespace:
    """Set ``opts.script`` and ``opts.args`` from ``opts.command``; a missing SCRIPT is a usage
    error (exit 2)."""
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
