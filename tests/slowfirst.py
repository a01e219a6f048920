"""slowfirst: a pytest plugin that starts the long tests first, for pytest-xdist.

`make test` runs each suite on several workers (most tests wait on servers, not on the CPU).
pytest-xdist hands the tests out in the collected order, so a search or a soak collected last
leaves one worker running it alone at the end. This plugin moves the tests marked ``slow``,
and those of a group one worker runs in turn (``xdist_group``: the Ray tests), to the front,
in their collected order, and declares the suite's markers.

Loaded by ``tests/conftest.py``; the taskqueue suite loads it with ``-p slowfirst``.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """pytest_configure declares the markers this plugin and the Makefile read."""
    config.addinivalue_line(
        "markers", "slow: a search or soak of tens of seconds; started first by make test"
    )
    config.addinivalue_line(
        "markers",
        "alone: loads or measures the machine's CPUs on purpose; make test runs it after the"
        " parallel part, by itself",
    )


def _short(item: pytest.Item) -> bool:
    return not (item.get_closest_marker("slow") or item.get_closest_marker("xdist_group"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """pytest_collection_modifyitems puts the slow and grouped tests first (a stable sort)."""
    items.sort(key=_short)
