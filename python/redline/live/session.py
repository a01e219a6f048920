"""session: one run or search shown live, in browsers (``--web``) and to Prometheus
(``--prometheus``), from the engine's interval snapshots.

    >>> from redline.live import LiveSession, parse_address
    >>> with LiveSession(web=parse_address("0", "--web")) as live:
    ...     result = redline.run(url, progress=live.progress())
    ...     live.finish(result.data)

The session only listens: it is fed each snapshot (and each judged step of a search) by the
run's own callbacks, and never calls into the engine. The stop button sets a flag; the next
snapshot callback on the run's own thread raises :class:`StopRequested`, a KeyboardInterrupt,
which every caller already treats as Ctrl-C: ``redline.run`` stops the engine and returns the
report of what ran, ``redline find`` keeps the steps that ran. So a stop takes effect at the
next interval, at a point where the run expects a callback to return, never in the middle
of the search's own bookkeeping, and it is raised once.
"""

from __future__ import annotations

import secrets
import sys
import threading
import time
from collections.abc import Callable
from enum import Enum
from typing import IO, Any

from redline.errors import ConfigError
from redline.live.address import Address
from redline.live.events import ChartBook, figures, final_names, step_fields
from redline.live.hub import Hub, Watcher
from redline.live.metrics import Ledger
from redline.live.server import Reply, Request, Server
from redline.report.charts import find_charts, run_charts

Snapshot = dict[str, Any]


class Kind(Enum):
    """Kind: what is shown live, a plain run or a capacity search."""

    RUN = "run"
    FIND = "find"


class Status(Enum):
    """Status: where the run is, as the page shows it."""

    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    DONE = "done"
    FAILED = "failed"


class StopRequested(KeyboardInterrupt):  # noqa: N818  (it is an interrupt, named as one)
    """StopRequested: the web page's stop button, raised in the run's snapshot callback; a
    KeyboardInterrupt so the run ends as on Ctrl-C, with the result of what ran."""


