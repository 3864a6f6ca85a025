"""Everything after SCRIPT goes to the script untouched, for every script-running verb
(py-spy's and memray's convention): real child processes running a script that prints
its own sys.argv."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from execmode.cli import build_parser
from execmode.cli_args import parse_script_command

# Slow tier: CLI verbs run as subprocesses.
pytestmark = pytest.mark.slow

ARGV_SCRIPT = """\
import json, sys
print("ARGV " + json.dumps(sys.argv[1:]))
"""

# Spellings of execmode's own options, a `--`, and a --help: all of them the script's.
SCRIPT_ARGS = ["-o", "out.html", "--break", "nan", "--session", "x.emsession", "--",
               "--keep-going", "--help"]


def execmode(*args, cwd):
    return subprocess.run([sys.executable, "-m", "execmode", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def argv_of(result) -> list[str]:
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("ARGV ")]
    return json.loads(line[len("ARGV "):])


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "show_argv.py"
    path.write_text(ARGV_SCRIPT)
    return path


@pytest.mark.parametrize("verb, options", [
    ("run", ["--keep-going"]),
    ("profile", ["--top", "3", "--format", "md"]),
    ("explain", []),
])
def test_the_script_gets_every_argument_after_it(tmp_path, script, verb, options):
    result = execmode(verb, *options, script, *SCRIPT_ARGS, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert argv_of(result) == SCRIPT_ARGS
    # `-o out.html` was the script's: execmode wrote no report there.
    assert not (tmp_path / "out.html").exists()


def test_profile_options_before_the_script_are_executions(tmp_path, script):
    result = execmode("profile", "-o", "mine.md", script, "-o", "theirs.md", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert argv_of(result) == ["-o", "theirs.md"]
    assert (tmp_path / "mine.md").exists() and not (tmp_path / "theirs.md").exists()


def test_a_double_dash_before_the_script_ends_executions_options(tmp_path):
    dashed = tmp_path / "-dashed.py"
    dashed.write_text(ARGV_SCRIPT)
    result = execmode("run", "--", dashed.name, "a", "--", "b", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert argv_of(result) == ["a", "--", "b"]


@pytest.mark.parametrize("verb", ["run", "profile", "explain", "tui"])
def test_a_missing_script_is_a_usage_error(tmp_path, verb):
    result = execmode(verb, cwd=tmp_path)
    assert result.returncode == 2
    assert f"execmode {verb}: error: the script to run is missing" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_tui_splits_the_same_way():
    # The TUI needs a terminal; its command line is checked on the real parser.
    opts = build_parser().parse_args(["tui", "--run", "--break", "inf", "train.py",
                                      "--break", "nan", "--run"])
    parse_script_command(opts.parser, opts)
    assert opts.script == "train.py" and opts.args == ["--break", "nan", "--run"]
    assert opts.breaks == ["inf"] and opts.run is True


@pytest.mark.parametrize("verb", ["run", "profile", "explain", "tui"])
def test_every_verb_says_a_missing_script_the_same_way(verb, tmp_path):
    missing = tmp_path / "nope.py"
    result = subprocess.run([sys.executable, "-m", "execmode", verb, str(missing)],
                            capture_output=True, text=True, stdin=subprocess.DEVNULL,
                            timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip() == f"execmode {verb}: no such script: {missing}"
