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
"""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from redline.errors import ConfigError
from redline.service.monitor import parse_selector

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


@dataclass(frozen=True)
class Scraped:
    """Scraped is one read of an endpoint: its samples (name, labels, value) and every series
    name it declares (a family's samples' names, a counter's ``_total`` among them, also
    for a family with no sample yet)."""

    samples: list[tuple[str, dict[str, str], float]]
    names: frozenset[str] = frozenset()
    #: counters: the sample names of the families typed counter (postgres_exporter's have no
    #: ``_total`` suffix).
    counters: frozenset[str] = frozenset()


def parse(text: str) -> Scraped:
    """parse reads Prometheus text exposition with prometheus_client's own parser."""
    from prometheus_client.parser import text_string_to_metric_families

    samples: list[tuple[str, dict[str, str], float]] = []
    names: set[str] = set()
    counters: set[str] = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        if family.type == "counter":
            names.add(f"{family.name}_total")
        for s in family.samples:
            names.add(s.name)
            if family.type == "counter" and not s.name.endswith("_created"):
                counters.add(s.name)
            samples.append((s.name, dict(s.labels), float(s.value)))
    return Scraped(samples, frozenset(names), frozenset(counters))


def scrape(url: str, timeout_s: float) -> Scraped:
    """scrape fetches a Prometheus text endpoint and parses it."""
    with urllib.request.urlopen(url, timeout=timeout_s) as r:  # noqa: S310 (http(s) checked)
        return parse(r.read().decode("utf-8", errors="replace"))


class WorkProbe:
    """WorkProbe reads the work counter (``done``) and the backlog gauge (``backlog``), one
    scrape per endpoint per :meth:`read`. :meth:`prime` takes the counter's first reading
    before the load starts; each :meth:`read` then gives the counter's growth since the last
    reading that succeeded (a counter that went down was reset: a restarted service, and its
    new value is its growth, as Prometheus' ``rate`` takes it). A scrape that fails gives
    None for that interval, and the next one carries the growth of both (``spans``: how
    many intervals it covers), so a step's sum stays exact. Started (:meth:`start`), it
    scrapes in a thread of its own and a read takes the latest reading (None: no reading
    since the last read)."""

    def __init__(
        self,
        done: Series | None,
        backlog: Series | None = None,
        timeout_s: float = 2.0,
        fetch: Callable[[str, float], Scraped] = scrape,
    ):
        if done is None and backlog is None:
            raise ConfigError("a work probe needs --throughput or --backlog")
        self.done = done
        self.backlog = backlog
        self.timeout_s = timeout_s
        self.fetch = fetch
        self.failures = 0
        self.last_error = ""
        self._last: float | None = None
        self._missed = 0
        self._lock = threading.Lock()
        self._latest: dict[str, Scraped] | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._period_s = 0.5

    def _samples(self) -> dict[str, Scraped]:
        urls = {s.url for s in (self.done, self.backlog) if s is not None}
        return {u: self.fetch(u, self.timeout_s) for u in sorted(urls)}

    def prime(self) -> None:
        """prime reads the counter once (before the load): the zero of the first growth. A
        counter the endpoint does not expose is a mistake in the command, said at once."""
        try:
            got = self._samples()
        except Exception as e:  # noqa: BLE001 (any failure to reach it is the user's to see)
            raise ConfigError(f"cannot read {self._urls()}: {_why(e)}") from None
        for series in (self.done, self.backlog):
            if series is not None and series.value(got[series.url]) is None:
                raise ConfigError(f"{series.spec}: no such series at {series.url}")
        if self.done is not None:
            self._last = self.done.value(got[self.done.url])

    def start(self, period_s: float) -> WorkProbe:
        """start scrapes in a thread of its own, one scrape after another at most every
        ``period_s``: :meth:`read` then takes the latest reading at once instead of waiting
        for a scrape (a service overloaded by the search answers its /metrics late, and the
        search must not wait on it)."""
        self._period_s = period_s
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
            began = time.monotonic()
            try:
                got = self._samples()
            except Exception as e:  # noqa: BLE001 (a failed scrape must not end the search)
                with self._lock:
                    self.failures += 1
                    self.last_error = _why(e)
            else:
                with self._lock:
                    self._latest = got
            self._stop.wait(max(0.0, self._period_s - (time.monotonic() - began)))

    def _urls(self) -> str:
        return " and ".join(sorted({s.url for s in (self.done, self.backlog) if s is not None}))

    def _fresh(self) -> dict[str, Scraped] | None:
        """_fresh: a new reading: a scrape now without the thread, else the thread's latest
        reading, None when it has none newer than the last one read."""
        if self._thread is None:
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
        if got is None:
            self._missed += 1
            if self.done is not None:
                out["completed"] = None
            if self.backlog is not None:
                out["backlog"] = None
            return out
        if self.done is not None:
            now = self.done.value(got[self.done.url])
            if now is None or self._last is None:
                out["completed"] = None
                self._missed += 1
            else:
                grew = now - self._last if now >= self._last else now
                out["completed"] = int(round(grew))
                if self._missed:
                    out["spans"] = self._missed + 1
                self._missed = 0
            if now is not None:
                self._last = now
        if self.backlog is not None:
            out["backlog"] = self.backlog.value(got[self.backlog.url])
        return out


def _why(e: BaseException) -> str:
    reason = getattr(e, "reason", None)
    return str(reason or e) or type(e).__name__
