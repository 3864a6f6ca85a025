"""What the ``--help`` texts end with: an example line per verb and the exit codes, in one
table that ``execmode --help``, each verb's help and docs/cli.md all show.

Each row says which verbs can end with that status; where each status is produced:
argparse errors and ``cli_args.CliError`` (exit_code 2 unless it says otherwise) in every
command module; 4 is ``run_cli.EXIT_STOPPED_AT_BREAKPOINT``; 1 for a report is a
``CliError(..., 1)`` of ``profilers/cli.py`` (a report that cannot be written); 128+N comes from a child killed by a signal (``run_cli._exit_code``,
``profilers/cli._run_child``) or a SIGTERM/SIGHUP passed on (``_Stopped``,
``_wait_forwarding_signals``); 130 from Ctrl-C (``run_cli.run_command``, the runners'
``KeyboardInterrupt``).
"""

from __future__ import annotations

import argparse
import re
import textwrap
from typing import NamedTuple

SCRIPT_VERBS = ("tui", "run", "profile", "explain")


class ExitCode(NamedTuple):
    code: str
    meaning: str
    verbs: tuple[str, ...]


EXIT_CODES = (
    ExitCode("0", "success: the command did its job and the script, if any, exited 0",
             ("tui", "open", "run", "profile", "report", "sessions", "explain", "launch")),
    ExitCode("N", "the script's own exit status, passed through (1 when it raised); for "
                  "launch, mpiexec's, which reports its ranks' failures",
             ("run", "profile", "explain", "launch")),
    ExitCode("1", "the report could not be written, or (profile) the script ended before "
                  "its session was; profile gives 1 only when the script itself exited 0",
             ("profile", "report")),
    ExitCode("2", "usage error (bad option, missing script or one that cannot start, "
                  "malformed --break, unknown format, unusable session file or folder, -o in "
                  "a missing folder) or a session file that cannot be read",
             ("tui", "open", "run", "profile", "report", "sessions", "explain", "launch")),
    ExitCode("4", "stopped at a breakpoint (without --keep-going)", ("run",)),
    ExitCode("130", "interrupted by Ctrl-C", ("run", "profile", "explain")),
    ExitCode("128+N", "the script was killed by signal N, or execmode got SIGTERM (143) or "
                      "SIGHUP (129) and stopped the script, which closes its session",
             ("run", "profile")),
)

NOTE = ("A script may itself exit with any of these codes: read stderr to tell which; "
        "execmode's own messages there start with 'execmode'.")

EXAMPLES = {
    "tui": ["execmode tui --break nan train.py --epochs 3"],
    "open": ["execmode open", "execmode open ~/.cache/execmode/sessions/train-...emsession"],
    "run": ["execmode run --break nan --break 'max > 1e3' train.py --lr 3e-4"],
    "profile": ["execmode profile -o train.html train.py --epochs 1"],
    "report": ["execmode report run.emsession -o run.trace.json",
               "execmode report -o latest.html"],
    "sessions": ["execmode sessions -n 5"],
    "explain": ["execmode explain train.py --steps 2",
                "execmode explain --on-break bake train.py"],
    "launch": ["execmode launch -n 2 train_ddp.py --epochs 1"],
}


def exit_codes_for(verb: str | None = None) -> list[ExitCode]:
    return [row for row in EXIT_CODES if verb is None or verb in row.verbs]


def exit_code_lines(verb: str | None = None) -> list[str]:
    """The table as terminal lines: ``  CODE   meaning [verbs]``."""
    lines = []
    for row in exit_codes_for(verb):
        meaning = row.meaning if verb else f"{row.meaning} [{', '.join(row.verbs)}]"
        wrapped = textwrap.wrap(meaning, 78 - 10)
        lines.append(f"  {row.code:<7} {wrapped[0]}")
        lines += [" " * 10 + more for more in wrapped[1:]]
    return lines


def epilog(verb: str | None = None) -> str:
    lines = []
    if verb is not None:
        examples = EXAMPLES[verb]
        lines += ["example:" if len(examples) == 1 else "examples:"]
        lines += [f"  {example}" for example in examples]
        lines.append("")
    else:
        lines += ["examples:"] + [f"  {EXAMPLES[v][0]}" for v in EXAMPLES] + [""]
    lines.append("exit codes:")
    lines += exit_code_lines(verb)
    if verb is None or verb in ("run", "profile", "explain"):
        lines += [""] + textwrap.wrap(NOTE, 78)
    return "\n".join(lines)


class TerminalHelpFormatter(argparse.HelpFormatter):
    """Wraps each paragraph of a description on its own and keeps indented lines (examples,
    tables) as written: help for a terminal, not reStructuredText."""

    def _fill_text(self, text, width, indent):
        paragraphs = []
        for block in text.split("\n\n"):
            if block.startswith(" ") or block.endswith(":") or "\n  " in block:
                paragraphs.append("\n".join(indent + line for line in block.splitlines()))
            else:
                paragraphs.append(textwrap.fill(" ".join(block.split()), width,
                                                initial_indent=indent,
                                                subsequent_indent=indent))
        return "\n\n".join(paragraphs)

    def _format_args(self, action, default_metavar):
        # argparse shows a REMAINDER positional as "..."; ours is named SCRIPT [ARGS...].
        if action.nargs == argparse.REMAINDER and action.metavar:
            return action.metavar
        return super()._format_args(action, default_metavar)


_RST_LITERAL = re.compile(r"``([^`]+)``|`([^`]+)`")


def terminal_text(text: str | None) -> str | None:
    """Drop reStructuredText literal quotes (``x`` and `x` become x) from a docstring-derived
    description."""
    if text is None:
        return None
    return _RST_LITERAL.sub(lambda m: m.group(1) or m.group(2), text)


def finish_help(parser: argparse.ArgumentParser, subparsers) -> None:
    """Give the top-level parser and every verb the terminal formatter, an example and the
    exit codes."""
    parser.formatter_class = TerminalHelpFormatter
    parser.epilog = epilog()
    for verb, sub in subparsers.choices.items():
        sub.formatter_class = TerminalHelpFormatter
        sub.description = terminal_text(sub.description)
        sub.epilog = epilog(verb)
