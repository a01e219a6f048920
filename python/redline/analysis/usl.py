"""usl: the Universal Scalability Law fitted to throughput against concurrency.

Gunther's USL models throughput at concurrency N as X(N) = λN / (1 + σ(N−1) + κN(N−1)):
λ is the throughput of one user, σ the share of the work that serialises (contention) and κ
the cost of keeping N workers coherent (crosstalk). With κ > 0 throughput peaks at
N* = sqrt((1−σ)/κ) and falls beyond it; that peak is the fit's prediction of the capacity.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

#: MIN_POINTS: distinct concurrency levels needed for a three-parameter fit to mean anything.
MIN_POINTS = 3


def usl_throughput(n: Any, lam: float, sigma: float, kappa: float) -> Any:
    """usl_throughput is X(N) = λN / (1 + σ(N−1) + κN(N−1)), for a number or an array."""
    n = np.asarray(n, dtype=float)
    return lam * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


@dataclass(frozen=True)
class UslFit:
    """UslFit is the fitted law and what it predicts. ``ok`` is False (and ``note`` says why)
    when there were too few points or the fit failed; the parameters are then None.
    ``peak_n`` and ``peak_throughput_rps`` are None when κ is 0 (no peak: throughput levels
    off at λ/σ instead). ``r2`` is the coefficient of determination on the fitted points."""

    ok: bool
    points: int
    lam: float | None = None
    sigma: float | None = None
    kappa: float | None = None
    r2: float | None = None
    peak_n: float | None = None
    peak_throughput_rps: float | None = None
    note: str = ""

    def predict(self, n: Any) -> Any:
        """predict is the fitted X(N) (requires ``ok``)."""
        if not self.ok or self.lam is None or self.sigma is None or self.kappa is None:
            raise ValueError(f"no USL fit: {self.note}")
        return usl_throughput(n, self.lam, self.sigma, self.kappa)

    def curve(self, n_max: float, points: int = 50) -> list[list[float]]:
        """curve samples the fitted law on [1, n_max] as ``[[n, x], ...]`` for a chart."""
        ns = np.linspace(min(1.0, n_max), max(n_max, 1.0), points)
        return [
            [round(float(n), 4), round(float(x), 4)]
            for n, x in zip(ns, self.predict(ns), strict=True)
        ]

    def to_dict(self) -> dict[str, Any]:
        """to_dict is the fit as the JSON result carries it."""
        return asdict(self)


def fit_usl(load: Sequence[float], throughput: Sequence[float]) -> UslFit:
    """fit_usl fits the USL to (concurrency, throughput) points by bounded least squares
    (scipy's ``curve_fit``; λ, σ, κ ≥ 0, σ ≤ 1). It never raises on bad data: too few
    distinct levels, no throughput, or a failed fit come back as ``ok=False`` with a note."""
    # Imported here, not at the top: scipy.optimize takes most of a second to import, which
    # every reader of the analysis package (compare, the reports) would pay.
    from scipy.optimize import OptimizeWarning, curve_fit

    n = np.asarray(load, dtype=float)
    x = np.asarray(throughput, dtype=float)
    if n.shape != x.shape:
        raise ValueError("load and throughput must have the same length")
    keep = np.isfinite(n) & np.isfinite(x) & (n > 0)
    n, x = n[keep], x[keep]
    distinct = len(np.unique(n))
    if distinct < MIN_POINTS:
        return UslFit(False, distinct, note=f"{distinct} load levels, need {MIN_POINTS}")
    if not np.any(x > 0):
        return UslFit(False, distinct, note="no throughput to fit")
    # λ starts as the best per-user throughput seen at the lightest loads.
    order = np.argsort(n)
    lam0 = float(max(x[order][:2] / n[order][:2]))
    best: tuple[float, np.ndarray] | None = None
    for sigma0, kappa0 in ((0.05, 1e-4), (0.3, 1e-3), (0.01, 1e-6)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", OptimizeWarning)
                params, _ = curve_fit(
                    usl_throughput,
                    n,
                    x,
                    p0=(lam0, sigma0, kappa0),
                    bounds=([0.0, 0.0, 0.0], [np.inf, 1.0, np.inf]),
                    maxfev=20000,
                )
        except (RuntimeError, ValueError):
            continue
        sse = float(np.sum((x - usl_throughput(n, *params)) ** 2))
        if best is None or sse < best[0]:
            best = (sse, params)
    if best is None:
        return UslFit(False, distinct, note="the least-squares fit did not converge")
    sse, (lam, sigma, kappa) = best
    sst = float(np.sum((x - x.mean()) ** 2))
    r2 = 1.0 - sse / sst if sst > 0 else (1.0 if sse < 1e-12 else 0.0)
    peak_n = peak_x = None
    # A peak under one user is no peak (the law's denominator turns negative there): a fit
    # bent that hard by a step that measured nothing says only that throughput did not grow.
    if kappa > 1e-12 and sigma < 1 and (1 - sigma) / kappa >= 1.0:
        peak_n = math.sqrt((1 - sigma) / kappa)
        peak_x = float(usl_throughput(peak_n, lam, sigma, kappa))
    return UslFit(
        True,
        distinct,
        lam=float(lam),
        sigma=float(sigma),
        kappa=float(kappa),
        r2=float(r2),
        peak_n=peak_n,
        peak_throughput_rps=peak_x,
        note="" if r2 >= 0.9 else f"poor fit (R² {r2:.2f}): the law does not describe these steps",
    )
