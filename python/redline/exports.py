"""exports: a package's public names, each imported from its module on first use.

``redline.compare``, ``redline.experiment`` and ``redline.live`` name their parts' public
items at the package level but load a part only when one of its names is used, so that the
CLI, which imports each package's ``command`` module for its parser, starts without numpy,
scipy or an HTTP server. Each package keeps a table of where its names live and a
module-level ``__getattr__`` that asks :func:`lazy_attribute` (one definition of the lookup
and of its error)::

    _HOME = {"compare": "comparison", "Figure": "figures"}

    def __getattr__(name: str) -> Any:
        return lazy_attribute(__name__, _HOME, name)
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def lazy_attribute(package: str, homes: Mapping[str, str], name: str) -> Any:
    """lazy_attribute is ``package``'s public ``name``, taken from the submodule ``homes``
    names for it (relative to the package) and imported now if it was not yet;
    AttributeError, as for any missing attribute, when ``homes`` does not list it."""
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{package}.{home}"), name)
