"""Script-running commands take ``SCRIPT [ARGS...]`` with our options before SCRIPT or
after its ARGS (``execmode run train.py --lr 3 --break nan``); everything after ``--``
belongs to the script. argparse cannot express that with a separate SCRIPT positional, so
commands take one REMAINDER positional and split our trailing options off it here.
"""

from __future__ import annotations

import argparse


def split_trailing_options(args: list[str], options: dict[str, bool]):
    """(the script's arguments, our option tokens found among them), stopping at ``--``.
    ``options`` maps each spelling to whether it takes a value."""
    script_args, ours = [], []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            script_args.extend(args[i + 1:])
            break
        name, eq, _ = arg.partition("=")
        if name in options:
            ours.append(arg)
            if options[name] and not eq and i + 1 < len(args):
                ours.append(args[i + 1])
                i += 1
        else:
            script_args.append(arg)
        i += 1
    return script_args, ours


def parse_script_command(parser: argparse.ArgumentParser, opts, options: dict[str, bool],
                         add_options) -> argparse.Namespace:
    """Fill ``opts.script``/``opts.args`` from ``opts.command`` and apply trailing options,
    parsed with the same definitions (``add_options(parser)``) so types and errors match."""
    command = list(opts.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        parser.error("missing SCRIPT")
    opts.script = command[0]
    opts.args, trailing = split_trailing_options(command[1:], options)
    if trailing:
        extra = argparse.ArgumentParser(prog=parser.prog, add_help=False, allow_abbrev=False)
        add_options(extra)
        found = extra.parse_args(trailing)
        for name, value in vars(found).items():
            default = extra.get_default(name)
            if isinstance(value, list) and isinstance(getattr(opts, name, None), list):
                setattr(opts, name, getattr(opts, name) + value)
            elif value != default:
                setattr(opts, name, value)
    return opts
