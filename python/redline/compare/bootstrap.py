"""bootstrap: how large a change may be, a confidence interval from resampling windows.

The verdict says *whether* a figure changed (:mod:`significance`); the interval says *by how
much*, e.g. "+12.0 % [+8.1, +16.2]". Each side's windows are resampled with replacement (a
bootstrap over windows, which are near-independent where single requests are not), and each
resample's figure is worked out exactly as the whole stretch's is: goodput as passed answers
over seconds, the error rate as failures over outcomes, and a percentile from the merged
latency counts of the windows drawn (snapshots without histograms: the request-weighted mean
of their own percentiles, as :func:`redline.compare.windows.figures` falls back to). So the
interval is of the very change the table prints, and holds it. The change of each pair of
resamples (a ratio minus one, points for the error rate) gives the distribution; its central
95 % is the interval, moved onto the change of the whole stretches (which also count a
run's last, cut-short interval). The generator is seeded: the same results give the same
interval.

The windows' latency counts are read from the engine's encoded HdrHistograms by
:func:`redline.compare.histogram.decode`, onto one set of bucket columns shared by both sides;
one matrix product per side then pools every resample's counts at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from redline import window
from redline.compare.counting import outcomes
from redline.compare.figures import LATENCIES, Figure
from redline.compare.histogram import HistogramError, Layout, decode
from redline.compare.significance import ALPHA, MIN_WINDOWS
from redline.compare.windows import Window

#: CONFIDENCE is the interval's coverage, the verdict's ALPHA's complement.
CONFIDENCE = 1.0 - ALPHA

#: RESAMPLES is how many times each side's windows are resampled: the interval's ends then
#: move by a small fraction of its width from one seed to another.
RESAMPLES = 2000

#: SEED seeds the resampling, so the same results always give the same interval.
SEED = 15


@dataclass(frozen=True)
class Side:
    """Side is one result's windows as columns: per window its seconds, passed answers,
    outcomes and failures, and either its latency ``counts`` over the shared bucket
    columns (µs values in ``bounds``) or, without histograms, its ``requests`` and its
    snapshots' request-weighted percentiles (``own``)."""

    seconds: np.ndarray
    passed: np.ndarray
    total: np.ndarray
    errors: np.ndarray
    counts: np.ndarray | None
    requests: np.ndarray
    own: dict[Figure, np.ndarray]


