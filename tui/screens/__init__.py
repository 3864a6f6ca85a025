"""One screen per view (each an app mode), plus the dialogs.

A view's module is not imported with the app: the launch shows the Ops view only, and the
others bring plotext, DataTable and their own widgets (about a tenth of the TUI's
imports, measured; docs/tui.md, "Measured"). A worker imports them once the first screen
is up (``import_views``), so that a view's first opening pays only for its compose.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from textual.screen import Screen

# view name -> (module in this package, screen class)
SCREEN_CLASSES = {
    "ops": ("ops", "OpsScreen"),
    "tensor": ("tensor", "TensorScreen"),
    "graph": ("graph", "GraphScreen"),
    "breaks": ("breaks", "BreaksScreen"),
    "passes": ("passes", "PassesScreen"),
    "kernels": ("kernels", "KernelsScreen"),
    "profile": ("profile", "ProfileScreen"),
    "breakpoints": ("breakpoints", "BreakpointsScreen"),
    "output": ("output", "OutputScreen"),
    "ranks": ("ranks", "RanksScreen"),
}


def screen_class(view: str) -> type[Screen]:
    """The screen class of ``view`` (its module is imported now if it was not yet)."""
    module, name = SCREEN_CLASSES[view]
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def import_views() -> None:
    """Import every view's module (the app's worker, after the launch)."""
    for module, _ in SCREEN_CLASSES.values():
        importlib.import_module(f"{__name__}.{module}")


def modes() -> dict[str, Callable[[], Screen]]:
    """The app's MODES: for each view, a callable that builds its screen when it opens."""
    return {view: (lambda view=view: screen_class(view)()) for view in SCREEN_CLASSES}
