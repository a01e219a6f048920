"""user: the tracer a flow function runs on. Each call (``u.get``, ``u.poll``, ``u.think``,
``with u.loop(3):``) appends a step to the flow being compiled and remembers the line of the
scenario file it came from, so that every later complaint names that line.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from redline.errors import ConfigError
from redline.runs.options import parse_duration
from redline.scenario import grpc_call, pystep, socket
from redline.scenario.checks import Check
from redline.scenario.control import Control
from redline.scenario.functions import Functions
from redline.scenario.jsonpath import parse_path
from redline.scenario.template import Template, Var, display, json_template, parts, variables

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_CONTEXTLIB = os.path.abspath(contextlib.__file__)

#: BUILTINS: variables every VU has: its number (0..), its iteration (0.. per VU).
BUILTINS = ("vu", "iteration")

_METHOD = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


class ScenarioError(ConfigError):
    """ScenarioError is a mistake in a scenario file, with the file and line it is on (a
    ConfigError, so the CLI prints it as one line and exits 2)."""

    def __init__(self, message: str, file: str | None = None, line: int | None = None) -> None:
        self.message, self.file, self.line = message, file, line
        super().__init__(self.where() + message)

    def where(self) -> str:
        """where: ``FILE:LINE: `` (or less, when not known)."""
        if self.file and self.line:
            return f"{self.file}:{self.line}: "
        return f"{self.file}: " if self.file else ""


def caller() -> tuple[str | None, int | None]:
    """caller: the file and line of the first frame outside this package and contextlib
    (the user's line, also for a mistake found as a ``with`` block is entered)."""
    frame = sys._getframe(1)
    while frame is not None:
        fname = os.path.abspath(frame.f_code.co_filename)
        if not fname.startswith(_PACKAGE_DIR) and fname != _CONTEXTLIB:
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return None, None


class Think:
    """Think is a pause: constant, uniform between two bounds, or exponential with a mean."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec


def between(low: str | float, high: str | float) -> Think:
    """between(1, 2): a pause drawn uniformly between 1 and 2 seconds (Locust's between)."""
    lo, hi = parse_duration(low, "between"), parse_duration(high, "between")
    if not 0 <= lo <= hi:
        raise ValueError(f"between({low!r}, {high!r}): need 0 <= low <= high")
    return Think({"dist": "uniform", "min_s": lo, "max_s": hi})


def constant(seconds: str | float) -> Think:
    """constant(1): a pause of exactly one second."""
    s = parse_duration(seconds, "constant")
    if s < 0:
        raise ValueError(f"constant({seconds!r}): must be >= 0")
    return Think({"dist": "constant", "s": s})


def exponential(mean: str | float) -> Think:
    """exponential(2): a pause drawn from an exponential distribution with a 2 s mean."""
    m = parse_duration(mean, "exponential")
    if m <= 0:
        raise ValueError(f"exponential({mean!r}): the mean must be > 0")
    return Think({"dist": "exponential", "mean_s": m})


class Response:
    """Response is the handle of a request step: its methods add extractions to that step and
    return the extracted value as a :class:`Var`. A failed extraction fails the request with
    a reason and ends the iteration."""

    def __init__(self, user: User, step: dict[str, Any]) -> None:
        self._user, self._step = user, step
        self._status: Var | None = None

    def _extract(
        self, spec: dict[str, Any], what: str, default: Any = None, into: Var | None = None
    ) -> Var:
        name = self._user._fresh(what) if into is None else self._user._into(into)
        file, line = caller()
        spec = {"var": name, **spec, "line": line}
        if default is not None:
            spec["default"] = str(default)
        self._step["extract"].append(spec)
        self._user._define(name)
        return Var(name)

    @property
    def status(self) -> Var:
        """status: the response's status code, a run-time value (``r.status == 200`` is a
        condition for ``u.when``)."""
        if self._status is None:
            self._status = self._extract({"from": "status"}, "status")
        return self._status

    def json(self, path: str, default: Any = None, into: Var | None = None) -> Var:
        """json: the value at a JSON path of the body (``$.id``, ``$.items[0].id``); with a
        ``default``, a missing value (or a body that is not JSON) is that text instead of a
        failed request; ``into`` (a :meth:`User.variable`) is the variable it sets, so that
        every branch of a ``when`` can set the same one."""
        try:
            segs = parse_path(path)
        except ValueError as e:
            raise self._user._error(str(e)) from None
        spec = {"from": "json", "path": segs, "text": path}
        return self._extract(spec, "json", default, into)

    def header(self, name: str, default: Any = None, into: Var | None = None) -> Var:
        """header: the value of a response header (the first, by case-insensitive name);
        ``default`` stands for a missing one; ``into`` as for :meth:`json`."""
        return self._extract({"from": "header", "name": name}, "header", default, into)

    def regex(
        self, pattern: str, group: int = 1, default: Any = None, into: Var | None = None
    ) -> Var:
        """regex: group ``group`` of the first match of ``pattern`` in the body; ``default``
        stands for no match; ``into`` as for :meth:`json`."""
        try:
            rx = re.compile(pattern)
        except re.error as e:
            raise self._user._error(f"bad regex {pattern!r}: {e}") from None
        if not 0 <= group <= rx.groups:
            raise self._user._error(f"regex {pattern!r} has no group {group}")
        return self._extract(
            {"from": "regex", "pattern": pattern, "group": group}, "regex", default, into
        )


def _url_start(template: Template) -> bool:
    """_url_start: a URL template starts as a path (``/``, not ``//``), an ``http://`` or
    ``https://`` URL, or a variable (a URL that comes from the run, checked per request)."""
    if not template:
        return False
    head = template[0]
    if not isinstance(head, str):
        return True
    if head.startswith("/"):
        return not head.startswith("//")
    return head[:8].lower().startswith(("http://", "https://"))


class User(Functions, Control):
    """User is what a flow function receives: a virtual user being traced. See
    docs/scenarios.md for every step, :class:`Functions` for the values the engine computes
    per request and :class:`Control` for branches and loops."""

    def __init__(self, compiler: Any, defined: set[str], in_setup: bool = False) -> None:
        self._c = compiler
        self._defined = set(defined)
        self._partial: dict[str, int | None] = {}
        self._chains = {}
        self._sent = 0
        self._in_setup = in_setup
        self._declared: set[str] = set()
        #: setup: what the scenario's setup function returned (its extracted values, say a
        #: login token), for the flows; None in the setup itself.
        self.setup: Any = None
        self._stack: list[list[dict[str, Any]]] = [[]]

    # -- bookkeeping -------------------------------------------------------------------------
    @property
    def steps(self) -> list[dict[str, Any]]:
        """steps: the steps traced so far."""
        return self._stack[0]

    def _error(self, message: str) -> ScenarioError:
        file, line = caller()
        return ScenarioError(message, file, line)

    def _error_at(self, message: str, line: int | None) -> ScenarioError:
        file, _ = caller()
        return ScenarioError(message, file, line)

    def _here(self) -> int | None:
        return caller()[1]

    def _fresh(self, what: str) -> str:
        return self._c.fresh(what)

    def _define(self, name: str) -> None:
        self._defined.add(name)

    def _into(self, var: Var) -> str:
        """_into: the name of a variable made by :meth:`variable`, for an extraction to set."""
        if not isinstance(var, Var) or var.name not in self._declared:
            raise self._error(f"into= takes a variable made by u.variable(), got {var!r}")
        return var.name

    def variable(self) -> Var:
        """variable: a run-time variable that extractions set with ``into=`` (``r.json(
        "$.id", into=v)``): the same variable from every branch of a ``when``, so that it is
        usable after the block when every branch sets it."""
        name = self._fresh("value")
        self._declared.add(name)
        return Var(name)

    def _add(self, step: dict[str, Any]) -> dict[str, Any]:
        _, step["line"] = caller()
        self._stack[-1].append(step)
        return step

    def _use(self, template: Template) -> Template:
        self._use_names(variables(template))
        return template

    def _use_names(self, names: list[str]) -> None:
        for name in names:
            if name in self._defined:
                continue
            if name in self._partial:
                where = self._partial[name]
                raise self._error(
                    f"variable {self._c.label(name)} is set only in some branches of the "
                    f"when (or in a repeat that may run no round) at line {where}: set it "
                    "before that block, or in every branch (with otherwise()) into one "
                    "u.variable()"
                )
            raise self._error(
                f"variable {self._c.label(name)} is used before it is extracted "
                "(or comes from another flow)"
            )

    def _check_count(self, count: int | Var) -> None:
        """_check_count: a repeat count known at compile time (a run variable, a data
        column shipped in the plan) is a whole number >= 0, else an error here rather than a
        failure per VU."""
        if not isinstance(count, Var):
            return
        name = count.name
        if name.startswith("var."):
            values = [self._c.used_vars.get(name[4:])]
        elif name.startswith("data."):
            _, ds, col = name.split(".", 2)
            d = self._c.datasets[ds]
            i = d["columns"].index(col)
            # A file streamed to the engine is not read here: its rows are judged per VU.
            values = [row[i] for row in d.get("rows") or []]
        else:
            return
        for v in values:
            if not (isinstance(v, str) and v.isascii() and v.isdigit()):
                raise self._error(f"repeat count {name} is {v!r}, not a whole number >= 0")

    # -- variables ---------------------------------------------------------------------------
    @property
    def vu(self) -> Var:
        """vu: this VU's number (0, 1, ...), for per-user ids."""
        return Var("vu")

    @property
    def iteration(self) -> Var:
        """iteration: this VU's iteration number (0, 1, ...), a per-VU counter."""
        return Var("iteration")

    def var(self, name: str, default: str | None = None) -> Var:
        """var: a run variable, given on the command line as ``--var NAME=VALUE`` (or
        ``default``). A run variable with neither is an error at compile time."""
        value = self._c.run_vars.get(name, default)
        if value is None:
            raise self._error(f"run variable {name!r} is not set: give --var {name}=VALUE")
        self._c.used_vars[name] = str(value)
        self._define("var." + name)
        return Var("var." + name)

    def setting(self, name: str, default: str | None = None) -> str:
        """setting: a run variable's value itself (``--var NAME=VALUE``, or ``default``), read
        when the scenario compiles, for what shapes the requests rather than fills them: a
        JSON number, whether a field is sent at all. :meth:`var` is the one to put in a
        request's text. A run variable with neither is an error at compile time."""
        value = self._c.run_vars.get(name, default)
        if value is None:
            raise self._error(f"run variable {name!r} is not set: give --var {name}=VALUE")
        self._c.used_vars[name] = str(value)
        return str(value)

    def choice(self, options: list[Any]) -> Var:
        """choice: one of ``options`` drawn at random, once per use of this step."""
        if not options:
            raise self._error("choice(...) needs a non-empty list")
        name = self._fresh("choice")
        self._add({"step": "set", "var": name, "choice": [str(o) for o in options]})
        self._define(name)
        return Var(name)

    def python(
        self, fn: Any, *args: Any, returns: tuple[str, ...] | list[str] | None = None, **kw: Any
    ) -> Any:
        """python: a Python step: ``fn(*args, **kw)`` called each time the flow reaches it, at
        run time, on redline's Python thread, with the Vars among the arguments filled in as
        ``str`` (for what the plan cannot say: a signature, a token, Locust code pasted in).
        Without ``returns`` the step is one Var, ``str`` of what ``fn`` returned; with
        ``returns=("a", "b")``, ``fn`` returns a dict and the step is a dict of those keys'
        Vars (``headers=u.python(sign, body, returns=("X-Sig",))``). An exception fails the
        iteration, its reason counted in the run's ``scenario.python``."""
        return pystep.trace(self, fn, args, kw, returns)

    def row(self, dataset: str) -> dict[str, Var]:
        """row: the current row of a data set declared with ``Scenario.data`` (the next row
        each iteration, or one row per VU), as a dict of column -> Var."""
        ds = self._c.datasets.get(dataset)
        if ds is None:
            raise self._error(f"no data set {dataset!r} (declare it with scenario.data(...))")
        return {col: Var(f"data.{dataset}.{col}") for col in ds["columns"]}

    # -- requests ----------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: Any,
        *,
        name: str | None = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, Any] | None = None,
        json: Any = None,
        form: dict[str, Any] | None = None,
        body: Any = None,
        status: int | tuple[int, ...] | None = None,
        checks: list[Check] | tuple[Check, ...] = (),
        follow_redirects: bool = False,
        tally: str | None = None,
        timeout: str | float | None = None,
        stream: bool = False,
    ) -> Response:
        """request: one HTTP request. ``path`` is a path on the run's host (``/x``) or an
        absolute ``http://`` or ``https://`` URL of any host; it and the values of
        ``params``, ``headers``, ``json``, ``form`` and ``body`` may hold Vars (a whole URL
        too: ``u.get(r.header("Location"))``). ``name`` labels its statistics (default
        ``METHOD path-template``). ``status`` is shorthand for a status check. ``tally`` (a
        JSON path, ``"$.status"``) counts each answer by the value there, per interval and
        over the run, under the request's name (every poll of a ``poll``). ``timeout``
        (``"2s"``, ``0.5``) replaces the run's timeout for this request. ``stream`` times
        its answer as it arrives, as ``--stream`` times every request's (first byte, gaps
        between chunks or events, a streamed completion's tokens: docs/protocols.md).
        ``follow_redirects`` follows a 3xx's Location, to any host."""
        if not isinstance(method, str) or not _METHOD.match(method):
            raise self._error(f"bad HTTP method {method!r}")
        path_t = self._use(parts(path))
        if not _url_start(path_t):
            raise self._error(
                "the URL must be a path starting with '/' or an http:// or https:// URL, "
                f"got {display(path_t)!r}"
            )
        given = [k for k, v in (("json", json), ("form", form), ("body", body)) if v is not None]
        if len(given) > 1:
            raise self._error(f"give one of json=, form=, body=, not {' and '.join(given)}")
        step: dict[str, Any] = {
            "step": "request",
            "name": name or f"{method.upper()} {display(path_t)}",
            "method": method.upper(),
            "path": path_t,
            "query": [[str(k), self._use(parts(v))] for k, v in (params or {}).items()],
            "headers": [[str(k), self._use(parts(v))] for k, v in (headers or {}).items()],
            "body": None,
            "follow_redirects": bool(follow_redirects),
            "extract": [],
            "checks": [],
        }
        if json is not None:
            try:
                step["body"] = {"type": "json", "template": self._use(json_template(json))}
            except TypeError as e:
                raise self._error(f"json body: {e}") from None
        elif form is not None:
            step["body"] = {
                "type": "form",
                "fields": [[str(k), self._use(parts(v))] for k, v in form.items()],
            }
        elif body is not None:
            step["body"] = {"type": "text", "template": self._use(parts(body))}
        if status is not None:
            codes = (status,) if isinstance(status, int) else tuple(status)
            checks = [Check({"check": "status", "in": list(codes)}), *checks]
        for c in checks:
            if not isinstance(c, Check):
                raise self._error(f"checks must be made by status(), json_eq(), ...; got {c!r}")
            step["checks"].append(dict(c.spec))
        self._options(step, tally, timeout, stream)
        self._add(step)
        self._sent += 1
        return Response(self, step)

    def _options(
        self, step: dict[str, Any], tally: str | None, timeout: str | float | None, stream: bool
    ) -> None:
        """_options puts a request's ``tally``, ``timeout`` and ``stream`` into its step."""
        if tally is not None:
            try:
                step["tally"] = {"path": parse_path(tally), "text": tally}
            except ValueError as e:
                raise self._error(f"tally: {e}") from None
        if timeout is not None:
            step["timeout_s"] = self._timeout_s(timeout)
        if stream:
            step["stream"] = True

    def _timeout_s(self, timeout: str | float) -> float:
        """_timeout_s: a request's ``timeout=`` in seconds (> 0), or the error naming its line."""
        try:
            seconds = parse_duration(timeout, "timeout")
        except (ValueError, ConfigError) as e:
            raise self._error(str(e)) from None
        if not seconds > 0:
            raise self._error(f"timeout must be > 0, got {timeout!r}")
        return seconds

    def completion(
        self,
        path: Any = "/v1/chat/completions",
        *,
        messages: Any = None,
        prompt: Any = None,
        model: Any = "",
        max_tokens: int | None = None,
        name: str | None = None,
        **kw: Any,
    ) -> Response:
        """completion: an OpenAI-compatible streaming completion: ``POST path`` with a JSON
        body of ``model``, ``messages`` (chat, ``/v1/chat/completions``) or ``prompt``
        (``/v1/completions``), ``max_tokens`` and ``"stream": true``, its answer timed as it
        arrives and its tokens counted from the events (``choices[0].delta.content``, or
        ``.text``): TTFT, inter-token latency and output tokens a second in the result's
        ``completion``. Other keywords are :meth:`request`'s (``headers=`` for a key)."""
        if (messages is None) == (prompt is None):
            raise self._error("completion: give messages= (chat) or prompt=, one of them")
        body: dict[str, Any] = {"model": model, "stream": True}
        if messages is not None:
            body["messages"] = messages
        else:
            body["prompt"] = prompt
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        return self.request("POST", path, json=body, name=name or "completion", stream=True, **kw)

    def get(self, path: Any, **kw: Any) -> Response:
        """get: a GET request (see :meth:`request`)."""
        return self.request("GET", path, **kw)

    def post(self, path: Any, **kw: Any) -> Response:
        """post: a POST request (see :meth:`request`)."""
        return self.request("POST", path, **kw)

    def put(self, path: Any, **kw: Any) -> Response:
        """put: a PUT request (see :meth:`request`)."""
        return self.request("PUT", path, **kw)

    def delete(self, path: Any, **kw: Any) -> Response:
        """delete: a DELETE request (see :meth:`request`)."""
        return self.request("DELETE", path, **kw)

    def websocket(
        self,
        url: Any,
        *,
        send: Any,
        count: int = 1,
        match: str | None = None,
        timeout: str | float | None = None,
        name: str | None = None,
    ) -> None:
        """websocket: open a WebSocket to ``url`` (a path on the run's host, ws:// or wss:// as
        the run is http or https, or an absolute ``ws://``/``wss://`` URL), send ``send`` (a
        message, or a list of them: a dict is JSON, anything else text; Vars allowed), the
        whole list ``count`` times, each message when the last one's reply came, then close.
        A reply is the next message read, or with ``match="id"`` the one whose JSON ``id``
        equals the message's. Each round trip is a request of ``name`` (default ``WS url``);
        a socket the server drops or closes, or a reply later than ``timeout``, fails the
        iteration with that reason; ``scenario.sockets`` counts the messages both ways."""
        socket.trace(self, url, send, count, match, timeout, name)

    def grpc(
        self,
        url: str,
        *,
        proto: str | os.PathLike[str],
        message: Any = None,
        metadata: dict[str, Any] | None = None,
        import_paths: tuple[str | os.PathLike[str], ...] | list[str] = (),
        status: int | str | tuple[int | str, ...] | None = None,
        checks: list[Check] | tuple[Check, ...] = (),
        name: str | None = None,
        tally: str | None = None,
        timeout: str | float | None = None,
    ) -> Response:
        """grpc: one gRPC call, as ghz and grpcurl make it from a ``.proto`` read at run time.
        ``url`` is ``grpc://HOST:PORT/package.Service/Method`` (``grpcs://`` for TLS), or
        ``/package.Service/Method`` on the run's host; ``proto`` the file that defines it
        (beside the scenario file, or from where redline runs); ``message`` the request as a
        dict in proto3's JSON (Vars allowed; a list of them for a client stream); ``metadata``
        its headers (Vars allowed). The step's status is the call's gRPC code (0 is OK): any
        other fails it, counted as a ``grpc`` error, unless ``status`` lists it (codes or
        names, ``status=("OK", "NOT_FOUND")``). ``r.json("$.field")`` reads the reply (a
        streamed reply: a list, ``$[0].field``), timed as its messages arrive. Other
        keywords are :meth:`request`'s."""
        step = grpc_call.trace(
            self, caller()[0], url, proto, message, metadata, import_paths, status, checks, name
        )
        self._options(step, tally, timeout, False)
        self._add(step)
        self._sent += 1
        return Response(self, step)

    def poll(
        self,
        path: Any,
        *,
        until: Check | list[Check],
        every: str | float = 1.0,
        timeout: str | float = 60.0,
        method: str = "GET",
        **kw: Any,
    ) -> Response:
        """poll: send the request every ``every`` until all of ``until`` hold, then run its
        checks and extractions on that last response. Each poll is counted under the
        request's name; passing ``timeout`` without the condition holding fails the last
        poll with the reason ``poll timed out``."""
        conds = [until] if isinstance(until, Check) else list(until)
        if not conds or not all(isinstance(c, Check) for c in conds):
            raise self._error("poll(until=...) takes one or more checks (json_in(...), ...)")
        every_s = parse_duration(every, "every")
        timeout_s = parse_duration(timeout, "timeout")
        if every_s < 0 or timeout_s <= 0:
            raise self._error("poll: every must be >= 0 and timeout > 0")
        self._stack.append([])
        try:
            resp = self.request(method, path, **kw)
        finally:
            inner = self._stack.pop()
        (req,) = inner
        self._add(
            {
                "step": "poll",
                "request": req,
                "until": [dict(c.spec) for c in conds],
                "interval_s": every_s,
                "timeout_s": timeout_s,
            }
        )
        return resp

    # -- control -----------------------------------------------------------------------------
    def think(self, pause: Think | str | float) -> None:
        """think: pause, e.g. ``u.think(between(1, 2))``, ``u.think("500ms")``."""
        if not isinstance(pause, Think):
            try:
                pause = constant(pause)
            except ValueError as e:
                raise self._error(str(e)) from None
        self._add({"step": "think", **pause.spec})

    @contextmanager
    def group(self, name: str) -> Iterator[None]:
        """group: ``with u.group("task"):`` times the block as a whole, under ``name``."""
        if not isinstance(name, str) or not name:
            raise self._error("group(...) needs a name")
        step = self._add({"step": "group", "name": name, "steps": []})
        self._stack.append(step["steps"])
        try:
            yield
        finally:
            self._stack.pop()
