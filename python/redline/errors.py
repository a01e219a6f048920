"""The exceptions redline raises.

Every error a user can cause (bad options, a target that cannot be reached) is a subclass of
:class:`RedlineError` whose message is one readable line; the CLI prints it and exits 2. The
types are defined by the native layer so that the engine and Python raise the same ones.
"""

from __future__ import annotations

from typing import Any

from redline._engine import ConfigError, RedlineError, UnreachableError

__all__ = ["RedlineError", "ConfigError", "UnreachableError", "ClusterError", "InjectorLost"]


class ClusterError(RedlineError):
    """ClusterError: a distributed run could not start or go on (Ray missing, a bad cluster
    address, injectors of another redline version); one line, exit 2 on the CLI."""


class InjectorLost(RedlineError):
    """InjectorLost: an injector died or stopped reporting and the run was stopped
    (``on_injector_loss="fail"``); ``result`` is the partial result of what ran."""

    def __init__(self, message: str, result: Any = None):
        super().__init__(message)
        self.result = result
