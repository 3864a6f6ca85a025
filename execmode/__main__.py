"""``python -m execmode ...`` runs the command line, like the ``execmode`` script."""

import sys

from execmode.cli import main

sys.exit(main())
