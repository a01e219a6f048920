"""checks: conditions on a response, used as a request's ``checks=[...]`` (a failed check
fails that request, with a reason counted under its name), as a poll's ``until=``, and as
conditions of ``u.when``/``u.until``/``u.stop_iteration`` (judged on the last response).

    status(200, 202)                      status in a set
    json_eq("$.status", "SUCCEEDED")      a JSON value equals one value
    json_in("$.status", ["A", "B"])       ... is one of a set
    json_not_in("$.status", ["FAILED"])   ... is none of a set
    contains("Thanks")                    the body contains a text
    latency_under("500ms")                the response took less than a bound
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redline.runs.options import parse_duration
from redline.scenario.condition import Condition
from redline.scenario.jsonpath import parse_path


@dataclass(frozen=True, eq=False)
class Check(Condition):
    """Check is one condition on a response, as the plan carries it (see docs/scenarios.md).
    It is a :class:`~redline.scenario.condition.Condition` too: in ``u.when(...)`` it judges
    the response the VU received last."""

    spec: dict[str, Any]

    def plan(self) -> dict[str, Any]:
        """plan: the check as a condition on the last response."""
        return {"cond": "check", "check": dict(self.spec)}


def status(*codes: int) -> Check:
    """status: the response status is one of ``codes``."""
    if not codes or not all(isinstance(c, int) and 100 <= c <= 999 for c in codes):
        raise ValueError(f"status(...) takes HTTP status codes, got {codes!r}")
    return Check({"check": "status", "in": list(codes)})


def _json(op: str, path: str, values: list[Any]) -> Check:
    return Check(
        {"check": "json", "path": parse_path(path), "op": op, "values": values, "text": path}
    )


def json_eq(path: str, value: Any) -> Check:
    """json_eq: the JSON value at ``path`` equals ``value``."""
    return _json("in", path, [value])


def json_in(path: str, values: list[Any]) -> Check:
    """json_in: the JSON value at ``path`` is one of ``values``."""
    return _json("in", path, list(values))


def json_not_in(path: str, values: list[Any]) -> Check:
    """json_not_in: the JSON value at ``path`` is none of ``values`` (a missing value fails)."""
    return _json("not_in", path, list(values))


def contains(text: str) -> Check:
    """contains: the response body contains ``text``."""
    if not isinstance(text, str) or not text:
        raise ValueError("contains(...) takes a non-empty text")
    return Check({"check": "contains", "text": text})


def latency_under(bound: str | float) -> Check:
    """latency_under: the response took less than ``bound`` (``"500ms"``, or seconds)."""
    seconds = parse_duration(bound, "latency_under")
    if seconds <= 0:
        raise ValueError(f"latency_under: the bound must be > 0, got {bound!r}")
    return Check({"check": "latency", "max_ms": seconds * 1e3})
