"""mkdocs hook: the API reference reads execmode's sources as one package tree.

execmode installs ``profilers/`` and ``tui/`` as ``execmode.profilers`` and
``execmode.tui`` (pyproject's package-dir), but griffe, which mkdocstrings uses to read the
code without importing it, finds submodules by walking the package's folder, where those
two are not. This hook builds ``build/api-src/execmode``: links to every entry of
``execmode/`` plus ``profilers`` and ``tui``, the tree as installed. mkdocs.yml points the
handler's ``paths`` there.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGE = ROOT / "build" / "api-src"


def stage() -> Path:
    package = STAGE / "execmode"
    shutil.rmtree(STAGE, ignore_errors=True)
    package.mkdir(parents=True)
    for entry in (ROOT / "execmode").iterdir():
        if entry.name != "__pycache__":
            os.symlink(entry, package / entry.name)
    for name in ("profilers", "tui"):
        os.symlink(ROOT / name, package / name)
    return STAGE


def on_startup(command, dirty) -> None:  # mkdocs' first event, before any page is read
    stage()
