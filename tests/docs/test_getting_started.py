"""Every code block of docs/getting-started.md runs, in a fresh folder, as a reader would
run it: a python block that starts with ``# NAME.py`` is saved as that file; the other
python blocks run in order as one script (a reader's one Python session); each line of a
sh block runs as a command. Setup lines (``pip install``, ``python -m venv``) are skipped:
the suite runs in an installed environment. ``execmode tui`` and ``execmode open`` need a
terminal, so their lines are parsed (and their files checked), not run. A comment naming
``exit N`` is the status the line must end with (else 0), and each "quoted" text in a
comment must appear in the line's output."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from execmode.cli import build_parser

# Slow tier: the getting-started page runs whole.
pytestmark = pytest.mark.slow

PAGE = Path(__file__).resolve().parents[2] / "docs" / "getting-started.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
SETUP = ("pip install", "python -m venv")
NEEDS_A_TERMINAL = ("tui", "open")


def blocks() -> list[tuple[str, str]]:
    return BLOCK.findall(PAGE.read_text())


def shell_lines() -> list[str]:
    return [line for lang, body in blocks() if lang == "sh"
            for line in body.splitlines() if line.strip()]


def split_comment(line: str) -> tuple[str, str]:
    command, _, comment = line.partition("  #")
    return command.strip(), comment


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The reader's folder: the page's files saved, then every sh line run in order."""
    where = tmp_path_factory.mktemp("reader")
    for lang, body in blocks():
        name = body.splitlines()[0].removeprefix("# ").strip() if lang == "python" else ""
        if name.endswith(".py") and " " not in name:
            (where / name).write_text(body)
    return where


def _env(folder: Path) -> dict:
    return dict(os.environ, EXECMODE_SESSION_DIR=str(folder / "sessions"))


def test_the_page_has_the_steps_in_learning_order():
    headings = [h.lower() for h in re.findall(r"^## (.*)$", PAGE.read_text(), re.M)]
    order = ["install", "eager", "jit", "graph break", "tui", "profile", "export"]
    found = [next(i for i, h in enumerate(headings) if word in h) for word in order]
    assert found == sorted(found), headings


def test_the_python_blocks_run(folder):
    session = [body for lang, body in blocks()
               if lang == "python" and not body.startswith("# ")]
    script = folder / "reader_session.py"
    script.write_text("\n\n".join(session))
    done = subprocess.run([sys.executable, str(script)], cwd=folder, env=_env(folder),
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "graph breaks: 1" in done.stdout  # the explained break


def test_the_shell_lines_run_in_order(folder):
    parser = build_parser()
    ran = 0
    for line in shell_lines():
        command, comment = split_comment(line)
        if any(step in command for step in SETUP):
            continue
        words = shlex.split(command)
        if words[0] == "execmode" and words[1] in NEEDS_A_TERMINAL:
            opts = parser.parse_args(words[1:])  # the options are real...
            for word in words[2:]:  # ...and so are the files it names
                if word.endswith((".py", ".emsession")):
                    assert (folder / word).is_file(), (line, word)
            continue
        argv = [sys.executable, "-m", "execmode", *words[1:]] if words[0] == "execmode" else \
            [sys.executable, *words[1:]] if words[0] == "python" else words
        done = subprocess.run(argv, cwd=folder, env=_env(folder), capture_output=True,
                              text=True, timeout=240)
        status = re.search(r"\bexit (\d+)", comment)
        assert done.returncode == (int(status.group(1)) if status else 0), (
            line, done.stdout[-2000:], done.stderr[-2000:])
        for text in re.findall(r'"([^"]+)"', comment):
            assert text in done.stdout + done.stderr, (line, text, done.stdout[-3000:])
        ran += 1
    assert ran >= 8
    for name in ("train.html", "train.trace.json", "train.speedscope.json", "train.md"):
        assert (folder / name).stat().st_size > 0, name
    assert opts.session == "train.emsession"  # the last line that needs a terminal
