"""Tests for redline.cluster.connection without a Ray: an injector that dies while it is
placed is one line (a ClusterError, exit 2 on the CLI), not Ray's traceback."""

from __future__ import annotations

from typing import Any

import pytest
from redline.cluster.connection import _place
from redline.errors import ClusterError


class _Call:
    def __init__(self, ref: str) -> None:
        self.ref = ref

    def remote(self) -> str:
        return self.ref


class _Actor:
    def __init__(self, i: int) -> None:
        self.facts = _Call(f"facts{i}")


class _ActorClass:
    def __init__(self) -> None:
        self.made: list[_Actor] = []

    def options(self, **_: Any) -> _ActorClass:
        return self

    def remote(self) -> _Actor:
        self.made.append(_Actor(len(self.made)))
        return self.made[-1]


class _DiedRay:
    """_DiedRay: a Ray in which every injector dies before its first call (as one whose
    owner went away does: 'The actor died unexpectedly before finishing this task.')."""

    def __init__(self) -> None:
        self.actors = _ActorClass()
        self.killed: list[_Actor] = []

    def remote(self, **_: Any) -> Any:
        return lambda cls: self.actors

    def wait(self, refs: list[str], num_returns: int, timeout: float) -> tuple[list, list]:
        return list(refs), []

    def get(self, refs: Any) -> Any:
        raise RuntimeError(
            "The actor died unexpectedly before finishing this task.\n\tclass_name: Injector"
        )

    def kill(self, actor: _Actor) -> None:
        self.killed.append(actor)
        raise ValueError("already dead")


def test_an_injector_that_dies_placed_is_one_line_and_the_others_are_ended() -> None:
    ray = _DiedRay()
    with pytest.raises(ClusterError) as e:
        _place(ray, 2)
    assert str(e.value) == (
        "an injector failed to start: The actor died unexpectedly before finishing this task."
    )
    assert ray.killed == ray.actors.made and len(ray.killed) == 2
