"""divergence: the refusal of a value Python computed at compile time from a run-time value.

The compiler traces a scenario three times (:data:`TRACES`): the markers of run-time values
are spelt differently in the first two traces, alike in the first and third. Where the plans
agree, every run-time value reached its request as a template; where the first two differ,
Python computed something from a marker's text (``base64``, ``hashlib``, ``len()``), a
constant that the run would send on every request; where the first and third differ, it was
computed from random numbers or the clock at compile time, one constant for the whole run.
Either is one :class:`ScenarioError` naming the step's line and the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from redline.scenario.user import ScenarioError

#: SALT_A, SALT_B: the salts of the traces: different lengths, letters and cases. Both
#: hold a space and the punctuation of URLs and credentials, so that
#: string code which would change them at run time (``.replace(" ", "+")``, ``.split(":")``,
#: ``.title()``) changes or cuts the marker at compile time, and is refused.
SALT_A, SALT_B = "a Z-_/.:,=&+0", "Qy 7-_/.:,=&+" + "7" * 30 + "w"
#: TRACES: each trace's salt and the mark its reprs end with.
TRACES = ((SALT_A, ""), (SALT_B, "'"), (SALT_A, ""))

#: HINT: what computes a value per request instead.
HINT = (
    "u.b64encode(...), u.hmac_sha256(key, ...), u.sha256(...), u.length(...) and the other "
    "functions on u, which the engine computes per request (docs/scenarios.md, Functions)"
)
#: RANDOM_HINT: what draws a value per request instead.
RANDOM_HINT = (
    "u.uuid4(), u.random_int(low, high), u.random_string(n), u.now() or u.choice([...]), "
    "drawn by the engine when the flow reaches them (docs/scenarios.md, Functions)"
)

_MARKER = re.compile("\x1e([^\x1d\x1e\x1f]+)")


@dataclass
class Divergence:
    """Divergence is the first place two plans differ: the line of the innermost step (or
    flow) around it, that step, the keys from the step down, and the two values."""

    line: int | None
    step: dict[str, Any] | None
    keys: tuple[Any, ...]
    a: Any
    b: Any


def first(
    a: Any,
    b: Any,
    line: int | None = None,
    step: dict[str, Any] | None = None,
    keys: tuple[Any, ...] = (),
) -> Divergence | None:
    """first: where plans ``a`` and ``b`` first differ, or None where they are equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        if isinstance(a.get("line"), int):
            line = a["line"]
        if "step" in a:
            step, keys = a, ()
        if a.keys() != b.keys():
            return Divergence(line, step, keys, a, b)
        # The name last: a default name repeats the path, the field to report.
        for k in sorted(a, key=lambda k: k == "name"):
            d = first(a[k], b[k], line, step, (*keys, k))
            if d is not None:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            d = first(x, y, line, step, (*keys, i))
            if d is not None:
                return d
        return None
    if type(a) is type(b) and a == b:
        return None
    return Divergence(line, step, keys, a, b)


def field(step: dict[str, Any] | None, keys: tuple[Any, ...]) -> str:
    """field: what part of a step ``keys`` lead to, as a person names it."""
    if step is None:
        return "the steps of this flow"
    head = keys[0] if keys else None
    if head == "path":
        return "the path"
    if head in ("query", "headers") and len(keys) >= 2:
        kind = "query parameter" if head == "query" else "header"
        if len(keys) >= 3 and keys[2] == 0:
            return f"a {kind}'s name"
        return f"{kind} {step[head][keys[1]][0]!r}"
    if head == "body":
        body = step.get("body")
        shape = body.get("type") if isinstance(body, dict) else None
        if shape == "form" and len(keys) >= 3:
            return f"form field {body['fields'][keys[2]][0]!r}"  # type: ignore[index]
        return "the JSON body" if shape == "json" else "the body"
    named = {
        "name": "the request's name",
        "checks": "a check",
        "until": "a poll's condition",
        "extract": "an extraction",
        "choice": "the options of u.choice",
    }
    if head in named:
        return named[head]
    return f"the step's {head}" if head is not None else "this step"


def _marker_in(value: Any) -> str | None:
    """_marker_in: the name of a run-time value whose marker sits in ``value``, if any."""
    if isinstance(value, str):
        m = _MARKER.search(value)
        return m.group(1) if m else None
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        for v in value:
            found = _marker_in(v)
            if found is not None:
                return found
    return None


def refuse(plans: list[dict[str, Any]], path: str) -> None:
    """refuse raises a ScenarioError where the traces' plans (one per salt of
    :data:`TRACES`) differ."""
    a, b, c = plans
    again = first(a, c)
    d = first(a, b)
    if d is None and again is None:
        return
    if d is not None:
        name = _marker_in(d.a)
        where = field(d.step, d.keys)
        if name is not None:
            raise ScenarioError(
                f"{where} cannot hold the run-time value {name!r}: it is fixed when the "
                "scenario compiles (values known only during the run go in a path, a query, "
                "a header's value or a body)",
                path,
                d.line,
            )
        random = again is not None and (again.line, again.keys) == (d.line, d.keys)
        if not random:
            raise ScenarioError(
                f"{where} is computed by Python from a run-time value (base64, hashlib, len(), "
                ".encode(), ...): it would be computed once, at compile time, over a "
                f"placeholder, and the same constant sent on every request; use {HINT}",
                path,
                d.line,
            )
    if again is not None:
        raise ScenarioError(
            f"{field(again.step, again.keys)} differs from one compilation to the next (random "
            "numbers or the clock read by the flow at compile time): it would be one constant "
            f"for the whole run; use {RANDOM_HINT}",
            path,
            again.line,
        )
