"""per_request: a latency figure judged from the requests when a stretch has too few windows.

The window test (:mod:`significance`) needs MIN_WINDOWS windows a side; a smoke run of 3 s at
1 s intervals has 3. Its histograms still hold every request's latency, so the figure can be
judged by a bootstrap over the requests: each side's merged histogram is resampled (a
multinomial draw of as many requests as it holds, which is drawing requests with
replacement), each resample's percentile read as the whole stretch's is, and the change's
distribution gives a 95 % interval and a two-sided p (twice the share of resampled changes
on the far side of 0). Requests are less independent than windows (a stall slows several in
a row), so this is the weaker evidence: it is used only where the windows cannot be, it needs
MIN_TAIL requests beyond the percentile on each side, and the table says "requests" beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from redline.compare.figures import Figure
from redline.compare.histogram import Decoded, HistogramError, decode
from redline.compare.significance import ALPHA
from redline.compare.windows import Stretch, Window

#: MIN_TAIL: the fewest requests beyond a percentile on each side for it to be judged from
#: the requests (a p99 needs 1,000 requests a side, a p99.9 10,000): with fewer, the
#: percentile is one or two requests and its resamples say little.
MIN_TAIL = 10

#: RESAMPLES: bootstrap resamples a side.
RESAMPLES = 2000

#: SEED seeds the resampling, so the same results give the same verdict.
SEED = 35


@dataclass(frozen=True)
class Judged:
    """Judged is a latency figure judged from the requests: the two-sided bootstrap ``p``,
    the sign of the change (``shift``), the change's 95 % interval ``ci`` and the requests
    each side held."""

    p: float
    shift: int
    ci: tuple[float, float]
    requests: tuple[int, int]


def needed(figure: Figure) -> int:
    """needed: how many requests a side ``figure`` needs to be judged from the requests."""
    return math.ceil(MIN_TAIL / (1.0 - float(figure.quantile or 0.0)) - 1e-9)


def requests(stretch: Stretch) -> Decoded | None:
    """requests: the stretch's latency counts (its snapshots' histograms merged and read);
    None without histograms."""
    if not stretch.snapshots:
        return None
    merged = Window(stretch.snapshots, stretch.span_s).histogram
    if merged is None:
        return None
    try:
        return decode(merged)
    except HistogramError:
        return None


def judge(figure: Figure, base: Decoded | None, new: Decoded | None) -> Judged | None:
    """judge: ``figure`` (a latency) judged from both sides' requests; None when a side has
    no histogram, the layouts differ, or a side holds fewer than :func:`needed` requests."""
    if figure.quantile is None or base is None or new is None or base.layout != new.layout:
        return None
    n = (base.total, new.total)
    if min(n) < needed(figure):
        return None
    columns = sorted({i for i, _ in base.counts} | {i for i, _ in new.counts})
    where = {i: k for k, i in enumerate(columns)}
    # A bucket's value is the highest it holds, as the windows' percentiles read it.
    bounds = np.array([base.layout.value_at(i + 1) - 1 for i in columns], dtype=float) / 1000.0
    rng = np.random.default_rng(SEED)
    values = []
    for side in (base, new):
        p = np.zeros(len(columns))
        for i, c in side.counts:
            p[where[i]] = c
        total = int(p.sum())
        drawn = rng.multinomial(total, p / total, size=RESAMPLES)
        own = _quantile(p[None, :], float(figure.quantile), bounds)[0]
        values.append((own, _quantile(drawn, float(figure.quantile), bounds)))
    (own_a, fa), (own_b, fb) = values
    changes = fb / fa - 1.0
    own = float(own_b / own_a - 1.0)
    tail = ALPHA / 2
    lo, hi = (float(x) for x in np.quantile(changes, [tail, 1.0 - tail]))
    # The share of resamples on the far side of 0, counted as (k + 1) / (R + 1): a bootstrap
    # cannot tell a p below one in RESAMPLES.
    far = min(int(np.sum(changes <= 0.0)), int(np.sum(changes >= 0.0)))
    p_two = min(1.0, 2.0 * (far + 1) / (RESAMPLES + 1))
    return Judged(p_two, (own > 0) - (own < 0), (lo, hi), n)


def _quantile(counts: np.ndarray, q: float, bounds: np.ndarray) -> np.ndarray:
    """_quantile reads quantile ``q`` of each row of bucket ``counts`` (the value of the
    bucket holding the ceil(q·n)-th request, as HdrHistogram does)."""
    pooled = np.cumsum(counts, axis=1)
    rank = np.maximum(1.0, np.ceil(q * pooled[:, -1]))
    k = np.minimum((pooled < rank[:, None]).sum(axis=1), len(bounds) - 1)
    return np.asarray(bounds[k])
