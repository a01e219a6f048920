"""pystep: a scenario's Python steps (``u.python(fn, ...)``), for what the plan cannot say.

The function runs at run time, once each time a VU's flow reaches the step, on a Python
thread of the engine's binding (one, holding the GIL: see docs/scenarios.md), with the run-time
values of the Vars among its arguments filled in as ``str``. What it returns becomes
variables of the VU: one value, or the keys ``returns=`` names of a dict. Nothing of it runs
at compile time, so nothing is computed over the tracer's placeholders.

The plan carries the step's argument templates and an index into the plan's ``python``
list; that list names each function by a key of this process's :data:`_REGISTRY`, where the
compiler leaves the callable the binding will call (``functions_of`` finds them for a run).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from redline.scenario.template import Template, Var, parts, variables

#: _REGISTRY: key -> the callable of a compiled Python step, for the runs of this process.
_REGISTRY: dict[str, PythonCall] = {}
_LOCK = threading.Lock()


class PythonCall:
    """PythonCall is what the binding calls for a Python step: ``call(values)`` rebuilds the
    user's arguments (the constants as given, the templated ones from ``values``, in order),
    calls the function and returns its outputs as strings, in the order of ``returns``."""

    def __init__(
        self,
        fn: Callable[..., Any],
        args: Sequence[Any],
        kwargs: dict[str, Any],
        returns: Sequence[str] | None,
    ) -> None:
        self.fn = fn
        self.name = getattr(fn, "__qualname__", repr(fn))
        self.returns = tuple(returns) if returns is not None else None
        # Each argument: ("const", value) or ("var", index into the values the engine sends).
        self.templates: list[Template] = []
        self._args = [self._slot(a) for a in args]
        self._kwargs = {k: self._slot(v) for k, v in kwargs.items()}
        # _direct: every argument is a run-time value, in the order the engine sends them, so
        # a call is fn(*values) with nothing rebuilt (the common case, and the cheap one: this
        # runs once a call on the run's one Python thread).
        self._direct = not self._kwargs and self._args == [
            ("var", i) for i in range(len(self._args))
        ]

    def _slot(self, value: Any) -> tuple[str, Any]:
        tpl = parts(value) if isinstance(value, (str, Var)) else None
        if tpl is None or not variables(tpl):
            return ("const", value)
        self.templates.append(tpl)
        return ("var", len(self.templates) - 1)

    def __call__(self, values: list[str]) -> list[str]:
        if self._direct:
            result = self.fn(*values)
        else:
            result = self.fn(
                *[values[v] if kind == "var" else v for kind, v in self._args],
                **{k: values[v] if kind == "var" else v for k, (kind, v) in self._kwargs.items()},
            )
        returns = self.returns
        if returns is None:
            return [result if type(result) is str else _text(result)]
        if not isinstance(result, dict):
            raise TypeError(f"returned {type(result).__name__}, not a dict with {list(returns)}")
        out = []
        for k in returns:
            v = result.get(k, _MISSING)
            if v is _MISSING:
                raise KeyError(f"returned no {k!r}")
            out.append(v if type(v) is str else _text(v))
        return out


#: _MISSING: a key the step's dict lacks (None is a value it may return).
_MISSING = object()


def trace(
    user: Any,
    fn: Any,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    returns: Sequence[str] | None,
) -> Any:
    """trace adds ``user``'s Python step (see ``User.python``) and returns its Var, or with
    ``returns`` a dict of Vars."""
    if not callable(fn):
        raise user._error(f"python(fn, ...): fn must be callable, got {fn!r}")
    if returns is not None and (
        isinstance(returns, str) or not returns or not all(isinstance(k, str) for k in returns)
    ):
        raise user._error(f"python(returns=...) is a tuple of key names, got {returns!r}")
    call = PythonCall(fn, args, kwargs, returns)
    for tpl in call.templates:
        user._use(tpl)
    functions = user._c.python
    # The key is the same in each of the compiler's traces (their plans must be alike):
    # the scenario's identity and the step's place; the last trace's callable is kept.
    key = f"{call.name}@{id(user._c.scenario):x}.{len(functions)}"
    register(key, call)
    functions.append({"name": call.name, "key": key})
    base = user._fresh("py")
    keys = list(returns) if returns is not None else [""]
    outputs = [f"{base}.{k}" if k else base for k in keys]
    user._add(
        {
            "step": "python",
            "fn": len(functions) - 1,
            "args": call.templates,
            "outputs": outputs,
        }
    )
    for name in outputs:
        user._define(name)
    if returns is None:
        return Var(outputs[0])
    return {k: Var(name) for k, name in zip(keys, outputs, strict=True)}


def register(key: str, call: PythonCall) -> None:
    """register keeps ``call`` under ``key`` for this process's runs."""
    with _LOCK:
        _REGISTRY[key] = call


def functions_of(plan: dict[str, Any] | None) -> list[PythonCall] | None:
    """functions_of: the callables of a plan's Python steps, in the order its steps refer to
    them; None for a plan without any. A plan compiled in another process has no callables
    here: that is a :class:`LookupError` naming the function."""
    entries = (plan or {}).get("python") or []
    if not entries:
        return None
    out = []
    for e in entries:
        call = _REGISTRY.get(e["key"])
        if call is None:
            raise LookupError(
                f"the plan's Python step {e['name']!r} was compiled in another process: "
                "Python steps run only where their scenario was compiled"
            )
        out.append(call)
    return out


def _text(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode()
    return v if isinstance(v, str) else str(v)
