"""One screen per view (each an app mode), plus the dialogs."""

from __future__ import annotations

from execmode.tui.screens.breakpoints import BreakpointsScreen
from execmode.tui.screens.breaks import BreaksScreen
from execmode.tui.screens.graph import GraphScreen
from execmode.tui.screens.kernels import KernelsScreen
from execmode.tui.screens.ops import OpsScreen
from execmode.tui.screens.output import OutputScreen
from execmode.tui.screens.passes import PassesScreen
from execmode.tui.screens.profile import ProfileScreen
from execmode.tui.screens.tensor import TensorScreen

SCREENS = {
    "ops": OpsScreen,
    "tensor": TensorScreen,
    "graph": GraphScreen,
    "breaks": BreaksScreen,
    "passes": PassesScreen,
    "kernels": KernelsScreen,
    "profile": ProfileScreen,
    "breakpoints": BreakpointsScreen,
    "output": OutputScreen,
}
