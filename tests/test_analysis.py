"""Tests for redline.analysis: the numerics on synthetic series whose truth is known (the
answers built from them are in test_analysis_answers.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from redline.analysis import (
    find_knee,
    fit_usl,
    leak_check,
    little_check,
    mser5_cut,
    mser_cut,
    steady_window,
    usl_throughput,
)

RNG_SEED = 20261123


def noisy(values: np.ndarray, rel: float, seed: int = RNG_SEED) -> np.ndarray:
    """noisy multiplies each value by (1 + N(0, rel)), a deterministic seeded noise."""
    return values * (1 + np.random.default_rng(seed).normal(0, rel, len(values)))


# -- USL ------------------------------------------------------------------------------------

USL_CASES = [
    # label, lambda, sigma, kappa, concurrency levels, relative noise
    ("contention and crosstalk", 100.0, 0.05, 0.001, [1, 2, 4, 8, 16, 32, 48, 64], 0.02),
    ("contention only", 250.0, 0.10, 0.0, [1, 2, 4, 8, 16, 32, 64], 0.01),
    ("near-linear", 50.0, 0.005, 0.00005, [1, 5, 10, 20, 40, 80, 160], 0.01),
    ("strong crosstalk", 400.0, 0.02, 0.01, [1, 2, 3, 5, 8, 12, 16, 24], 0.02),
]


@pytest.mark.parametrize("label,lam,sigma,kappa,ns,rel", USL_CASES, ids=[c[0] for c in USL_CASES])
def test_usl_fit_recovers_parameters(label, lam, sigma, kappa, ns, rel):
    n = np.array(ns, dtype=float)
    fit = fit_usl(n, noisy(usl_throughput(n, lam, sigma, kappa), rel))
    assert fit.ok, fit.note
    assert fit.lam == pytest.approx(lam, rel=0.08)
    assert fit.sigma == pytest.approx(sigma, abs=0.02)
    assert fit.kappa == pytest.approx(kappa, rel=0.35, abs=2e-4)
    assert fit.r2 > 0.97
    if kappa > 0:
        true_peak = math.sqrt((1 - sigma) / kappa)
        assert fit.peak_n == pytest.approx(true_peak, rel=0.25)
        assert fit.peak_throughput_rps == pytest.approx(
            float(usl_throughput(true_peak, lam, sigma, kappa)), rel=0.1
        )


def test_usl_fit_without_crosstalk_predicts_no_peak():
    n = np.array([1, 2, 4, 8, 16, 32], dtype=float)
    fit = fit_usl(n, usl_throughput(n, 10.0, 0.2, 0.0))
    assert fit.ok and fit.kappa == pytest.approx(0.0, abs=1e-6)
    assert fit.peak_n is None or fit.peak_n > 500


@pytest.mark.parametrize(
    "label,ns,xs,note",
    [
        ("too few points", [1, 2], [10, 20], "2 load levels"),
        ("repeated levels", [4, 4, 4, 8, 8], [40, 41, 39, 70, 71], "2 load levels"),
        ("empty", [], [], "0 load levels"),
        ("no throughput", [1, 2, 4], [0, 0, 0], "no throughput"),
        ("nan and zero loads dropped", [0, 1, float("nan"), 2], [0, 10, 5, 20], "2 load levels"),
    ],
)
def test_usl_fit_is_graceful_on_bad_data(label, ns, xs, note):
    fit = fit_usl(ns, xs)
    assert not fit.ok
    assert note in fit.note
    with pytest.raises(ValueError):
        fit.predict(1)


def test_usl_curve_follows_fit():
    n = np.array([1, 2, 4, 8, 16], dtype=float)
    fit = fit_usl(n, usl_throughput(n, 100, 0.05, 0.002))
    curve = fit.curve(20, points=5)
    assert len(curve) == 5 and curve[0][0] == 1 and curve[-1][0] == 20
    assert curve[-1][1] == pytest.approx(float(usl_throughput(20, 100, 0.05, 0.002)), rel=0.02)


# -- MSER-5 and steadiness ------------------------------------------------------------------


def warmup_series(warm: int, total: int, level: float = 100.0, rel: float = 0.02) -> list[float]:
    """warmup_series rises linearly from 10 % of ``level`` for ``warm`` points, then holds
    ``level`` with noise."""
    ramp = np.linspace(0.1 * level, level, warm, endpoint=False)
    flat = noisy(np.full(total - warm, level), rel)
    return [*ramp, *flat]


@pytest.mark.parametrize(
    "label,series,batch,lo,hi",
    [
        # On stationary data MSER may cut anywhere in the first half (harmless, only wasteful).
        ("flat: cut within first half", list(noisy(np.full(60, 100.0), 0.02)), 5, 0, 30),
        ("15-point warm-up", warmup_series(15, 80), 5, 15, 20),
        ("30-point warm-up", warmup_series(30, 100), 5, 30, 35),
        ("short series: no cut", warmup_series(10, 18), 5, 0, 0),
        ("per-interval batches", warmup_series(6, 30), 1, 5, 10),
        ("cut never past half", warmup_series(45, 60), 5, 0, 30),
    ],
)
def test_mser_cut(label, series, batch, lo, hi):
    cut = mser_cut(series, batch)
    assert lo <= cut <= hi
    assert cut % batch == 0


def test_mser5_cut_is_batch_five():
    s = warmup_series(20, 100)
    assert mser5_cut(s) == mser_cut(s, 5)
    with pytest.raises(ValueError):
        mser_cut(s, 0)


def window_of(counts, inflight, mean_ms=10.0, interval_s=1.0):
    """window_of is a judged window of interval snapshots: ``counts`` answers in each interval
    with a mean latency of ``mean_ms`` and ``inflight`` requests in flight on average."""
    return [
        {"t_s": (i + 1) * interval_s, "requests": c, "mean_ms": mean_ms, "in_flight_mean": f}
        for i, (c, f) in enumerate(zip(counts, inflight, strict=True))
    ]


# Little's law at 1,000 answers a second of 10 ms: 10 requests in flight.
STEADY_CASES = [
    ("flat", [1000, 1010, 990, 1005, 995, 1000], [10.0] * 6, 4, True),
    ("too few windows", [1000, 1010, 990], [10.0] * 3, 4, False),
    ("counts ramping", [600, 700, 800, 900, 1000, 1100], [10.0] * 6, 4, False),
    ("counts erratic", [400, 1600, 500, 1500, 450, 1550], [10.0] * 6, 4, False),
    ("in flight growing (a queue)", [1000] * 6, [6.0, 8, 10, 12, 14, 16], 4, False),
    ("Little broken (a backlog draining)", [1000] * 6, [30.0] * 6, 4, False),
    ("small counts within Poisson noise", [3, 5, 2, 6, 4, 4, 3, 5], [0.04] * 8, 4, True),
]


@pytest.mark.parametrize("label,counts,inflight,min_windows,steady", STEADY_CASES)
def test_steady_window(label, counts, inflight, min_windows, steady):
    snaps = window_of(counts, inflight)
    assert steady_window(snaps, counts, float(len(snaps)), min_windows) is steady, label


# -- knee and power -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "label,loads,throughput,lo,hi",
    [
        # saturating at 40 users: X = min(N, 40) * 10, with a little slope after
        ("hard knee at 40", [5, 10, 20, 30, 40, 50, 60, 80], None, 30, 50),
        ("linear: no knee", [1, 2, 3, 4, 5, 6], [10, 20, 30, 40, 50, 60], None, None),
        ("too few points", [1, 2], [10, 20], None, None),
    ],
)
def test_find_knee(label, loads, throughput, lo, hi):
    if throughput is None:
        throughput = [min(n, 40) * 10 + 0.2 * max(n - 40, 0) for n in loads]
    knee = find_knee(loads, throughput)
    if lo is None:
        assert knee.load is None
    else:
        assert lo <= knee.load <= hi
        assert knee.throughput_rps == throughput[loads.index(knee.load)]


def test_knee_on_usl_curve_is_before_peak():
    n = np.array([1, 2, 4, 8, 16, 24, 32, 48, 64], dtype=float)
    x = usl_throughput(n, 100, 0.03, 0.0005)
    knee = find_knee(n, x)
    assert knee.load is not None and 4 <= knee.load <= math.sqrt(0.97 / 0.0005)


# -- Little's law and leaks -----------------------------------------------------------------


@pytest.mark.parametrize(
    "label,inflight,rps,mean_ms,ok",
    [
        ("holds exactly", 50.0, 1000.0, 50.0, True),
        ("within 20 %", 55.0, 1000.0, 50.0, True),
        ("generator fell behind: too few in flight", 30.0, 1000.0, 50.0, False),
        ("lost completions: too many in flight", 80.0, 1000.0, 50.0, False),
        ("idle", 0.0, 0.0, 0.0, True),
        ("stuck: in flight, nothing completes", 10.0, 0.0, 0.0, False),
        ("light load: under one request apart is within the slack", 0.3, 100.0, 1.43, True),
        ("light load: two requests apart is not", 2.2, 100.0, 1.43, False),
    ],
)
def test_little_check(label, inflight, rps, mean_ms, ok):
    c = little_check(inflight, rps, mean_ms)
    assert c.ok is ok
    assert c.expected == pytest.approx(rps * mean_ms / 1000)


@pytest.mark.parametrize(
    "label,values,min_rise,suspected",
    [
        ("fds climbing 2/s", [100 + 2 * t for t in range(60)], 10, True),
        ("fds flat", [100] * 60, 10, False),
        ("fds noisy but flat", list(noisy(np.full(60, 100.0), 0.05)), 10, False),
        ("rss falling", [500e6 - 1e6 * t for t in range(60)], 16 * 2**20, False),
        ("tiny rise below threshold", [100 + 0.05 * t for t in range(60)], 10, False),
        ("too few points", [1, 50, 100], 10, False),
        ("gaps are skipped", [None if t % 3 == 0 else 100 + 2 * t for t in range(60)], 10, True),
    ],
)
def test_leak_check(label, values, min_rise, suspected):
    t = list(range(len(values)))
    trend = leak_check(t, values, min_rise=min_rise)
    assert trend.suspected is suspected
    if label == "fds climbing 2/s":
        assert trend.slope_per_s == pytest.approx(2.0)
        assert trend.p_value < 1e-6
