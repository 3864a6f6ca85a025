"""Importing execmode (or its CLI) pulls in neither the profilers, Textual nor CuPy."""

from __future__ import annotations

from profiler_fixtures import run_python


def test_core_import_stays_light():
    code = ("import sys, execmode, execmode.cli\n"
            "print(sorted(m for m in sys.modules if m.startswith('execmode.profilers')"
            " or m.split('.')[0] in ('textual', 'cupy', 'sqlite3')))")
    result = run_python("-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_profilers_do_not_import_textual():
    code = ("import sys, execmode.profilers.recorder, execmode.profilers.exporters.html, "
            "execmode.profilers.cli, execmode.profilers.api\n"
            "print([m for m in sys.modules if m.split('.')[0] in ('textual', 'cupy')])")
    result = run_python("-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
