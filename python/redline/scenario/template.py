"""template: symbolic values (:class:`Var`) and the templates they leave in strings.

A flow function runs once, at compile time, on symbolic values, like a tracer: a value
extracted from a response is a :class:`Var` whose ``str()`` is a marker. f-strings, ``%`` and
``+`` carry the marker into paths, headers and bodies; :func:`parts` splits a string back into
literal text and variable references, which is what the plan carries (a *template*: a list
whose items are literal strings or ``{"var": NAME}``). The engine fills the references in per
request, escaping each for where it lands (path, query, header, JSON string, form field).

Ordinary Python run over a marker (``base64``, ``hashlib``, ``len``, ``.upper()``, slicing)
would compute a constant once, over the marker's text, and send it on every request. Each
marker therefore carries the trace's *salt* (:func:`tracing`): the compiler traces a scenario
with salts of different lengths and letters and requires the same plan from each, and
:func:`parts` refuses a marker whose salt was changed or a marker cut apart. A value the
engine computes per request (``u.b64encode(...)``) is a Var named ``@N`` that stands for a
function part, ``{"fn": NAME, "args": [TEMPLATE, ...]}``, registered in the trace.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from redline.scenario.condition import Condition, compare, constant, match, one_of

#: The marker delimiters: ASCII record, group and unit separators, which no sane URL, header
#: or body text contains, so a marker cannot be confused with user text.
_OPEN, _SALT, _CLOSE = "\x1e", "\x1d", "\x1f"
_MARKER = re.compile("\x1e([^\x1d\x1e\x1f]+)\x1d([^\x1d\x1e\x1f]*)\x1f")
_STRAY = re.compile("[\x1d\x1e\x1f]")

#: Template: what the plan carries for a templated string.
Template = list[Any]

#: _HINTS: what to use instead of a Python operation on a run-time value.
_HINTS: dict[str, str] = {
    "upper": "u.upper(value)",
    "lower": "u.lower(value)",
    "encode": "u.b64encode(value), u.sha256(value), u.hmac_sha256(key, value), which take "
    "text as UTF-8",
    "decode": "u.b64decode(value)",
    "len": "u.length(value)",
    "format": "u.pad(value, width)",
    "zfill": "u.pad(value, width)",
    "rjust": "u.pad(value, width, fill)",
    "startswith": "a check on the response that gave it (contains(...), json_eq(...))",
    "endswith": "a check on the response that gave it (contains(...), json_eq(...))",
    "split": "resp.regex(...) or resp.json(...) to extract the part wanted",
    "int": "the value as text, or u.random_int(low, high) for a number drawn per request",
}
#: _DOCS: where the ways of using a run-time value are told.
_DOCS = "docs/scenarios.md, Functions"


class ValueUseError(Exception):
    """ValueUseError: Python code used a run-time value where it would compute, once at
    compile time, a constant that the run would then send on every request."""


class _ValueAttributeError(ValueUseError, AttributeError):
    pass


class _ValueTypeError(ValueUseError, TypeError):
    pass


class _TemplateError(ValueUseError, ValueError):
    pass


@dataclass
class Trace:
    """Trace is one tracing pass: the salt its markers carry, and the function parts its
    ``@N`` values stand for."""

    salt: str
    #: mark: what a Var's repr ends with in this trace ("" in the first, whose messages a
    #: user reads), so that a repr sent in a request differs between traces.
    mark: str = ""
    fns: dict[str, dict[str, Any]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)

    def register(self, fn: dict[str, Any], label: str) -> str:
        """register keeps a function part (``label``: its name on ``u``) and returns the
        name of the Var standing for it (numbered in call order, so that every trace of a
        scenario names it alike)."""
        name = f"@{len(self.fns) + 1}"
        self.fns[name] = fn
        self.labels[name] = label
        return name


#: _OUTSIDE: the trace of markers made outside a compilation (tests, the REPL).
_OUTSIDE = Trace("aZ")
_current: ContextVar[Trace | None] = ContextVar("redline_trace", default=None)


@contextmanager
def tracing(salt: str, mark: str = "") -> Iterator[Trace]:
    """tracing: markers made inside the block carry ``salt``, reprs end with ``mark``."""
    trace = Trace(salt, mark)
    token = _current.set(trace)
    try:
        yield trace
    finally:
        _current.reset(token)


def current() -> Trace:
    """current: the trace under way."""
    return _current.get() or _OUTSIDE


def describe(name: str) -> str:
    """describe: a variable's name as a person knows it."""
    if name.startswith("@"):
        label = current().labels.get(name)
        return f"u.{label}(...)" if label else "a function's value"
    return repr(name)


