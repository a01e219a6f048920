"""browser: the one way a test opens a page in headless Chromium (Debian's package, driven by
Playwright), for the report, the compare page and the live view.

Without Chromium or Playwright a test skips on a developer's machine and fails under
``CI=true``: a green CI must mean every page was seen in a browser (``.ci/run`` installs
Chromium). Screenshots go to ``$REDLINE_ARTIFACTS``, else a temporary directory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

#: CHROMIUM: the browser's executable ($REDLINE_CHROMIUM, else chromium on PATH), or None.
CHROMIUM = (
    os.environ.get("REDLINE_CHROMIUM")
    or shutil.which("chromium")
    or shutil.which("chromium-browser")
)


def artifacts() -> Path:
    """artifacts is where screenshots go: $REDLINE_ARTIFACTS, else a temporary directory."""
    d = Path(
        os.environ.get("REDLINE_ARTIFACTS") or Path(tempfile.gettempdir()) / "redline-artifacts"
    )
    d.mkdir(parents=True, exist_ok=True)
    return d


def playwright_api() -> Any:
    """playwright_api is Playwright's sync API for a test that drives CHROMIUM (skipped without it
    on a developer's machine, failed under CI=true)."""
    if CHROMIUM is None:
        missing = "no Chromium on this machine (apt-get install chromium; or REDLINE_CHROMIUM)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{missing}; CI=true needs it")
        pytest.skip(missing)
    if os.environ.get("CI") == "true":
        import playwright.sync_api as api  # CI: missing playwright is a failure

        return api
    return pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
