"""The CLI's start-up stays light: `redline run` must not import the numerics (numpy, scipy)
that only `find` and `report` need; they cost ~90 MB of RSS and over a second at start."""

from __future__ import annotations

import subprocess
import sys


def test_cli_import_leaves_numerics_unloaded() -> None:
    code = (
        "import sys, redline.cli\n"
        "redline.cli.build_parser()\n"
        "heavy = sorted(m for m in ('numpy', 'scipy', 'kneed') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "", f"redline.cli imports {out.stdout.strip()} at start-up"
