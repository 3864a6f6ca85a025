"""Debugger tests run real child processes: scripts live in tests/debug/scripts/."""

from __future__ import annotations

import os

import pytest

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")


def script(name: str) -> str:
    return os.path.join(SCRIPTS, name)


@pytest.fixture
def scripts():
    return script
