"""template: symbolic values (:class:`Var`) and the templates they leave in strings.

A flow function runs once, at compile time, on symbolic values, like a tracer: a value
extracted from a response is a :class:`Var` whose ``str()`` is a marker. f-strings, ``%`` and
``+`` carry the marker into paths, headers and bodies; :func:`parts` splits a string back into
literal text and variable references, which is what the plan carries (a *template*: a list
whose items are literal strings or ``{"var": NAME}``). The engine fills the references in per
request, escaping each for where it lands (path, query, header, JSON string, form field).
"""

from __future__ import annotations

import json
import re
from typing import Any

#: The marker delimiters: ASCII record/unit separators, which no sane URL, header or body
#: text contains, so a marker cannot be confused with user text.
_OPEN, _CLOSE = "\x1e", "\x1f"
_MARKER = re.compile("\x1e([^\x1e\x1f]+)\x1f")

#: Template: what the plan carries for a templated string.
Template = list[Any]


class Var:
    """Var is a symbolic value known only during a run (an extracted value, a run variable, a
    data-file column, a random choice). Use it in f-strings, dicts and lists; comparing it or
    branching on it at compile time is impossible and raises."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"{_OPEN}{self.name}{_CLOSE}"

    def __format__(self, spec: str) -> str:
        return str(self)

    def __repr__(self) -> str:
        return f"Var({self.name!r})"

    def __add__(self, other: object) -> str:
        return str(self) + str(other)

    def __radd__(self, other: object) -> str:
        return str(other) + str(self)

    def __bool__(self) -> bool:
        raise TypeError(
            f"the value of {self.name!r} is known only during the run: a flow cannot branch "
            "on it (use a check, or poll until a condition holds)"
        )

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        raise TypeError(
            f"the value of {self.name!r} is known only during the run: use a check "
            "(json_eq, json_in, ...) instead of comparing it"
        )

    __hash__ = object.__hash__


def parts(value: Any) -> Template:
    """parts splits a string (or a Var, or a number) into a template."""
    if isinstance(value, Var):
        return [{"var": value.name}]
    text = value if isinstance(value, str) else str(value)
    out: Template = []
    pos = 0
    for m in _MARKER.finditer(text):
        if m.start() > pos:
            out.append(text[pos : m.start()])
        out.append({"var": m.group(1)})
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])
    return out


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
            out.append({"var": v.name})
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
    """variables lists the variable names a template refers to."""
    return [p["var"] for p in template if isinstance(p, dict)]


def display(template: Template) -> str:
    """display renders a template for people: ``/tasks/{id}``."""
    return "".join(p if isinstance(p, str) else "{" + p["var"] + "}" for p in template)
