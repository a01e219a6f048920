"""The exceptions redline raises.

Every error a user can cause (bad options, a target that cannot be reached) is a subclass of
:class:`RedlineError` whose message is one readable line; the CLI prints it and exits 2. The
types are defined by the native layer so that the engine and Python raise the same ones.
"""

from __future__ import annotations

from redline._engine import ConfigError, RedlineError, UnreachableError

__all__ = ["RedlineError", "ConfigError", "UnreachableError"]
