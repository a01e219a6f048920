"""The suite's own guards: a hung test is stopped."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).parent


def test_every_test_has_a_timeout(request: pytest.FixtureRequest) -> None:
    # pytest-timeout is loaded and pyproject.toml gives every test a default bound.
    assert request.config.pluginmanager.hasplugin("timeout")
    assert float(request.config.getini("timeout")) > 0
