"""slowfirst: a pytest plugin that starts the long tests first, for pytest-xdist.

`make test` runs each suite on several workers (most tests wait on servers, not on the CPU).
pytest-xdist hands the tests out in the collected order, so a search or a soak collected last
leaves one worker running it alone at the end. This plugin moves the tests marked ``slow`` to
the front, in their collected order, and declares the suite's markers. (No ``xdist_group``:
pytest-xdist 3.8's ``--dist loadgroup`` does not group under pytest 9, whose node ids it can
no longer rewrite; what must not share the machine is marked ``alone`` instead.)

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """pytest_collection_modifyitems puts the slow tests first (a stable sort)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
