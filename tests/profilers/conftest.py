"""Profiler tests: real SQLite files, real child processes, no mocks.

Tests import in importlib mode: this folder goes on sys.path so that its tests can
``import profiler_fixtures`` (the fixed session and the child-process helper).
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
