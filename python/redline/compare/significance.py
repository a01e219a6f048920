"""significance: whether two runs' window samples differ by more than noise.

The rule is benchstat's: a change is reported only when a Mann–Whitney U test on the windows
says the two samples differ (p < ALPHA after a Holm correction across the request names
compared) *and* the change is at least a minimum effect; anything else is "~", no
significant change. How large the change may be is a bootstrap confidence interval
(:mod:`redline.compare.bootstrap`), shown beside it: the test says whether, the interval says
how much, and a change whose interval holds 0 is not called one. The minimum effect matters
because the windows of one run share that run's machine and its state: two runs of one
configuration can differ by a percent or two for reasons no window sees, and with a hundred
windows a side the test would call that real.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from redline.compare.figures import Figure

#: ALPHA is the significance level, after the Holm correction.
ALPHA = 0.05

#: MIN_WINDOWS: fewer windows than this on either side can not reach p < 0.05 with
#: Mann–Whitney (4 + 4 windows give p >= 0.029 at best), so such a figure is not judged.
MIN_WINDOWS = 4

#: MIN_EFFECT is the smallest change called better or worse: a ratio for throughput and
#: latency (5 %), percentage points for the error rate (0.1 pp).
MIN_EFFECT = {f: 0.05 for f in Figure}
MIN_EFFECT[Figure.ERRORS] = 0.001


class Verdict(Enum):
    """Verdict is what a comparison says of one figure."""

    BETTER = "better"
    WORSE = "worse"
    SAME = "~"
    UNKNOWN = "?"


@dataclass(frozen=True)
class Evidence:
    """Evidence is the outcome of testing one figure's windows: the p-value (None when it could
    not be tested: too few windows) and the sign of the shift in the windows' medians, over
    ``n`` windows a side. ``requests`` is set when the figure was judged from the requests
    instead (:mod:`redline.compare.per_request`: too few windows): how many a side."""

    p: float | None
    shift: int
    n: tuple[int, int]
    requests: tuple[int, int] | None = None


def mann_whitney(base: Sequence[float], new: Sequence[float]) -> Evidence:
    """mann_whitney runs a two-sided Mann–Whitney U test on two samples of window figures."""
    n = (len(base), len(new))
    if min(n) < MIN_WINDOWS:
        return Evidence(None, 0, n)
    mb, mn = _median(base), _median(new)
    shift = (mn > mb) - (mn < mb)
    if len(set(base) | set(new)) == 1:
        return Evidence(1.0, 0, n)  # every window the same (an error rate of 0 throughout)
    p = u_test(base, new)
    return Evidence(p if math.isfinite(p) else 1.0, shift, n)


# Hand-rolled: scipy.stats.mannwhitneyu gives the same p (tests/test_compare.py holds the two
# together on random samples, tied and untied, small and large), but importing scipy.stats
# took 1.3 s of the 2 s a compare of two 10-minute results may take (bench/compare.py).


def u_test(x: Sequence[float], y: Sequence[float]) -> float:
    """u_test is the two-sided p-value of the Mann–Whitney U test, as scipy's ``mannwhitneyu``
    computes it by default: exact when one sample has at most 8 values and there are no
    ties, otherwise the normal approximation with the tie correction and the continuity
    correction."""
    n1, n2 = len(x), len(y)
    ranks, ties = _ranks([*x, *y])
    u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    u = max(u1, n1 * n2 - u1)
    if (n1 <= 8 or n2 <= 8) and not any(t > 1 for t in ties):
        p = 2 * _exact_sf(round(u), n1, n2)
    else:
        n = n1 + n2
        tie_term = sum(t**3 - t for t in ties)
        s = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
        z = (u - n1 * n2 / 2 - 0.5) / s if s > 0 else math.inf
        p = math.erfc(z / math.sqrt(2))  # 2 × the normal's survival function at z
    return min(max(p, 0.0), 1.0)


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """_ranks: each value's rank (1-based; tied values share their mean rank) and the sizes
    of the tied groups."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def _exact_sf(u: int, n1: int, n2: int) -> float:
    """_exact_sf is P(U >= u) under the null hypothesis: the share of the C(n1+n2, n1)
    orderings of the two samples whose U is at least u. The counts of U are the coefficients
    of the Gaussian binomial [n1+n2, m]_q = prod over i of (1 - q^(n+i)) / (1 - q^i), with
    m the smaller size and n the larger (a polynomial of degree m·n, built in m steps)."""
    m, n = min(n1, n2), max(n1, n2)
    counts = [1] + [0] * (m * n)
    for i in range(1, m + 1):
        for k in range(len(counts) - 1, n + i - 1, -1):  # times (1 - q^(n+i))
            counts[k] -= counts[k - n - i]
        for k in range(i, len(counts)):  # divided by (1 - q^i): a running sum with stride i
            counts[k] += counts[k - i]
    total = math.comb(n1 + n2, n1)
    return sum(counts[max(u, 0) :]) / total


def holm(ps: Sequence[float | None]) -> list[float | None]:
    """holm adjusts p-values for testing several names at once (Holm–Bonferroni: the i-th
    smallest of m is multiplied by m - i, kept monotone); None stays None."""
    idx = sorted((i for i, p in enumerate(ps) if p is not None), key=lambda i: ps[i] or 0.0)
    m = len(idx)
    out: list[float | None] = [None] * len(ps)
    running = 0.0
    for rank, i in enumerate(idx):
        running = max(running, min(1.0, (m - rank) * float(ps[i] or 0.0)))
        out[i] = running
    return out


def change(figure: Figure, base: float | None, new: float | None) -> float | None:
    """change: new against base, a ratio minus one (percentage points for the error rate);
    None when either is missing or a ratio to zero."""
    if base is None or new is None:
        return None
    if not figure.relative:
        return new - base
    return new / base - 1.0 if base > 0 else None


def verdict(
    figure: Figure,
    delta: float | None,
    t: Evidence,
    p_adjusted: float | None,
    ci: tuple[float, float] | None = None,
) -> Verdict:
    """verdict: better or worse when the windows differ significantly, the change is at
    least the minimum effect, both agree on its direction, and the change's confidence
    interval ``ci`` (when there is one) does not hold 0; "~" otherwise, and "?" when the
    figure could not be tested. The last rule keeps a figure that hangs on one window (a
    stretch's p99 set by a single slow window: the windows' ranks shift, the figure may
    not) from being called a change next to an interval that says it may be none."""
    if p_adjusted is None or delta is None:
        return Verdict.UNKNOWN
    if p_adjusted >= ALPHA or abs(delta) < MIN_EFFECT[figure]:
        return Verdict.SAME
    up = delta > 0
    if t.shift != (1 if up else -1):
        return Verdict.SAME  # the whole-run figure and the windows disagree on the direction
    if ci is not None and ci[0] <= 0.0 <= ci[1]:
        return Verdict.SAME
    return Verdict.BETTER if up == figure.higher_is_better else Verdict.WORSE


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2
