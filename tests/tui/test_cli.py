"""``execmode tui`` argument handling (the TUI itself is tested through Pilot)."""

from __future__ import annotations

import argparse

import pytest
from execmode.tui.cli import _TRAILING, _tui_options

from execmode.cli import main
from execmode.cli_args import parse_script_command


def _parse(tokens):
    parser = argparse.ArgumentParser(prog="execmode tui")
    _tui_options(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    return parse_script_command(parser, parser.parse_args(tokens), _TRAILING, _tui_options)


def test_options_after_the_script_arguments_are_the_tuis():
    args = _parse(["--break", "inf", "train.py", "--epochs", "3", "--break", "nan",
                   "--pyspy", "--break=op:exp"])
    assert args.script == "train.py" and args.args == ["--epochs", "3"]
    assert args.breaks == ["inf", "nan", "op:exp"] and args.pyspy is True


def test_after_a_double_dash_everything_is_the_scripts():
    args = _parse(["train.py", "-v", "--", "--break", "x"])
    assert args.args == ["-v", "--break", "x"] and args.breaks == []


def test_a_missing_script_is_a_usage_error(tmp_path, capsys):
    assert main(["tui", str(tmp_path / "nope.py")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_a_malformed_breakpoint_is_refused_with_its_column(tmp_path, capsys):
    script = tmp_path / "s.py"
    script.write_text("print(1)\n")
    assert main(["tui", str(script), "--break", "max >"]) == 2
    err = capsys.readouterr().err
    assert "column" in err and "^" in err


def test_a_value_option_without_its_value_is_refused():
    with pytest.raises(SystemExit):
        _parse(["train.py", "--break"])
