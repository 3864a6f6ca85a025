"""Packaging guards: every package folder ships in the wheel, and imports use installed names.

tui/ and profilers/ sit at the top of the repository but install as execmode.tui and
execmode.profilers. A folder left out of pyproject's package list is silently missing from
the wheel, and ``import tui`` works in a checkout but not once installed.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parent.parent
INSTALLED_AS = {"execmode": "execmode", "tui": "execmode.tui", "profilers": "execmode.profilers"}


def _pyproject() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def _package_folders() -> set:
    names = set()
    for top, dotted in INSTALLED_AS.items():
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top)
            if "__pycache__" in rel.parts:
                continue
            names.add(".".join((dotted,) + rel.parts))
    return names


def test_every_package_folder_is_listed():
    listed = set(_pyproject()["tool"]["setuptools"]["packages"])
    found = _package_folders()
    assert "execmode.ops" in found and "execmode.tui" in found  # the walk sees the tree
    missing = sorted(found - listed)
    assert not missing, f"add these to [tool.setuptools] packages in pyproject.toml: {missing}"
    stale = sorted(listed - found)
    assert not stale, f"listed packages without an __init__.py: {stale}"


def test_tui_and_profilers_are_mapped_to_their_folders():
    package_dir = _pyproject()["tool"]["setuptools"]["package-dir"]
    assert package_dir["execmode.tui"] == "tui"
    assert package_dir["execmode.profilers"] == "profilers"


def test_every_c_file_ships_as_package_data():
    """The C extensions compile on first use from the installed sources: a .c or .h file no
    package-data pattern matches is missing from the wheel, and its extension cannot build."""
    data = _pyproject()["tool"]["setuptools"]["package-data"]
    missing = []
    for top, dotted in INSTALLED_AS.items():
        for path in (ROOT / top).rglob("*.[ch]"):
            folder = path.parent
            while not (folder / "__init__.py").exists():
                folder = folder.parent
            rel = folder.relative_to(ROOT / top)
            package = ".".join((dotted,) + rel.parts)
            name = path.relative_to(folder).as_posix()
            if not any(fnmatch.fnmatch(name, p) for p in data.get(package, [])):
                missing.append(f"{package}: {name}")
    assert not missing, f"C sources no package-data pattern ships: {missing}"


def _ruff():
    exe = shutil.which("ruff")
    if exe:
        return [exe]
    try:
        import ruff  # noqa: F401 - only to learn whether the module is there
    except ImportError:
        return None
    return [sys.executable, "-m", "ruff"]


def test_ruff_bans_importing_tui_and_profilers_by_their_folder_names(tmp_path):
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[dev]' installs it)")
    source = tmp_path / "uses_folders.py"
    source.write_text(
        "import tui\n"
        "import profilers.exporters\n"
        "from tui import app\n"
        "import execmode.tui\n"
        "from execmode.profilers import exporters\n"
        "print(tui, profilers, app, execmode, exporters)\n"
    )
    done = subprocess.run(
        ruff + ["check", "--no-cache", "--config", str(ROOT / "pyproject.toml"),
                "--select", "TID251", "--output-format", "concise", str(source)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
    )
    flagged = sorted({int(line.split(":")[1]) for line in done.stdout.splitlines()
                      if "TID251" in line})
    assert flagged == [1, 2, 3], done.stdout + done.stderr
