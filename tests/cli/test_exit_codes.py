"""Each exit code in the table (execmode/cli_help.py) is what the verbs really return: real
child processes on a script that ends the way its argument says. Also: the help texts are
for a terminal, each with an example, and docs/cli.md shows the same table."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from execmode.cli import build_parser
from execmode.cli_help import EXAMPLES, EXIT_CODES, exit_codes_for

# Slow tier: CLI verbs run as subprocesses.
pytestmark = pytest.mark.slow

ENDS = """\
import os, signal, sys
import execmode as em
how = sys.argv[1]
if how == "exit":
    sys.exit(int(sys.argv[2]))
if how == "raise":
    raise ValueError("on purpose")
if how == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if how == "nan":
    x = em.zeros(2)
    print(float(em.sum(x / x)))
print("ok")
"""
DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def execmode(*args, cwd):
    return subprocess.run([sys.executable, "-m", "execmode", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def ends(tmp_path):
    path = tmp_path / "ends.py"
    path.write_text(ENDS)
    return path


@pytest.mark.parametrize("command, code", [
    (["run", "{ends}", "ok"], 0),
    (["run", "{ends}", "exit", "7"], 7),
    (["run", "{ends}", "raise"], 1),
    (["run", "--break", "nan", "{ends}", "nan"], 4),
    (["run", "{ends}", "kill"], 128 + 9),
    (["run", "--break", "max >", "{ends}", "ok"], 2),
    (["profile", "-o", "r.md", "{ends}", "exit", "7"], 7),
    (["profile", "-o", "r.md", "{ends}", "raise"], 1),
    (["profile", "-o", "r.md", "{ends}", "kill"], 128 + 9),
    # A report that cannot be written after the run: its name is taken by a folder.
    (["profile", "-o", "taken.md", "{ends}", "ok"], 1),
    (["profile", "-o", "taken.md", "{ends}", "exit", "3"], 3),
    # A report folder that cannot exist is refused before the run (cli.md, -o).
    (["profile", "-o", "blocker/r.md", "{ends}", "ok"], 2),
    (["explain", "{ends}", "exit", "7"], 7),
    (["explain", "{ends}", "raise"], 1),
    (["explain", "missing.py"], 2),
    (["report", "missing.emsession"], 2),
    (["sessions", "-n", "x"], 2),
])
def test_the_documented_exit_codes_are_the_real_ones(tmp_path, ends, command, code):
    (tmp_path / "blocker").write_text("a file where a folder would have to be")
    (tmp_path / "taken.md").mkdir()
    result = execmode(*[part.format(ends=ends) for part in command], cwd=tmp_path)
    assert result.returncode == code, result.stderr
    listed = {row.code for row in exit_codes_for(command[0])}
    assert str(code) in listed or (code == 137 and "128+N" in listed) or "N" in listed
    if code not in (0,):
        assert "Traceback" not in result.stderr or command[-1] == "raise"


def _help(verb=None):
    parser = build_parser()
    if verb is None:
        return parser.format_help()
    return parser.verb_parsers[verb].format_help()


@pytest.mark.parametrize("verb", [None, *EXAMPLES])
def test_help_is_for_a_terminal_with_examples_and_exit_codes(verb):
    text = _help(verb)
    assert "`" not in text and ":func:" not in text
    assert "exit codes:" in text
    codes = re.findall(r"^  (\S+) {2,}", text.split("exit codes:")[1], flags=re.M)
    assert codes == [row.code for row in exit_codes_for(verb)]
    examples = text.split("example")[1].split("exit codes:")[0]
    wanted = EXAMPLES[verb] if verb else [EXAMPLES[v][0] for v in EXAMPLES]
    assert [x.strip() for x in examples.splitlines()[1:] if x.strip()] == wanted


def test_every_verb_has_an_example_and_the_examples_parse():
    parser = build_parser()
    verbs = set(parser.verb_parsers)
    assert verbs == set(EXAMPLES)
    for examples in EXAMPLES.values():
        for example in examples:
            words = re.findall(r"'[^']*'|\S+", example)[1:]
            parser.parse_args([w.strip("'") for w in words])  # SystemExit on a bad one


def test_docs_show_the_same_exit_codes():
    section = DOCS.read_text().split("## Exit codes")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]
    documented = [tuple(cell.strip() for cell in row.strip("|").split("|")) for row in rows]
    assert documented == [(f"`{r.code}`", r.meaning, ", ".join(r.verbs)) for r in EXIT_CODES]


SLEEPY = """\
import time
print("started", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("verb", ["run", "profile", "explain"])
def test_ctrl_c_exits_130(tmp_path, verb):
    # The terminal's Ctrl-C goes to the whole foreground process group: execmode and the
    # script. A group of its own stands for the terminal here.
    script = tmp_path / "sleepy.py"
    script.write_text(SLEEPY)
    proc = subprocess.Popen([sys.executable, "-m", "execmode", verb, str(script)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert proc.stdout.readline() == "started\n"
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert "130" in {row.code for row in exit_codes_for(verb)}
