"""TUI tests: tests/tui on the path (for tui_support), sessions kept in tmp folders."""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
