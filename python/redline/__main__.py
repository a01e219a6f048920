"""``python -m redline`` runs the CLI."""

import sys

from redline.cli import main

sys.exit(main())
