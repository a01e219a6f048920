"""work: the work behind the answer, as the service counts it.

A task queue answers a submit at once and does the work later; a status poll sees a task
done only when it happens to ask, so completions counted by the polls arrive in waves (the
demo read 260 ± 104 tasks/s where its truth is 300). The service counts its completions
exactly on its /metrics. ``--throughput prometheus:URL#SERIES`` names that counter and
``--backlog prometheus:URL#SERIES`` a gauge of the work waiting (a queue's depth):
:class:`WorkProbe` scrapes them once per interval of the load, as each interval's snapshot
arrives, and the snapshot carries ``work``: ``{"completed": N, "backlog": D}`` (the counter's
growth since the last interval, the gauge now). A Prometheus counter is cumulative, so the
growths telescope: a step's count is exact to the scrape's timing at its two ends.

Scraping in a thread of its own, the probe stamps each scrape with when the service answered
it and reads the counter *at* a time (interpolated between the two scrapes around it), one
scrape period behind the interval's end: a scrape answered late (a busy service, a busy
machine) no longer moves its interval's work into the next one (the demo read 9 then 60
tasks in two half-second intervals of a service completing 60 a second, and a step's
± came out at 35 %).
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from redline.errors import ConfigError
from redline.service.exposition import Pages, Scraped, fetch, parse, scrape
from redline.service.monitor import parse_selector

#: Scraped, parse and scrape are read from here too (the demo, the tests).
__all__ = ["SCHEME", "Scraped", "Series", "WorkProbe", "parse", "scrape"]

#: SCHEME: the one source a series is read from today.
SCHEME = "prometheus:"


@dataclass(frozen=True)
class Series:
    """Series is one Prometheus series to read: the ``url`` it is exposed at and a selector
    (``name`` or ``name{label="value",...}``); the samples that match are summed (a counter
    of tasks by type and status, selected by status, adds its types)."""

    url: str
    selector: str
    name: str
    labels: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str, flag: str) -> Series:
        """parse reads ``prometheus:URL#SELECTOR`` (``flag`` names the option in errors)."""
        if not text.startswith(SCHEME):
            raise ConfigError(f"{flag} {text}: expected prometheus:URL#SERIES")
        url, hash_, selector = text[len(SCHEME) :].partition("#")
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"{flag} {text}: the URL must be http(s)://...")
        if not hash_ or not selector:
            raise ConfigError(
                f"{flag} {text}: name the series after '#'"
                ' (e.g. #taskqueue_tasks_finished_total{status="SUCCEEDED"})'
            )
        try:
            name, labels = parse_selector(selector)
        except ConfigError as e:
            raise ConfigError(f"{flag} {text}: {e}") from None
        return cls(url, selector, name, labels)

    @property
    def spec(self) -> str:
        """spec is the series as :meth:`parse` reads it."""
        return f"{SCHEME}{self.url}#{self.selector}"

    def value(self, scraped: Scraped) -> float | None:
        """value is the sum of the matching samples: 0 when none matched but the endpoint
        declares the series (a labelled counter has no sample until its first count), None
        when it does not know the name at all."""
        hits = [
            v
            for n, lb, v in scraped.samples
            if n == self.name and all(lb.get(k) == want for k, want in self.labels.items())
        ]
        if hits:
            return float(sum(hits))
        return 0.0 if self.name in scraped.names else None


