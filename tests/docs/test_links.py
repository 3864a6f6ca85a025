"""Every path the README and docs/ name in examples/ (examples/NAME.py) exists: a newcomer
copied `execmode profile examples/mlp.py` from docs/profiling.md and got 'no such script'."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_named_examples_exist(page):
    named = set(re.findall(r"\bexamples/[\w/]+\.py\b", page.read_text()))
    missing = sorted(name for name in named if not (ROOT / name).is_file())
    assert not missing, f"{page.name} names {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page):
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
        assert (page.parent / target).exists(), f"{page.name} links {target}"
