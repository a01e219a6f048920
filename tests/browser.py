"""browser: the one way a test opens a page in headless Chromium (Debian's package, driven by
Playwright), for the report, the compare page and the live view; ``open_in_chromium`` opens a
report offline and says what its charts drew.

Without Chromium or Playwright a test skips on a developer's machine and fails under
``CI=true``: a green CI must mean every page was seen in a browser (``.ci/run`` installs
Chromium). Screenshots go to ``$REDLINE_ARTIFACTS``, else a temporary directory.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
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


@contextlib.contextmanager
def chromium_page(errors: list[str], allowed: str) -> Iterator[Any]:
    """chromium_page is a page in headless Chromium (1280 x 900) that records in ``errors``
    its console errors, its page errors and every request whose URL does not match the
    regular expression ``allowed`` (refused: the pages work offline)."""
    sync_api = playwright_api()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.route(
                re.compile(f"^(?!{allowed}).*"),
                lambda route: (errors.append(route.request.url), route.abort()),
            )
            yield page
        finally:
            browser.close()


def open_in_chromium(page_html: str, name: str) -> dict[str, Any]:
    """open_in_chromium loads the page offline in headless Chromium and returns console
    errors, what each chart's canvas holds, and the answers' text; it keeps a screenshot."""
    path = artifacts() / f"{name}.html"
    path.write_text(page_html)
    errors: list[str] = []
    # Offline: any request for something outside the file fails the test.
    with chromium_page(errors, "file:") as page:
        page.goto(path.as_uri(), wait_until="load")
        page.wait_for_function("window.redlineCharts !== undefined", timeout=10_000)
        charts = page.evaluate(
            """() => Array.from(document.querySelectorAll('figure.chart')).map(f => {
                const c = f.querySelector('canvas');
                let inked = 0;
                if (c && c.width && c.height) {
                    const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                    for (let i = 3; i < px.length; i += 4) if (px[i] > 0) inked++;
                }
                const state = window.redlineCharts.find(s => s.id === f.dataset.chart);
                return {id: f.dataset.chart, width: c ? c.width : 0, height: c ? c.height : 0,
                        inked, draws: state ? state.draws : 0};
            })"""
        )
        answers = page.inner_text("#answers")
        page.screenshot(path=str(artifacts() / f"{name}.png"), full_page=True)
    return {"errors": errors, "charts": charts, "answers": answers}


def assert_drawn(seen: dict[str, Any], ids: set[str]) -> None:
    """assert_drawn: what open_in_chromium saw has no errors and draws each of the charts IDS,
    each inked."""
    assert seen["errors"] == []
    assert {c["id"] for c in seen["charts"]} == ids
    for c in seen["charts"]:
        assert c["width"] > 100 and c["height"] > 100, c
        assert c["draws"] >= 1, c
        # Axes and grid alone ink a few thousand pixels; series add more. Require a share
        # of the canvas, not an exact count (fonts differ between machines).
        assert c["inked"] > 0.01 * c["width"] * c["height"], c