def intervals(
    base: Sequence[Window],
    new: Sequence[Window],
    *,
    centres: Mapping[Figure, float | None] | None = None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> dict[Figure, tuple[float, float] | None]:
    """intervals: each figure's CONFIDENCE interval of the change from ``base``'s windows to
    ``new``'s, in the change's units (a ratio minus one; points for the error rate). None for
    a figure with fewer than MIN_WINDOWS windows a side, or one that no resample could give
    on both sides (a base of 0 for a ratio, no answers at all).

    ``centres`` are the changes the table prints, of the whole stretches: they count the
    intervals no whole window holds (a run's last, cut-short one), which can move a short
    run's figure by a few percent. Each interval is moved onto its centre, keeping its
    proportions about the windows' own change (a scaling for a ratio, a shift for points),
    so the interval stands around the change beside it."""
    if min(len(base), len(new)) < MIN_WINDOWS:
        return {f: None for f in Figure}
    a, b, bounds = _sides(base, new)
    rng = np.random.default_rng(seed)
    fa = _resampled(a, _weights(rng, resamples, len(base)), bounds)
    fb = _resampled(b, _weights(rng, resamples, len(new)), bounds)
    oa = _resampled(a, np.ones((1, len(base))), bounds)
    ob = _resampled(b, np.ones((1, len(new))), bounds)
    out: dict[Figure, tuple[float, float] | None] = {}
    for f in Figure:
        changes = _change(f, fa[f], fb[f])
        changes = changes[np.isfinite(changes)]
        if len(changes) < resamples // 2:
            out[f] = None
            continue
        tail = (1.0 - CONFIDENCE) / 2
        lo, hi = (float(x) for x in np.quantile(changes, [tail, 1.0 - tail]))
        own = float(_change(f, oa[f], ob[f])[0])
        centre = (centres or {}).get(f)
        if centre is not None and np.isfinite(own):
            if f.relative and own > -1.0:
                scale = (1.0 + centre) / (1.0 + own)
                lo, hi = (1.0 + lo) * scale - 1.0, (1.0 + hi) * scale - 1.0
            elif not f.relative:
                lo, hi = lo + centre - own, hi + centre - own
        out[f] = (lo, hi)
    return out


def _change(f: Figure, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """_change: the change from x to y, as :func:`redline.compare.significance.change`."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(y / x - 1.0 if f.relative else y - x)


def _weights(rng: np.random.Generator, resamples: int, n: int) -> np.ndarray:
    """_weights: how often each of ``n`` windows is drawn in each resample (rows sum to n)."""
    drawn = rng.integers(0, n, size=(resamples, n)) + n * np.arange(resamples)[:, None]
    return np.bincount(drawn.ravel(), minlength=resamples * n).reshape(resamples, n).astype(float)


def _sides(base: Sequence[Window], new: Sequence[Window]) -> tuple[Side, Side, np.ndarray | None]:
    """_sides reads both sides' windows; the latency counts go onto the bucket columns either
    side uses (None when a snapshot has no histogram or the layouts differ)."""
    decoded = [_decoded(base), _decoded(new)]
    columns: list[int] = []
    layout: Layout | None = None
    if all(d is not None for d in decoded):
        layouts = {lay for d in decoded if d is not None for lay, _ in d if lay is not None}
        if len(layouts) == 1:
            layout = layouts.pop()
            columns = sorted({i for d in decoded if d is not None for _, c in d for i in c})
    sides = []
    for windows, d in zip((base, new), decoded, strict=True):
        counts = None
        if layout is not None and d is not None:
            where = {i: k for k, i in enumerate(columns)}
            counts = np.zeros((len(windows), len(columns)))
            for w, (_, c) in enumerate(d):
                for i, n in c.items():
                    counts[w, where[i]] = n
        sides.append(_side(windows, counts))
    bounds = None
    if layout is not None:
        # A bucket's value is the highest it holds, as HdrHistogram's value_at_quantile says.
        bounds = np.array([layout.value_at(i + 1) - 1 for i in columns], dtype=float)
    return sides[0], sides[1], bounds


def _decoded(windows: Sequence[Window]) -> list[tuple[Layout | None, dict[int, int]]] | None:
    """_decoded: each window's latency counts by bucket index (its merged histogram); None
    when a window's snapshots lack histograms or one cannot be read."""
    out: list[tuple[Layout | None, dict[int, int]]] = []
    for w in windows:
        if not any(int(s.get("requests") or 0) for s in w.snapshots):
            out.append((None, {}))  # nothing answered: no counts, and no layout to agree with
            continue
        if w.histogram is None:
            return None
        try:
            d = decode(w.histogram)
        except HistogramError:
            return None
        out.append((d.layout, dict(d.counts)))
    return out


def _side(windows: Sequence[Window], counts: np.ndarray | None) -> Side:
    o = [outcomes(w.snapshots, w.seconds) for w in windows]
    requests = [sum(int(s.get("requests") or 0) for s in w.snapshots) for w in windows]
    own = {
        f: np.array([_nan(window.weighted(w.snapshots, f.snapshot_key)) for w in windows])
        for f in LATENCIES
    }
    return Side(
        seconds=np.array([x.seconds for x in o], dtype=float),
        passed=np.array([x.passed for x in o], dtype=float),
        total=np.array([x.total for x in o], dtype=float),
        errors=np.array([x.errors for x in o], dtype=float),
        counts=counts,
        requests=np.array(requests, dtype=float),
        own=own,
    )


def _resampled(
    side: Side, weights: np.ndarray, bounds: np.ndarray | None
) -> dict[Figure, np.ndarray]:
    """_resampled: each figure of each resample (a row of ``weights``), NaN where it has none."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = {
            Figure.RPS: (weights @ side.passed) / (weights @ side.seconds),
            Figure.ERRORS: (weights @ side.errors) / (weights @ side.total),
        }
        if side.counts is not None and bounds is not None:
            pooled = np.cumsum(weights @ side.counts, axis=1)
            total = pooled[:, -1] if pooled.shape[1] else np.zeros(len(weights))
            for f in LATENCIES:
                rank = np.maximum(1.0, np.ceil(float(f.quantile or 0.0) * total))
                k = np.minimum((pooled < rank[:, None]).sum(axis=1), max(len(bounds) - 1, 0))
                values = bounds[k] / 1000.0 if len(bounds) else np.full(len(weights), np.nan)
                out[f] = np.where(total > 0, values, np.nan)
        else:
            for f in LATENCIES:
                x = np.nan_to_num(side.own[f])
                w = weights * side.requests * np.isfinite(side.own[f])
                out[f] = (w @ x) / w.sum(axis=1)
    return out


def _nan(x: float | None) -> float:
    """_nan is ``x``, NaN for None (a window figure the arrays keep as missing)."""
    return float("nan") if x is None else x
