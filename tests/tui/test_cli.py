"""``execmode tui`` argument handling (the TUI itself is tested through Pilot)."""

from __future__ import annotations

import pytest

from execmode.cli import build_parser, main
from execmode.cli_args import parse_script_command


def _parse(tokens):
    opts = build_parser().parse_args(["tui", *tokens])
    return parse_script_command(opts.parser, opts)


def test_options_before_the_script_are_the_tuis_and_after_it_the_scripts():
    args = _parse(["--break", "inf", "--break=op:exp", "--pyspy", "train.py", "--epochs", "3",
                   "--break", "nan", "--", "x"])
    assert args.script == "train.py"
    assert args.args == ["--epochs", "3", "--break", "nan", "--", "x"]
    assert args.breaks == ["inf", "op:exp"] and args.pyspy is True


def test_a_missing_script_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:  # as argparse's own usage errors
        main(["tui", str(tmp_path / "nope.py")])
    assert exit_.value.code == 2
    assert f"execmode tui: no such script: {tmp_path / 'nope.py'}" in capsys.readouterr().err


def test_a_malformed_breakpoint_is_refused_with_its_column(tmp_path, capsys):
    script = tmp_path / "s.py"
    script.write_text("print(1)\n")
    assert main(["tui", "--break", "max >", str(script)]) == 2
    err = capsys.readouterr().err
    assert "column" in err and "^" in err


def test_a_value_option_without_its_value_is_refused():
    with pytest.raises(SystemExit):
        _parse(["--break"])
