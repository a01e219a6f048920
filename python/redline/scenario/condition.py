"""condition: tests a flow decides during the run, per VU, for ``with u.when(...)``,
``with u.until(...)`` and ``u.stop_iteration(...)``.

A condition is data, as the plan carries it (docs/scenarios.md, "Conditions"): comparing a
run-time value gives one (``r.json("$.status") == "FAILED"``, ``u.iteration < 3``,
``tid.is_in(["A", "B"])``, ``tid.matches(r"^t-")``), every check is one (``json_eq(...)``,
``status(200)``: judged on the response the VU received last), and ``&``, ``|``, ``~`` (or
:func:`all_of`, :func:`any_of`, :func:`not_`) combine them. Python's ``if``, ``and``, ``or``
and ``not`` would decide once, at compile time, on a value that does not exist yet: they are
refused with a message that says what to write instead.
"""

from __future__ import annotations

import re
from typing import Any

#: OPS: the comparisons a condition may make.
OPS = ("==", "!=", "<", "<=", ">", ">=")

#: _SCALARS: the constants a value may be compared with.
_SCALARS = (str, int, float, bool, type(None))

_REFUSED = (
    "a condition is decided during the run, per VU: write `with u.when(condition):` "
    "(or u.until, u.stop_iteration) instead of `if`, and combine conditions with & | ~ "
    "(or all_of, any_of, not_), not with and/or/not"
)


class Condition:
    """Condition is a test decided during the run (see the module's doc). Its :meth:`plan`
    is what the plan carries."""

    def plan(self) -> dict[str, Any]:
        """plan: the condition as the plan carries it."""
        raise NotImplementedError

    def __and__(self, other: object) -> Condition:
        return all_of(self, other)

    def __rand__(self, other: object) -> Condition:
        return all_of(other, self)

    def __or__(self, other: object) -> Condition:
        return any_of(self, other)

    def __ror__(self, other: object) -> Condition:
        return any_of(other, self)

    def __invert__(self) -> Condition:
        return not_(self)

    def __bool__(self) -> bool:
        raise TypeError(_REFUSED)


class Plain(Condition):
    """Plain is a condition made here: a comparison, a set, a match, or a combination."""

    __slots__ = ("_spec",)

    def __init__(self, spec: dict[str, Any]) -> None:
        self._spec = spec

    def plan(self) -> dict[str, Any]:
        """plan: the condition as the plan carries it."""
        return self._spec

    def __repr__(self) -> str:
        return f"Condition({self._spec!r})"


def as_condition(value: object) -> Condition:
    """as_condition: ``value`` if it is a condition, else a TypeError saying what is."""
    if isinstance(value, Condition):
        return value
    raise TypeError(
        f"expected a condition (a comparison such as r.json('$.status') == 'FAILED', a check "
        f"such as json_eq(...), or & | ~ of them), got {value!r}"
    )


def all_of(*conds: object) -> Condition:
    """all_of: every condition holds (``a & b``)."""
    return Plain({"cond": "all", "of": [as_condition(c).plan() for c in conds]})


def any_of(*conds: object) -> Condition:
    """any_of: at least one condition holds (``a | b``)."""
    return Plain({"cond": "any", "of": [as_condition(c).plan() for c in conds]})


def not_(cond: object) -> Condition:
    """not_: the condition does not hold (``~a``)."""
    return Plain({"cond": "not", "of": as_condition(cond).plan()})


def constant(value: object) -> dict[str, Any]:
    """constant: the operand of a constant (a string, number, boolean or None)."""
    if not isinstance(value, _SCALARS):
        raise TypeError(
            f"a run-time value is compared with a string, a number, a boolean, None or "
            f"another run-time value, not {type(value).__name__}"
        )
    return {"value": value}


def compare(left: dict[str, Any], op: str, right: dict[str, Any]) -> Condition:
    """compare: ``left op right`` on operands (``{"var": NAME}`` or ``{"value": V}``);
    numbers where both sides are numbers, else text."""
    if op not in OPS:
        raise ValueError(f"unknown comparison {op!r}")
    return Plain({"cond": "cmp", "left": left, "op": op, "right": right})


def one_of(left: dict[str, Any], values: object, negate: bool) -> Condition:
    """one_of: ``left`` equals one of ``values`` (``negate``: none of them)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"is_in/not_in take a list of constants, got {values!r}")
    items = [constant(v)["value"] for v in values]
    return Plain({"cond": "in", "left": left, "values": items, "negate": negate})


def match(var: str, pattern: str) -> Condition:
    """match: variable ``var``'s value matches the regular expression ``pattern``."""
    try:
        re.compile(pattern)
    except (re.error, TypeError) as e:
        raise ValueError(f"bad regex {pattern!r}: {e}") from None
    return Plain({"cond": "match", "var": var, "pattern": pattern})


def variables(spec: dict[str, Any]) -> list[str]:
    """variables: the names of the variables a condition reads."""
    kind = spec["cond"]
    if kind == "cmp":
        return [o["var"] for o in (spec["left"], spec["right"]) if "var" in o]
    if kind == "in":
        return [spec["left"]["var"]] if "var" in spec["left"] else []
    if kind == "match":
        return [spec["var"]]
    if kind in ("all", "any"):
        return [n for c in spec["of"] for n in variables(c)]
    if kind == "not":
        return variables(spec["of"])
    return []


def judges_a_response(spec: dict[str, Any]) -> bool:
    """judges_a_response: the condition holds a check, judged on the last response."""
    kind = spec["cond"]
    if kind == "check":
        return True
    if kind in ("all", "any"):
        return any(judges_a_response(c) for c in spec["of"])
    if kind == "not":
        return judges_a_response(spec["of"])
    return False
