"""output writes a finished document where the user asked for it: a file, or stdout for
``"-"`` (the convention of ``--json -``). Every typed result's ``write_json`` goes through
here, so the "-" rule lives in one place."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """write_text writes ``text`` and a newline to ``path``, or to stdout (flushed) when
    ``path`` is ``"-"``."""
    if str(path) == "-":
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
        return
    Path(path).write_text(text + "\n")
