"""``python -m execmode.tui tui SCRIPT`` or ``python -m execmode.tui open SESSION``."""

import sys

from execmode.tui.cli import main

sys.exit(main())