class WorkProbe:
    """WorkProbe reads the work counter (``done``) and the backlog gauge (``backlog``), one
    scrape per endpoint per :meth:`read`. :meth:`prime` takes the counter's first reading
    before the load starts; each :meth:`read` then gives the counter's growth since the last
    reading that succeeded (a counter that went down was reset: a restarted service, and its
    new value is its growth, as Prometheus' ``rate`` takes it). A scrape that fails gives
    None for that interval, and the next one carries the growth of both (``spans``: how
    many intervals it covers), so a step's sum stays exact. Started (:meth:`start`), it
    scrapes in a thread of its own, and a read takes the counter two scrape periods before
    now, interpolated between the stamped scrapes around that time (None: no scrape came
    after the last read's time), and the backlog of the latest scrape (None: none since the
    last read)."""

    def __init__(
        self,
        done: Series | None,
        backlog: Series | None = None,
        timeout_s: float = 2.0,
        fetch: Callable[[str, float], Scraped] | None = None,
    ):
        if done is None and backlog is None:
            raise ConfigError("a work probe needs --throughput or --backlog")
        self.done = done
        self.backlog = backlog
        self.timeout_s = timeout_s
        #: fetch reads an endpoint (default: fetched, and parsed once per page shape).
        self.fetch = fetch or self._scrape
        self._pages: dict[str, Pages] = {}
        self.failures = 0
        self.last_error = ""
        self._last: float | None = None
        self._missed = 0
        self._lock = threading.Lock()
        self._latest: dict[str, Scraped] | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._period_s = 0.5
        #: stamped: reads take the counter at a time from the stamped scrapes of the
        #: thread (:meth:`start`; a test drives :meth:`scrape_once` itself on its own clock).
        self.stamped = False
        self.clock: Callable[[], float] = time.monotonic
        #: _history: the counter at each scrape of the thread, (when it was answered, its
        #: value with any reset undone), oldest first; _raw: the last raw value (a reset
        #: shows as a fall from it) and _offset: what resets took away.
        self._history: list[tuple[float, float]] = []
        self._raw: float | None = None
        self._offset = 0.0
        #: _at and _read_value: the time the last read took the counter at, and its value.
        self._at: float | None = None
        self._read_value: float | None = None

    def _scrape(self, url: str, timeout_s: float) -> Scraped:
        """_scrape: the endpoint's page, its values read off the last page's shape."""
        return self._pages.setdefault(url, Pages()).parse(fetch(url, timeout_s))

    def _samples(self) -> dict[str, Scraped]:
        urls = {s.url for s in (self.done, self.backlog) if s is not None}
        return {u: self.fetch(u, self.timeout_s) for u in sorted(urls)}

    def prime(self) -> None:
        """prime reads the counter once (before the load): the zero of the first growth. A
        counter the endpoint does not expose is a mistake in the command, said at once."""
        began = self.clock()
        try:
            got = self._samples()
        except Exception as e:  # noqa: BLE001 (any failure to reach it is the user's to see)
            raise ConfigError(f"cannot read {self._urls()}: {_why(e)}") from None
        answered = (began + self.clock()) / 2
        for series in (self.done, self.backlog):
            if series is not None and series.value(got[series.url]) is None:
                raise ConfigError(f"{series.spec}: no such series at {series.url}")
        if self.done is not None:
            self._last = self.done.value(got[self.done.url])
            with self._lock:
                self._history = []
                self._raw, self._offset = None, 0.0
                self._record(answered, got)
                self._at, self._read_value = self._history[-1]

    def start(self, period_s: float) -> WorkProbe:
        """start scrapes in a thread of its own, one scrape after another at most every
        ``period_s``: :meth:`read` then takes the latest reading at once instead of waiting
        for a scrape (a service overloaded by the search answers its /metrics late, and the
        search must not wait on it)."""
        self._period_s = period_s
        self.stamped = True
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="redline-work", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """stop ends the scraping thread (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout_s + 1.0)
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            began = self.clock()
            self.scrape_once()
            self._stop.wait(max(0.0, self._period_s - (self.clock() - began)))

    def scrape_once(self) -> None:
        """scrape_once is one scrape of the started probe's thread: the reading kept as the
        latest, and the counter stamped with the time the service answered."""
        began = self.clock()
        try:
            got = self._samples()
        except Exception as e:  # noqa: BLE001 (a failed scrape must not end the search)
            with self._lock:
                self.failures += 1
                self.last_error = _why(e)
            return
        # The service read its counter between the request and the answer: the middle of
        # the two is its time, to half the scrape's length.
        answered = (began + self.clock()) / 2
        with self._lock:
            self._latest = got
            self._record(answered, got)

    def _record(self, when: float, got: dict[str, Scraped]) -> None:
        """_record keeps the counter's value at ``when`` (a reset undone: a counter that went
        down restarted from zero, and what it had counted stays counted). Under the lock."""
        if self.done is None:
            return
        raw = self.done.value(got[self.done.url])
        if raw is None:
            return
        if self._raw is not None and raw < self._raw:
            self._offset += self._raw
        self._raw = raw
        if self._history and when <= self._history[-1][0]:
            return
        self._history.append((when, raw + self._offset))
        # Kept: what a read may still interpolate in (reads lag by two scrape periods).
        horizon = when - 20 * max(self._period_s, 0.05)
        cut = bisect.bisect_left(self._history, (horizon,)) - 1
        if cut > 0:
            del self._history[:cut]

    def _counter_at(self, when: float) -> tuple[float, float] | None:
        """_counter_at is (t, value): the counter at ``when``, interpolated between the
        scrapes around it, or at the last scrape when none came after ``when`` yet (t is
        then that scrape's time); None before any scrape. Under the lock."""
        h = self._history
        if not h:
            return None
        if when >= h[-1][0]:
            return h[-1]
        i = bisect.bisect_right(h, (when, float("inf")))
        if i == 0:
            return h[0]
        (t0, v0), (t1, v1) = h[i - 1], h[i]
        return when, v0 + (v1 - v0) * (when - t0) / (t1 - t0)

    def _urls(self) -> str:
        return " and ".join(sorted({s.url for s in (self.done, self.backlog) if s is not None}))

    def _fresh(self) -> dict[str, Scraped] | None:
        """_fresh: a new reading: a scrape now without the thread, else the thread's latest
        reading, None when it has none newer than the last one read."""
        if not self.stamped:
            return self._samples()
        with self._lock:
            got, self._latest = self._latest, None
        return got

    def read(self) -> dict[str, Any]:
        """read is one interval's ``work``: ``completed`` (the counter's growth, None when
        the scrape failed), ``spans`` (intervals it covers, when more than one) and
        ``backlog`` (the gauge now, None when it failed)."""
        out: dict[str, Any] = {}
        try:
            got = self._fresh()
        except Exception as e:  # noqa: BLE001 (a failed scrape must not end the search)
            self.failures += 1
            self.last_error = _why(e)
            got = None
        if self.done is not None:
            grew = self._interpolated() if self.stamped else self._grew(got)
            out["completed"] = grew
            if grew is None:
                self._missed += 1
            elif self._missed:
                out["spans"] = self._missed + 1
                self._missed = 0
        if self.backlog is not None:
            out["backlog"] = self.backlog.value(got[self.backlog.url]) if got else None
        return out

    def _grew(self, got: dict[str, Scraped] | None) -> int | None:
        """_grew: the counter's growth since the last reading that had it (unthreaded: the
        scrape made now); None without one."""
        now = self.done.value(got[self.done.url]) if got and self.done else None
        if now is None or self._last is None:
            if now is not None:
                self._last = now
            return None
        grew = now - self._last if now >= self._last else now
        self._last = now
        return int(round(grew))

    def _interpolated(self) -> int | None:
        """_interpolated: the started probe's growth of the counter from where the last read
        took it to two scrape periods before now, interpolated between the scrapes around
        that time (see the module's text); None when no scrape came after the last read's
        time (the next read carries both)."""
        with self._lock:
            got = self._counter_at(self.clock() - 2 * self._period_s)
            if got is None or self._at is None or self._read_value is None or got[0] <= self._at:
                return None
            grew = round(got[1]) - round(self._read_value)
            self._at, self._read_value = got
        return int(grew)


def _why(e: BaseException) -> str:
    reason = getattr(e, "reason", None)
    return str(reason or e) or type(e).__name__
