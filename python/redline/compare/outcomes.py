"""outcomes: what a stretch of run delivered, counted the one way every comparison uses.

Two figures are easy to get subtly wrong, so they live here and nowhere else in ``compare``:

- **goodput** is the answers that passed per second. The engine's ``requests`` counts every
  answered request, including those that failed their status (4xx/5xx) or a scenario check,
  so those are taken out: ``requests - errors_by_class.status - errors_by_class.check``.
- **error rate** is failed outcomes over all outcomes, each request counted once. A request
  that failed its status or check is in both ``requests`` and ``errors``; a transport failure
  (connect, timeout, reset …) is only in ``errors``. So the outcomes are
  ``requests + errors - status - check`` and the rate is ``errors`` over that.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: ANSWERED_FAILURES are the error classes whose requests were answered (and so are also
#: counted in ``requests``): a bad status and a failed scenario check.
ANSWERED_FAILURES = ("status", "check")


@dataclass(frozen=True)
class Outcomes:
    """Outcomes counts what a stretch of run delivered over ``seconds`` of wall time:
    ``requests`` answered, ``errors`` failed (of any class) and ``rejected``, the answered
    requests among the failures (status and check)."""

    requests: int
    errors: int
    rejected: int
    seconds: float

    @property
    def passed(self) -> int:
        """passed: answers that passed (neither a bad status nor a failed check)."""
        return self.requests - self.rejected

    @property
    def total(self) -> int:
        """total: every outcome, each request once (answered, or failed without an answer)."""
        return self.requests + self.errors - self.rejected

    @property
    def goodput(self) -> float | None:
        """goodput: passed answers per second (None over no time)."""
        return self.passed / self.seconds if self.seconds > 0 else None

    @property
    def error_rate(self) -> float | None:
        """error_rate: failed outcomes / all outcomes, 0..1 (None with no outcome)."""
        return self.errors / self.total if self.total > 0 else None


def outcomes(snapshots: Iterable[dict[str, Any]], seconds: float) -> Outcomes:
    """outcomes adds up interval snapshots (``requests``, ``errors``, ``errors_by_class``)
    that together cover ``seconds`` of run."""
    requests = errors = rejected = 0
    for s in snapshots:
        requests += int(s.get("requests") or 0)
        errors += int(s.get("errors") or 0)
        by_class = s.get("errors_by_class") or {}
        rejected += sum(int(by_class.get(k) or 0) for k in ANSWERED_FAILURES)
    return Outcomes(requests, errors, rejected, seconds)
