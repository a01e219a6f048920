"""launcher: ``redline ui``, the live page with nothing running yet. A form (a URL or a
scenario file, the model, the load and the duration, as Locust's start page asks) shows the
``redline run`` command line that does the same, and starts that very command line in this
process when submitted; the run is then watched as ``--web`` watches it.

The form is turned into a command line once (:func:`command_line`), and the run is that
command line parsed by the CLI's own parser: what the page shows is what runs. The launcher
does not import the CLI; it is handed a function that runs a command line with a session
(``redline.cli.commands`` passes it in), so imports keep one direction.
"""

from __future__ import annotations

import json
import secrets
import shlex
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import IO, Any

from redline.errors import ConfigError, RedlineError
from redline.live.address import Address
from redline.live.hub import Watcher
from redline.live.server import Reply, Request, Server
from redline.live.session import Kind, LiveSession
from redline.runs.options import parse_duration

#: RunCommand runs ``redline run`` with these arguments (after ``run``), watched by the
#: session, and returns its exit status.
RunCommand = Callable[[list[str], LiveSession], int]

#: JOIN_S: how long closing the launcher waits for a run it stopped.
JOIN_S = 30.0


class Model(Enum):
    """Model: how the form's load is applied, users (closed) or a rate (open)."""

    CLOSED = "closed"
    OPEN = "open"


@dataclass(frozen=True)
class Form:
    """Form is the start page's form: ``target`` (a URL, or a scenario's ``.py`` file),
    ``model``, ``load`` (users, or requests per second in the open model) and
    ``duration`` (as the CLI spells it, e.g. ``30s``)."""

    target: str
    model: Model
    load: float
    duration: str

    @classmethod
    def of(cls, fields: dict[str, Any]) -> Form:
        """of reads the submitted fields; a bad one is a one-line ConfigError."""
        target = str(fields.get("target") or "").strip()
        if not target:
            raise ConfigError("target: give a URL (http://...) or a scenario file (.py)")
        if target.endswith(".py"):
            if not Path(target).is_file():
                raise ConfigError(f"target: no scenario file {target!r}")
        elif not target.startswith(("http://", "https://")):
            raise ConfigError(f"target: expected http://... or a .py scenario, got {target!r}")
        try:
            model = Model(str(fields.get("model") or "closed"))
        except ValueError:
            raise ConfigError("model: closed or open") from None
        try:
            load = float(fields.get("load") or "")
        except ValueError:
            raise ConfigError(f"load: expected a number, got {fields.get('load')!r}") from None
        if not load > 0 or load != load or load == float("inf"):
            raise ConfigError(f"load: must be > 0, got {fields.get('load')!r}")
        if model is Model.CLOSED and load != int(load):
            raise ConfigError(f"load: users are a whole number, got {fields.get('load')!r}")
        duration = str(fields.get("duration") or "").strip()
        if parse_duration(duration, "duration") <= 0:
            raise ConfigError(f"duration: must be > 0, got {duration!r}")
        return cls(target, model, load, duration)


def command_line(form: Form) -> list[str]:
    """command_line is the ``redline run`` arguments that do what the form asks."""
    load = f"{form.load:g}"
    flag = ["-c", load] if form.model is Model.CLOSED else ["--rate", load]
    return ["run", form.target, *flag, "-d", form.duration]


def shown(argv: list[str]) -> str:
    """shown is the command line as a user types it, watched live (``--web 0``: any free
    port, since the ui itself may hold the usual one)."""
    return shlex.join(["redline", *argv, "--web", "0"])


