"""``execmode tui`` argument handling (the TUI itself is tested through Pilot)."""

from __future__ import annotations

import pytest
from execmode.tui.cli import main, split_trailing_options


def test_options_after_the_script_arguments_are_the_tuis():
    args, found = split_trailing_options(["--epochs", "3", "--break", "nan", "--pyspy",
                                          "--break=op:exp"])
    assert args == ["--epochs", "3"]
    assert found["--break"] == ["nan", "op:exp"] and found["--pyspy"] is True


def test_after_a_double_dash_everything_is_the_scripts():
    args, found = split_trailing_options(["-v", "--", "--break", "x"])
    assert args == ["-v", "--break", "x"] and found["--break"] == []


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
        split_trailing_options(["--break"])
