"""outcomes: what a stretch of run delivered, counted the one way every comparison uses.

Two figures are easy to get subtly wrong, so ``compare`` reads them here, counted by
:mod:`redline.analysis.outcome` (the one definition the search, the steps and the answers use):

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

from redline.analysis import outcome as judged
from redline.analysis.outcome import ANSWERED_FAILURES, Meter

__all__ = ["ANSWERED_FAILURES", "Outcomes", "outcomes"]


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
    def ends(self) -> judged.Outcomes:
        """ends: these counts as :mod:`redline.analysis.outcome` counts outcomes (good answers
        and failed requests, each request once), the one definition the search, the steps,
        the answers and the live watches judge by."""
        return judged.Outcomes(good=max(self.passed, 0), failed=self.errors, refused=self.rejected)

    @property
    def total(self) -> int:
        """total: every outcome, each request once (answered, or failed without an answer)."""
        return self.ends.total

    @property
    def goodput(self) -> float | None:
        """goodput: passed answers per second (None over no time)."""
        return self.passed / self.seconds if self.seconds > 0 else None

    @property
    def error_rate(self) -> float | None:
        """error_rate: failed outcomes / all outcomes, 0..1, by the one formula
        (:attr:`redline.analysis.outcome.Outcomes.error_rate`, which find judges its steps
        by); None with no outcome, where a comparison has no figure (the search says 0)."""
        ends = self.ends
        return ends.error_rate if ends.total > 0 else None


def outcomes(snapshots: Iterable[dict[str, Any]], seconds: float) -> Outcomes:
    """outcomes adds up interval snapshots (``requests``, ``errors``, ``errors_by_class``)
    that together cover ``seconds`` of run."""
    # One definition of an outcome for every figure redline gives (redline.analysis.outcome).
    snaps = list(snapshots)
    ends = Meter().total(snaps)
    requests = sum(int(s.get("requests") or 0) for s in snaps)
    return Outcomes(requests, ends.failed, ends.refused + ends.failed_checks, seconds)