def _refuse(name: str, what: str, hint: str | None) -> str:
    use = f"; use {hint}" if hint else ""
    return (
        f"{describe(name)} is known only during the run: {what} would be computed once, "
        f"at compile time, over a placeholder, and sent on every request{use} ({_DOCS})"
    )


class Var:
    """Var is a symbolic value known only during a run (an extracted value, a run variable, a
    data-file column, a random choice, a function the engine computes per request). Use it in
    f-strings, dicts and lists, and in the ``u.`` functions. Comparing it (``==``, ``<``,
    :meth:`is_in`, :meth:`matches`) gives a condition for ``u.when`` and ``u.until``;
    branching on it with ``if`` or computing with it in Python at compile time is impossible
    and raises."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"{_OPEN}{self.name}{_SALT}{current().salt}{_CLOSE}"

    def __format__(self, spec: str) -> str:
        if spec:
            raise _ValueTypeError(
                _refuse(self.name, f"the format spec {':' + spec!r}", _HINTS.get("format"))
            )
        return str(self)

    def __repr__(self) -> str:
        # The trace's mark at its end: a repr sent in a request (f"{v!r}") differs between
        # traces and is refused as a constant, not sent as the text "Var(...)".
        return f"Var({self.name!r}){current().mark}"

    def __add__(self, other: object) -> str:
        return str(self) + str(other)

    def __radd__(self, other: object) -> str:
        return str(other) + str(self)

    def __bool__(self) -> bool:
        raise TypeError(
            f"the value of {describe(self.name)} is known only during the run: a flow cannot "
            "branch on it with `if`; write `with u.when(value == ...):` (a condition decided "
            "per VU)"
        )

    # Comparisons are conditions decided during the run (redline.scenario.condition).
    def __eq__(self, other: object) -> Condition:  # type: ignore[override]
        return compare(_side(self), "==", _operand(other))

    def __ne__(self, other: object) -> Condition:  # type: ignore[override]
        return compare(_side(self), "!=", _operand(other))

    def __lt__(self, other: object) -> Condition:
        return compare(_side(self), "<", _operand(other))

    def __le__(self, other: object) -> Condition:
        return compare(_side(self), "<=", _operand(other))

    def __gt__(self, other: object) -> Condition:
        return compare(_side(self), ">", _operand(other))

    def __ge__(self, other: object) -> Condition:
        return compare(_side(self), ">=", _operand(other))

    def is_in(self, values: Any) -> Condition:
        """is_in: the value is one of ``values`` (constants), a condition."""
        return one_of(_side(self), values, negate=False)

    def not_in(self, values: Any) -> Condition:
        """not_in: the value is none of ``values`` (constants), a condition."""
        return one_of(_side(self), values, negate=True)

    def matches(self, pattern: str) -> Condition:
        """matches: the value matches the regular expression ``pattern``, a condition."""
        return match(_side(self)["var"], pattern)

    __hash__ = object.__hash__

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        hint = _HINTS.get(attr, "the functions on u")
        raise _ValueAttributeError(_refuse(self.name, f".{attr}()", hint))

    def __len__(self) -> int:
        raise _ValueTypeError(_refuse(self.name, "len()", _HINTS.get("len")))

    def __getitem__(self, key: object) -> Any:
        raise _ValueTypeError(_refuse(self.name, "indexing or slicing", _HINTS.get("index")))

    def __iter__(self) -> Iterator[Any]:
        raise _ValueTypeError(_refuse(self.name, "iterating over it", _HINTS.get("index")))

    def __int__(self) -> int:
        raise _ValueTypeError(_refuse(self.name, "int()", _HINTS.get("int")))

    def __float__(self) -> float:
        raise _ValueTypeError(_refuse(self.name, "float()", _HINTS.get("int")))

    def __index__(self) -> int:
        raise _ValueTypeError(_refuse(self.name, "using it as a number", _HINTS.get("int")))

    def __mod__(self, other: object) -> Any:
        raise _ValueTypeError(_refuse(self.name, "%", "an f-string"))

    def __mul__(self, other: object) -> Any:
        raise _ValueTypeError(_refuse(self.name, "*", "an f-string"))

    __rmul__ = __mul__

    def __contains__(self, item: object) -> bool:
        raise _ValueTypeError(_refuse(self.name, "'in'", "a check (contains(...))"))


def _ref(name: str) -> dict[str, Any]:
    """_ref: the template part a variable name stands for (a function's, for ``@N``)."""
    if name.startswith("@"):
        fn = current().fns.get(name)
        if fn is None:
            raise _TemplateError(f"{name!r}: a function's value used outside its scenario")
        return fn
    return {"var": name}


def _side(var: Var) -> dict[str, Any]:
    """_side: a Var as a condition's operand (a function's value is computed where it is
    sent, not kept: compare the value it is computed from)."""
    if var.name.startswith("@"):
        raise _ValueTypeError(
            f"{describe(var.name)} is computed where it is sent and cannot be compared: "
            "compare the value it is computed from"
        )
    return {"var": var.name}


def _operand(value: object) -> dict[str, Any]:
    """_operand: what a Var is compared with, as a condition's operand."""
    if isinstance(value, Var):
        return _side(value)
    if isinstance(value, str) and _STRAY.search(value):
        raise TypeError(
            "compare a run-time value with a constant or with another run-time value, "
            "not with text built from one"
        )
    return constant(value)


def parts(value: Any) -> Template:
    """parts splits a string (or a Var, or a number) into a template. A marker whose salt is
    not the trace's was changed by Python string code, and a marker's delimiter left alone
    was cut out of one: both would send a constant, so both are refused."""
    if isinstance(value, Var):
        return [_ref(value.name)]
    text = value if isinstance(value, str) else str(value)
    out: Template = []
    pos = 0
    salt = current().salt
    for m in _MARKER.finditer(text):
        if m.group(2) != salt:
            raise _TemplateError(
                _refuse(
                    m.group(1),
                    "Python string code over it (.upper(), .lower(), .replace(), ...)",
                    "u.upper(value), u.lower(value) and the other functions on u",
                )
            )
        _literal(out, text[pos : m.start()])
        out.append(_ref(m.group(1)))
        pos = m.end()
    _literal(out, text[pos:])
    return out


def _literal(out: Template, text: str) -> None:
    if _STRAY.search(text):
        raise _TemplateError(
            "a run-time value was cut apart by Python code (slicing, split(), strip(), ...): "
            "that would be computed once, at compile time, over a placeholder, and sent on "
            f"every request; use the value whole, or a function on u ({_DOCS})"
        )
    if text:
        out.append(text)


def json_template(value: Any) -> Template:
    """json_template renders a JSON document with variable references: each reference sits
    inside a JSON string and is escaped as string content at run time (a Var used as a whole
    value becomes a JSON string)."""
    out: Template = []

    def lit(text: str) -> None:
        if out and isinstance(out[-1], str):
            out[-1] += text
        else:
            out.append(text)

    def walk(v: Any) -> None:
        if isinstance(v, Var):
            lit('"')
            out.append(_ref(v.name))
            lit('"')
        elif isinstance(v, str):
            lit('"')
            for p in parts(v):
                if isinstance(p, str):
                    lit(json.dumps(p, ensure_ascii=False)[1:-1])
                else:
                    out.append(p)
            lit('"')
        elif isinstance(v, dict):
            lit("{")
            for i, (k, item) in enumerate(v.items()):
                if not isinstance(k, str):
                    raise TypeError(f"JSON object keys must be strings, got {k!r}")
                lit(("," if i else "") + json.dumps(k, ensure_ascii=False) + ":")
                walk(item)
            lit("}")
        elif isinstance(v, (list, tuple)):
            lit("[")
            for i, item in enumerate(v):
                if i:
                    lit(",")
                walk(item)
            lit("]")
        else:
            lit(json.dumps(v))

    walk(value)
    return out


def variables(template: Template) -> list[str]:
    """variables lists the variable names a template refers to (inside functions too)."""
    out: list[str] = []
    for p in template:
        if isinstance(p, dict):
            if "var" in p:
                out.append(p["var"])
            for arg in p.get("args", ()):
                if isinstance(arg, list):
                    out.extend(variables(arg))
    return out


def display(template: Template) -> str:
    """display renders a template for people: ``/tasks/{id}``, ``{b64encode(...)}``."""
    out = []
    for p in template:
        if isinstance(p, str):
            out.append(p)
        elif "var" in p:
            out.append("{" + p["var"] + "}")
        else:
            out.append("{" + p["fn"] + "(...)}")
    return "".join(out)