class LiveSession:
    """LiveSession serves one run's live page and metrics while it runs, and the final
    figures (and report) for ``linger_s`` after :meth:`finish`.

    ``web`` and ``prometheus`` are where to listen (either may be None); a non-loopback
    ``web`` address needs ``token``, which every web request must then carry (``?token=``),
    since the page can stop the run. ``name`` labels the run-wide request series, ``model``
    is ``closed`` or ``open``, and ``monitor`` (a :mod:`redline.service.monitor` monitor) gives the
    service's CPU, RSS and fds. ``otlp``: an OpenTelemetry collector's URL to push the
    books to (:mod:`redline.live.otlp`), with ``otlp_attributes`` on every request
    series. ``stop_token`` is what the stop button must send (default:
    ``token``, else a fresh random one; ``redline ui`` passes its page's)."""

    def __init__(
        self,
        *,
        web: Address | None = None,
        prometheus: Address | None = None,
        linger_s: float = 0.0,
        kind: Kind = Kind.RUN,
        title: str = "redline",
        model: str = "closed",
        name: str = "all",
        monitor: Any = None,
        token: str | None = None,
        stop_token: str | None = None,
        otlp: str | None = None,
        otlp_attributes: dict[str, Any] | None = None,
        out: IO[str] | None = None,
    ):
        if web is not None and not web.loopback and not token:
            raise ConfigError(
                f"--web {web.host}:{web.port}: a non-loopback address needs --web-token TOKEN "
                "(whoever reaches the page can stop the run)"
            )
        if linger_s < 0:
            raise ConfigError(f"--linger: must be >= 0, got {linger_s:g}")
        if otlp is not None:
            from redline.live.otlp import endpoint_url

            endpoint_url(otlp)  # a bad URL is refused before the run
        self.kind, self.title, self.model = kind, title, model
        self.monitor = monitor
        self.linger_s = linger_s
        self.ledger = Ledger(name=name)
        self._web_address, self._prom_address = web, prometheus
        self._token = token
        self._stop_token = stop_token or token or secrets.token_urlsafe(16)
        self._error: str | None = None
        self._out = out or sys.stderr
        self._lock = threading.RLock()
        self._hub = Hub()
        self._charts = ChartBook()
        self._timeseries: list[Snapshot] = []
        self._samples: list[dict[str, Any]] = []
        self._steps: list[dict[str, Any]] = []
        self._last: dict[str, Any] = {}
        self._names: list[dict[str, Any]] = []  # the final per-name table (finish)
        self._status = Status.RUNNING
        self._stop = threading.Event()
        self._raised = False
        self._result: dict[str, Any] | None = None
        self._report: Callable[[dict[str, Any]], str] | None = None
        self._report_html: bytes | None = None
        self._servers: list[Server] = []
        self._otlp_endpoint, self._otlp_attributes = otlp, otlp_attributes
        self._otlp: Any = None  # an OtlpExport once started
        self.web_url: str | None = None
        self.metrics_url: str | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> LiveSession:
        """start listens and says where (one line each on ``out``)."""
        try:
            if self._web_address is not None:
                web = Server(self._web_address, self.serve, "--web")
                self._servers.append(web)
                self.web_url = web.url + "/"
                shown = self.web_url + (f"?token={self._token}" if self._token else "")
                print(f"redline: live view at {shown}", file=self._out, flush=True)
            if self._prom_address is not None:
                prom = Server(self._prom_address, self._serve_metrics, "--prometheus")
                self._servers.append(prom)
                self.metrics_url = prom.url + "/metrics"
                print(
                    f"redline: Prometheus metrics at {self.metrics_url}", file=self._out, flush=True
                )
            if self._otlp_endpoint is not None:
                from redline.live.otlp import OtlpExport

                self._otlp = OtlpExport(
                    self.ledger, self._otlp_endpoint, self._otlp_attributes, out=self._out
                ).start()
                print(
                    f"redline: OTLP metrics to {self._otlp.endpoint} "
                    f"every {self._otlp.interval_s:g}s",
                    file=self._out,
                    flush=True,
                )
        except BaseException:
            self.close(linger=False)
            raise
        return self

    def name_methods(self, plan: dict[str, Any] | None) -> None:
        """name_methods tells the OTLP export a scenario's request names' HTTP methods, read
        from its compiled ``plan`` (no-op without --otlp or a plan)."""
        if self._otlp is not None and plan is not None:
            from redline.live.otlp import request_methods

            self._otlp.methods = request_methods(plan)

    def __enter__(self) -> LiveSession:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close(linger=exc[0] is None)

    def close(self, linger: bool = True) -> None:
        """close keeps serving the final figures for ``linger_s`` (when ``linger``; Ctrl-C
        cuts it short), then ends every stream and stops listening."""
        if linger and self.linger_s > 0 and self._servers:
            print(
                f"redline: serving the final figures for {self.linger_s:g}s",
                file=self._out,
                flush=True,
            )
            try:
                time.sleep(self.linger_s)
            except KeyboardInterrupt:
                pass
        if self._otlp is not None:
            self._otlp.close()  # the final figures (finish came first)
            self._otlp = None
        self._hub.close()
        for s in self._servers:
            s.close()
        self._servers.clear()

    # -- what the run tells it ---------------------------------------------------------------

    def snapshot(self, snap: Snapshot, load: float | None = None, phase: str | None = None) -> None:
        """snapshot takes one interval: the books, and while a browser watches, the charts,
        the per-name table and one ``interval`` event. Unwatched, it only keeps the rows: a
        browser that joins is sent the charts and table as they stand then (``_catch_up``),
        so a run nobody watches pays for no chart or table it would throw away."""
        self.ledger.add(snap, vus=load if self.kind is Kind.FIND else None)
        if snap.get("intended_rate") is not None:
            self.model = "open"  # the load axis is req/s, whatever the caller guessed
        row = figures(snap)
        if load is not None:
            row["target"] = load
        service = self._service(float(snap.get("t_s") or 0.0))
        with self._lock:
            self._timeseries.append(row)
            if service is not None:
                self._samples.append(service)
            event = {
                **row,
                "phase": phase,
                "load": load,
                "service": service,
                "totals": self.ledger.totals(),
            }
            self._last = event
            if self._hub.watchers:
                event = {
                    **event,
                    "names": self.ledger.table(),
                    "charts": self._charts.patch(self._chart_list()),
                }
                self._hub.publish("interval", event)

    def step(self, step: Any) -> None:
        """step takes a judged search step: one ``step`` event (and the step-based charts
        change with the next interval)."""
        fields = step_fields(step)
        with self._lock:
            self._steps.append(fields)
            self._hub.publish("step", fields)

    def finish(
        self,
        result: dict[str, Any] | None,
        report: Callable[[dict[str, Any]], str] | None = None,
    ) -> None:
        """finish marks the run ended: the exporter takes the report's exact totals, the
        page shows the end and links ``report(result)`` (rendered when first asked for)."""
        run = result.get("run") if self.kind is Kind.FIND and result is not None else result
        run = run if isinstance(run, dict) else {}
        self.ledger.settle(run)
        names = final_names(run, self.ledger.table())
        with self._lock:
            self._names = names
            self._result, self._report = result, report
            stopped = self._stop.is_set()
            self._status = Status.STOPPED if stopped else Status.DONE
            self._hub.publish("done", self._done())

    def fail(self, message: str) -> None:
        """fail marks the run as never having run (a bad command line): the page says
        ``message``."""
        with self._lock:
            self._error = message
            self._status = Status.FAILED
            self._hub.publish("done", self._done())

    # -- the stop button ---------------------------------------------------------------------

    @property
    def stop_requested(self) -> bool:
        """stop_requested: the stop button was pressed."""
        return self._stop.is_set()

    def request_stop(self) -> None:
        """request_stop asks the run to stop at its next interval (any thread)."""
        with self._lock:
            if self._status is Status.RUNNING:
                self._status = Status.STOPPING
                self._stop.set()
                self._hub.publish("status", {"status": self._status.value})

    def check_stop(self) -> None:
        """check_stop raises StopRequested, once, when a stop was requested: call it on the
        run's own thread, where a callback may end the run."""
        if self._stop.is_set() and not self._raised:
            self._raised = True
            raise StopRequested("stopped from the web page")

    # -- adapters: the run's callbacks -------------------------------------------------------

    def progress(
        self, then: Callable[[Snapshot], None] | None = None
    ) -> Callable[[Snapshot], None]:
        """progress is a ``redline.run`` progress callback: ``then`` (a terminal view), the
        session, then the stop check."""

        def callback(snap: Snapshot) -> None:
            if then is not None:
                then(snap)
            self.snapshot(snap)
            self.check_stop()

        return callback

    def find_callbacks(
        self,
        on_snapshot: Callable[[Snapshot, float, str], None] | None = None,
        on_step: Callable[[Any], None] | None = None,
    ) -> tuple[Callable[[Snapshot, float, str], None], Callable[[Any], None]]:
        """find_callbacks are ``redline.find``'s ``on_snapshot`` and ``on_step`` wrapping the
        given ones (a terminal view); the stop check runs in ``on_snapshot`` only."""

        def snapshot(snap: Snapshot, load: float, phase: str) -> None:
            if on_snapshot is not None:
                on_snapshot(snap, load, phase)
            self.snapshot(snap, load, phase)
            self.check_stop()

        def step(st: Any) -> None:
            if on_step is not None:
                on_step(st)
            self.step(st)

        return snapshot, step

    # -- inside ------------------------------------------------------------------------------

    def _service(self, t_s: float) -> dict[str, Any] | None:
        """_service is the monitor's latest reading on the run's clock (None without one)."""
        latest = self.monitor.latest() if self.monitor is not None else None
        if latest is None:
            return None
        d: dict[str, Any] = latest.to_dict() if hasattr(latest, "to_dict") else dict(latest)
        d.pop("extra", None)
        d["t_s"] = t_s
        return d

    def _chart_list(self) -> list[Any]:
        state = {
            "timeseries": self._timeseries,
            "steps": self._steps,
            "model": self.model,
            "monitor": self._samples,
        }
        return find_charts(state) if self.kind is Kind.FIND else run_charts(state)

    def _done(self) -> dict[str, Any]:
        return {
            "status": self._status.value,
            "totals": self.ledger.totals(),
            "names": self._names,
            "error": self._error,
            "report": "report" if self._report is not None and self._result is not None else None,
            "whole": self._whole(),
        }

    def _whole(self) -> dict[str, Any] | None:
        """_whole: a finished run's headline figures over the whole run (its summary's), for
        the page to show instead of the last interval's, which is often a partial one (a
        stop, the drain after the end) and read "0 req/s" above a table of answers."""
        run = self._result if self.kind is Kind.RUN else None
        if not isinstance(run, dict) or "rps" not in run:
            return None
        lat = run.get("latency_ms") or {}
        return {
            "duration_s": run.get("duration_s"),
            "achieved_rate": run.get("rps"),
            **{f"{k}_ms": lat.get(k) for k in ("p50", "p95", "p99", "p99_9", "max")},
        }

    def _catch_up(self) -> list[tuple[str, Any]]:
        """_catch_up is what a new watcher is sent first (under the lock): the whole
        picture, charts brought up to date (unwatched intervals patched none)."""
        self._charts.patch(self._chart_list())
        state = {
            "kind": self.kind.value,
            "title": self.title,
            "model": self.model,
            "status": self._status.value,
            "last": {**self._last, "names": self.ledger.table()} if self._last else {},
            "steps": self._steps,
            "totals": self.ledger.totals(),
            "charts": self._charts.full(),
        }
        out: list[tuple[str, Any]] = [("state", state)]
        if self._status in (Status.DONE, Status.STOPPED, Status.FAILED):
            out.append(("done", self._done()))
        return out

    def serve(self, req: Request) -> Reply | tuple[Watcher, Callable[[], None]]:
        """serve answers the page's requests (``--web``, or ``redline ui`` during a run)."""
        from redline.live.page import render_page

        if self._token and not secrets.compare_digest(
            req.query.get("token", req.headers.get("x-redline-token", "")), self._token
        ):
            return Reply(403, b"redline: this page needs ?token=TOKEN (--web-token)\n")
        if req.path == "/" and req.method == "GET":
            page = render_page(self.title, self.kind.value, self._stop_token)
            return Reply(200, page.encode(), "text/html; charset=utf-8")
        if req.path == "/events" and req.method == "GET":
            with self._lock:
                watcher = self._hub.subscribe(self._catch_up())
            return watcher, lambda: self._hub.unsubscribe(watcher)
        if req.path == "/stop":
            if req.method != "POST":
                return Reply(405, b"POST to stop the run\n", headers={"Allow": "POST"})
            # A header a cross-site form cannot send: only the page itself can stop the run.
            if not secrets.compare_digest(req.headers.get("x-redline-stop", ""), self._stop_token):
                return Reply(403, b"redline: the stop button's token is missing or wrong\n")
            self.request_stop()
            return Reply(202, b"stopping at the next interval\n")
        if req.path == "/report" and req.method == "GET":
            return self._serve_report()
        if req.path == "/metrics" and req.method == "GET":
            return self._serve_metrics(req)
        return Reply(404, b"not found\n")

    def _serve_report(self) -> Reply:
        with self._lock:
            result, render = self._result, self._report
        if result is None or render is None:
            return Reply(404, b"the report is ready when the run ends\n")
        if self._report_html is None:
            self._report_html = render(result).encode()
        return Reply(200, self._report_html, "text/html; charset=utf-8")

    def _serve_metrics(self, req: Request) -> Reply:
        if req.path != "/metrics":
            return Reply(404, b"the metrics are at /metrics\n")
        from redline.live.metrics import CONTENT_TYPE

        return Reply(200, self.ledger.exposition(), CONTENT_TYPE)
