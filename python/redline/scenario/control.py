"""control: branching and loops a flow traces into its plan, decided per VU during the run.

    with u.when(r.json("$.status") == "SUCCEEDED"):      # if
        u.get(f"/tasks/{tid}", name="result")
    with u.otherwise_when(status(404)):                   # elif
        ...
    with u.otherwise():                                   # else
        u.post("/tasks/submissions", ...)
    with u.repeat(u.var("PAGES")):                        # n times (an int or a run-time value)
        ...
    with u.until(json_eq("$.state", "DONE"), limit=20):   # do ... until, at most 20 rounds
        u.get("/job")
    u.stop_iteration(u.iteration >= 3)                    # end the iteration here, completed

Each block is traced once, like the rest of the flow; the engine runs it as jumps in the
flow's op list. A variable set in only some branches of a ``when`` (or in a ``repeat`` that
may run no round) cannot be used after it: that is a compile-time error naming the line of
the use, so no request ever carries a value that was never set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from redline.scenario.condition import Condition, judges_a_response, variables
from redline.scenario.template import Var

#: MAX_LIMIT: the most rounds an until may run (the engine's bound too).
MAX_LIMIT = 1_000_000


@dataclass
class _Chain:
    """_Chain is a ``when`` being traced: what was set before it and in each branch."""

    step: dict[str, Any]
    line: int | None
    before: set[str]
    sets: list[set[str]] = field(default_factory=list)
    closed: bool = False


class _Block:
    """_Block is a ``with`` block of the tracer: ``enter`` and ``leave`` run at its edges
    (made by a plain object rather than contextlib, so that a mistake found when the block
    is made names the scenario's line, not contextlib's)."""

    def __init__(self, enter: Callable[[], None], leave: Callable[[bool], None]) -> None:
        self._enter, self._leave = enter, leave

    def __enter__(self) -> None:
        self._enter()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._leave(kind is None)


class Control:
    """Control is the part of :class:`~redline.scenario.user.User` that traces branches and
    loops (see the module's doc)."""

    # What User provides (declared here for the type checker).
    _stack: list[list[dict[str, Any]]]
    _defined: set[str]
    _partial: dict[str, int | None]
    _chains: dict[int, _Chain]
    _sent: int
    _in_setup: bool

    def _add(self, step: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def _error(self, message: str) -> Exception:
        raise NotImplementedError

    def _error_at(self, message: str, line: int | None) -> Exception:
        raise NotImplementedError

    def _here(self) -> int | None:
        raise NotImplementedError

    # -- conditions --------------------------------------------------------------------------
    def _condition(self, value: object, what: str) -> dict[str, Any]:
        """_condition: ``value`` as the plan's condition, its variables checked."""
        if not isinstance(value, Condition):
            raise self._error(
                f"{what}(...) takes a condition: a comparison (r.json('$.status') == 'FAILED', "
                f"u.iteration < 3), a check (json_eq(...), status(...)), or & | ~ of them; "
                f"got {value!r}"
            )
        spec = value.plan()
        self._use_names(variables(spec))
        if judges_a_response(spec) and not self._sent:
            raise self._error(
                f"{what}(...): a check judges the response received last, and no request "
                "comes before it in this flow"
            )
        return spec

    def _use_names(self, names: list[str]) -> None:
        raise NotImplementedError

    # -- when / otherwise --------------------------------------------------------------------
    def when(self, condition: Condition) -> _Block:
        """when: ``with u.when(condition):`` runs the block when the condition holds."""
        spec = self._condition(condition, "when")
        step = self._add({"step": "when", "branches": [], "line": None})
        chain = _Chain(step, step["line"], set(self._defined))
        self._chains[id(step)] = chain
        return self._branch(chain, self._new_branch(chain, spec))

    def otherwise_when(self, condition: Condition) -> _Block:
        """otherwise_when: ``with u.otherwise_when(condition):`` after a when (Python's
        ``elif``): runs when no branch before it ran and the condition holds."""
        chain = self._follows("otherwise_when")
        spec = self._condition(condition, "otherwise_when")
        return self._branch(chain, self._new_branch(chain, spec))

    def otherwise(self) -> _Block:
        """otherwise: ``with u.otherwise():`` after a when (Python's ``else``): runs when no
        branch before it ran."""
        chain = self._follows("otherwise")
        chain.closed = True
        steps: list[dict[str, Any]] = []
        chain.step["else"] = steps
        return self._branch(chain, steps)

    def _new_branch(self, chain: _Chain, spec: dict[str, Any]) -> list[dict[str, Any]]:
        line = self._here()
        steps: list[dict[str, Any]] = []
        chain.step["branches"].append({"if": spec, "steps": steps, "line": line})
        return steps

    def _follows(self, what: str) -> _Chain:
        """_follows: the when that this otherwise continues: the step just before, at the
        same level, with no otherwise yet."""
        level = self._stack[-1]
        chain = self._chains.get(id(level[-1])) if level else None
        if chain is None:
            raise self._error(f"{what}() must come right after a `with u.when(...):` block")
        if chain.closed:
            raise self._error(f"{what}() after otherwise(): the when already has its else")
        return chain

    def _branch(self, chain: _Chain, steps: list[dict[str, Any]]) -> _Block:
        def enter() -> None:
            self._defined = set(chain.before)
            self._stack.append(steps)

        def leave(ok: bool) -> None:
            self._stack.pop()
            chain.sets.append(self._defined - chain.before)
            sure = set.intersection(*chain.sets) if chain.closed else set()
            self._settle(chain.before, set().union(*chain.sets), sure, chain.line)

        return _Block(enter, leave)

    def _settle(self, before: set[str], some: set[str], sure: set[str], line: int | None) -> None:
        """_settle: after a block, what is set for certain (``sure``) and what only maybe."""
        self._defined = before | sure
        for name in some - sure:
            self._partial.setdefault(name, line)
        for name in sure:
            self._partial.pop(name, None)

    # -- loops -------------------------------------------------------------------------------
    def repeat(self, count: int | Var) -> _Block:
        """repeat: ``with u.repeat(3):`` runs the block 3 times; the count may be a run-time
        value (``u.var("N")``, an extracted number), read when the loop starts (0: no round;
        not a whole number: the iteration fails with that reason)."""
        if isinstance(count, Var):
            self._use_names([count.name])
            plan_count: int | dict[str, str] = {"var": count.name}
        elif isinstance(count, int) and not isinstance(count, bool) and count >= 0:
            plan_count = count
        else:
            raise self._error(
                f"repeat count must be a whole number >= 0 or a run-time value "
                f"(u.var(...), an extracted value), got {count!r}"
            )
        self._check_count(count)
        step = self._add({"step": "repeat", "count": plan_count, "steps": []})
        sure = isinstance(count, int) and count >= 1
        return self._loop(step, sure)

    def loop(self, count: int | Var) -> _Block:
        """loop: the same as :meth:`repeat`."""
        return self.repeat(count)

    def until(self, condition: Condition | Callable[[], Condition], *, limit: int) -> _Block:
        """until: ``with u.until(condition, limit=20):`` runs the block, then again until the
        condition holds after a round; after ``limit`` rounds without it the iteration fails
        (reason ``until (line N) still false after 20 rounds``, booked on the last request
        sent). A check judges the round's last response; to test a value the block extracts,
        pass a lambda (``u.until(lambda: r.json("$.state") == "DONE", limit=20)``): it is
        called when the block ends."""
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise self._error(f"until: limit must be a whole number 1..{MAX_LIMIT}, got {limit!r}")
        if not callable(condition) or isinstance(condition, Condition):
            spec: dict[str, Any] | None = self._condition(condition, "until")
        else:
            spec = None
        step = self._add({"step": "until", "cond": spec, "limit": limit, "steps": []})
        before_sent = self._sent

        def close() -> None:
            if step["cond"] is None:
                try:
                    made = condition()  # type: ignore[operator]
                except TypeError as e:
                    raise self._error_at(f"until: {e}", step["line"]) from None
                try:
                    step["cond"] = self._condition(made, "until")
                except Exception as e:
                    raise self._error_at(str(getattr(e, "message", e)), step["line"]) from None
            if self._sent == before_sent:
                raise self._error_at("until: its block sends no request", step["line"])

        return self._loop(step, True, close)

    def _loop(
        self, step: dict[str, Any], sure: bool, close: Callable[[], None] | None = None
    ) -> _Block:
        before = set(self._defined)

        def enter() -> None:
            self._stack.append(step["steps"])

        def leave(ok: bool) -> None:
            self._stack.pop()
            if ok and close is not None:
                close()
            set_here = self._defined - before
            self._settle(before, set_here, set_here if sure else set(), step["line"])

        return _Block(enter, leave)

    def _check_count(self, count: int | Var) -> None:
        raise NotImplementedError

    # -- stop --------------------------------------------------------------------------------
    def stop_iteration(self, condition: Condition | None = None) -> None:
        """stop_iteration: end the iteration here when the condition holds (always, without
        one). The iteration counts as completed, not failed; a group it cuts short counts as
        a pass."""
        if self._in_setup:
            raise self._error("stop_iteration() belongs in a flow, not in the setup")
        spec = None if condition is None else self._condition(condition, "stop_iteration")
        self._add({"step": "stop", "cond": spec})
