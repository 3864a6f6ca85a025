"""``python -m execmode ...`` runs the command line, like the ``execmode`` script."""

import sys

from execmode.cli import main

if __name__ == "__main__":  # imported (a docs build inspecting the package): no run
    sys.exit(main())
