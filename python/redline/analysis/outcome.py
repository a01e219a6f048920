"""outcome: what a request's outcome counts as, defined once for every figure redline gives.

The engine counts every response in ``requests`` (an HTTP 503 included) and every failure in
``errors`` by class; a response with a bad status (class ``status``) or one that failed a
scenario check (class ``check``) is therefore in both. Read naively, a refused request counts
twice: ``errors / (requests + errors)`` said 49 % where a limiter refused 96 %, and a
throughput of "13k req/s" counted refusals the service never served. Here:

- an *outcome* is one request's end: an answer or a transport failure, each request once:
  ``outcomes = requests + errors − status − check``;
- a *good* outcome is an answer that passed (status and checks): ``good = requests − status −
  check``; **goodput**, the only figure called throughput, counts those;
- the **error rate** is failed outcomes ÷ all outcomes: ``errors / outcomes``.

:class:`Meter` says what one unit of throughput is: a request (default), a scenario iteration
(``iterations``), the requests of one name (``submit``), or the answers of one name that said
one value at its tally path (``status:SUCCEEDED``: the tasks the users saw complete), so a task
queue answers in tasks/s, or the work the service itself counted (``prometheus:URL#SERIES``: a
counter of completed work on its /metrics, read into each interval's snapshot as ``work``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: ANSWERED_FAILURES are the error classes of requests that got an answer (counted in
#: ``requests`` as well as in ``errors``).
ANSWERED_FAILURES = ("status", "check")


@dataclass(frozen=True)
class Outcomes:
    """Outcomes are one span's request ends: ``good`` answers, ``failed`` requests (every
    class), of which ``refused`` answers (an error status) and ``failed_checks``."""

    good: int = 0
    failed: int = 0
    refused: int = 0
    failed_checks: int = 0

    @property
    def total(self) -> int:
        """total: every outcome, each request once (good + failed)."""
        return self.good + self.failed

    @property
    def error_rate(self) -> float:
        """error_rate: failed outcomes ÷ all outcomes (0 with none)."""
        return self.failed / self.total if self.total else 0.0

    def __add__(self, o: Outcomes) -> Outcomes:
        return Outcomes(
            self.good + o.good,
            self.failed + o.failed,
            self.refused + o.refused,
            self.failed_checks + o.failed_checks,
        )


def outcomes(requests: int, errors: int, by_class: Mapping[str, Any] | None) -> Outcomes:
    """outcomes reads one span's counters (``requests``, ``errors``, ``errors_by_class`` as the
    engine reports them) into :class:`Outcomes`."""
    by = by_class or {}
    # A gRPC status other than OK is an error status too (a gRPC run's statuses are gRPC's).
    status = int(by.get("status", 0) or 0) + int(by.get("grpc", 0) or 0)
    check = int(by.get("check", 0) or 0)
    good = max(int(requests) - status - check, 0)
    return Outcomes(good, int(errors), status, check)


def error_rate(requests: int, errors: int, by_class: Mapping[str, Any] | None) -> float:
    """error_rate is failed outcomes ÷ all outcomes for one span's counters."""
    return outcomes(requests, errors, by_class).error_rate


@dataclass(frozen=True)
class Meter:
    """Meter is what one unit of throughput is: ``requests`` (every request), ``iterations``
    (a scenario's iterations: completed is good, failed is failed), a request name (that
    name's requests only, from the snapshot's per-name figures), a name and one value of
    its tally (``value``: that name's answers whose tally path said it are good, its failed
    requests failed), or ``work``: the service's own counter of completed work (``source``,
    ``prometheus:URL#SERIES``; each snapshot's ``work.completed``); ``label`` names the unit
    (``tasks`` for a task queue's ``submit``)."""

    what: str = "requests"
    label: str | None = None
    value: str | None = None
    source: str | None = None

    @classmethod
    def parse(cls, text: str) -> Meter:
        """parse reads ``requests``, ``iterations``, ``NAME`` or ``NAME:VALUE``, each with an
        optional ``=LABEL`` (``status:SUCCEEDED=tasks``); it checks the spelling only (which
        names a scenario has is the caller's to check); ``prometheus:URL#SERIES[=LABEL]`` is
        the work meter (the series is the caller's to check)."""
        if text.startswith("prometheus:"):
            source, eq, label = text.rpartition("=")
            if not eq or not label.isidentifier() or "#" not in source:
                source, label = text, ""
            return cls("work", label or None, None, source)
        spec, _, label = text.partition("=")
        what, colon, value = spec.partition(":")
        if not what:
            raise ValueError(f"{text}: a name before ':' or '='")
        if label and not label.isidentifier():
            raise ValueError(f"{text}: the label after '=' must be a word")
        if colon and (not value or what in ("requests", "iterations")):
            raise ValueError(f"{text}: ':' takes a request name before it and a value after it")
        return cls(what, label or None, value if colon else None)

    @property
    def spec(self) -> str:
        """spec is what the meter counts, as :meth:`parse` reads it (without the label)."""
        if self.source is not None:
            return self.source
        return self.what if self.value is None else f"{self.what}:{self.value}"

    @property
    def unit(self) -> str:
        """unit: how a rate of this meter is written (``req/s``, ``iterations/s``, ``submit/s``,
        ``SUCCEEDED/s``, or ``tasks/s`` for a meter given a label)."""
        if self.label:
            return f"{self.label}/s"
        if self.what == "requests":
            return "req/s"
        return f"{self.value or self.what}/s"

    @property
    def errors(self) -> Meter:
        """errors is the meter whose failures make the error rate: this one, but the
        requests' for the work meter (the service's counter counts completions only; the
        requests that failed are the failures the load saw)."""
        return Meter() if self.what == "work" else self

    def count(self, snap: Mapping[str, Any]) -> Outcomes:
        """count is the snapshot's outcomes in this meter's unit (zero where the snapshot does
        not carry the figure: an interval with no iteration ended, or a name not yet seen)."""
        if self.what == "requests":
            return outcomes(
                int(snap.get("requests", 0)),
                int(snap.get("errors", 0)),
                snap.get("errors_by_class"),
            )
        if self.what == "work":
            done = (snap.get("work") or {}).get("completed")
            return Outcomes(int(done or 0), 0)
        if self.what == "iterations":
            it = snap.get("iterations") or {}
            return Outcomes(int(it.get("completed", 0)), int(it.get("failed", 0)))
        named = (snap.get("names") or {}).get(self.what) or {}
        own = outcomes(
            int(named.get("requests", 0)),
            int(named.get("errors", 0)),
            named.get("errors_by_class") or {},
        )
        if self.value is None:
            return own
        # A passing answer that said another value (QUEUED while polling) is neither good
        # nor failed in this unit: only the value counted is a unit of throughput.
        said = int((named.get("tally") or {}).get(self.value, 0))
        return Outcomes(said, own.failed, own.refused, own.failed_checks)

    def total(self, snaps: Iterable[Mapping[str, Any]]) -> Outcomes:
        """total adds the outcomes of several snapshots."""
        out = Outcomes()
        for s in snaps:
            out = out + self.count(s)
        return out