class Launcher:
    """Launcher serves the start page at ``address`` and starts one run at a time with
    ``run_command``; every run is watched on the same page. A non-loopback address needs
    ``token``, as ``--web`` does."""

    def __init__(
        self,
        address: Address,
        run_command: RunCommand,
        token: str | None = None,
        out: IO[str] | None = None,
    ):
        if not address.loopback and not token:
            raise ConfigError(
                f"redline ui: {address.host}: a non-loopback address needs --web-token TOKEN "
                "(whoever reaches the page can start and stop runs)"
            )
        self._address = address
        self._run_command = run_command
        self._token = token
        self._stop_token = token or secrets.token_urlsafe(16)
        self._out = out or sys.stderr
        self._lock = threading.Lock()
        self._session: LiveSession | None = None
        self._thread: threading.Thread | None = None
        self._server: Server | None = None
        self.url: str | None = None

    def start(self) -> Launcher:
        """start listens and says where."""
        self._server = Server(self._address, self.serve, "redline ui")
        self.url = self._server.url + "/"
        shown_url = self.url + (f"?token={self._token}" if self._token else "")
        print(f"redline: start page at {shown_url}", file=self._out, flush=True)
        return self

    def __enter__(self) -> Launcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def running(self) -> bool:
        """running: a run started from the page has not ended."""
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout: float) -> bool:
        """wait waits for the current run to end (True when none is running)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return not self.running

    def close(self) -> None:
        """close stops a run still going (as its stop button), waits for it and stops
        listening."""
        session = self._session
        if self.running and session is not None:
            session.request_stop()
            self.wait(JOIN_S)
        if self._server is not None:
            self._server.close()
            self._server = None

    # -- the page ----------------------------------------------------------------------------

    def launch(self, form: Form) -> str:
        """launch starts the form's run on its own thread and returns its command line; a
        run already going is a ConfigError."""
        argv = command_line(form)
        with self._lock:
            if self.running:
                raise ConfigError("a run is going: stop it first")
            session = LiveSession(
                kind=Kind.RUN,
                title=f"redline run {form.target}",
                model=form.model.value,
                token=self._token,
                stop_token=self._stop_token,
                out=self._out,
            )
            self._session = session
            self._thread = threading.Thread(
                target=self._run, args=(argv, session), name="redline-ui-run", daemon=True
            )
            self._thread.start()
        print(f"redline: started {shown(argv)}", file=self._out, flush=True)
        return shown(argv)

    def _run(self, argv: list[str], session: LiveSession) -> None:
        """_run runs one command line; a bad one ends the session with its one line."""
        try:
            self._run_command(argv, session)
        except RedlineError as e:
            session.fail(str(e))
        except KeyboardInterrupt:
            pass  # the stop button: the command ended as on Ctrl-C
        except Exception as e:  # a run's bug must not kill the page: say it there
            session.fail(f"{type(e).__name__}: {e}")
        finally:
            session.close(linger=False)

    def serve(self, req: Request) -> Reply | tuple[Watcher, Callable[[], None]]:
        """serve answers the start page's requests; the live ones go to the current run's
        session."""
        from redline.live.page import render_page

        if self._token and not secrets.compare_digest(
            req.query.get("token", req.headers.get("x-redline-token", "")), self._token
        ):
            return Reply(403, b"redline: this page needs ?token=TOKEN (--web-token)\n")
        session = self._session
        if req.path == "/" and req.method == "GET":
            title = session.title if session is not None else "redline"
            page = render_page(
                title, Kind.RUN.value, self._stop_token, form=True, started=session is not None
            )
            return Reply(200, page.encode(), "text/html; charset=utf-8")
        if req.path == "/command" and req.method == "GET":
            # 200 either way: the page previews as the user types, a half-typed form is no
            # failed request.
            return self._answer(
                lambda: {"command": shown(command_line(Form.of(req.query)))}, bad=200
            )
        if req.path == "/start":
            if req.method != "POST":
                return Reply(405, b"POST to start a run\n", headers={"Allow": "POST"})
            if not secrets.compare_digest(req.headers.get("x-redline-stop", ""), self._stop_token):
                return Reply(403, b"redline: the page's token is missing or wrong\n")
            return self._answer(lambda: {"command": self.launch(Form.of(_json(req.body)))}, 202)
        if session is None:
            if req.path == "/events" and req.method == "GET":
                return Reply(404, b"no run yet\n")
            return Reply(404, b"not found\n")
        return session.serve(req)

    @staticmethod
    def _answer(make: Callable[[], dict[str, Any]], status: int = 200, bad: int = 400) -> Reply:
        """_answer is ``make()`` as JSON (``status``), or its ConfigError as
        ``{"error": ...}`` (``bad``)."""
        try:
            body, code = make(), status
        except ConfigError as e:
            body, code = {"error": str(e)}, bad
        return Reply(code, json.dumps(body).encode(), "application/json")


def _json(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        raise ConfigError("the form must be sent as JSON") from None
    if not isinstance(data, dict):
        raise ConfigError("the form must be a JSON object")
    return data
