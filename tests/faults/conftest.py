"""Fault tests: real child processes, real compilers, real SQLite files, real signals.

Each test provokes one thing that goes wrong in real use (a planted library, a killed
controller, a damaged session, a hostile breakpoint condition) and checks that execmode
refuses, recovers or reports it clearly. This folder goes on sys.path for fault_helpers.
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
