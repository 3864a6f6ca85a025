"""``python -m execmode.tui tui SCRIPT`` or ``python -m execmode.tui open SESSION``."""

import sys

from execmode.tui.cli import main

if __name__ == "__main__":  # imported (a docs build inspecting the package): no run
    sys.exit(main())
