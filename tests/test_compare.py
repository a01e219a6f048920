"""Tests for redline.compare: figures counted once (outcomes), the verdict on synthetic
interval data with known truth, Holm across names, the bootstrap interval, the --fail-on gate
and the u test against scipy's. (Reading results, bad input and end-to-end comparisons of real
runs against the target server are in test_compare_runs.py.)"""

from __future__ import annotations

import gzip
import json
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from redline.compare import (
    Comparison,
    Document,
    Figure,
    Kind,
    Stretch,
    Verdict,
    bootstrap,
    compare_stretches,
    failures,
    figures,
    outcomes,
    parse_rule,
    parse_rules,
    render_markdown,
    render_text,
    unjudged,
)
from redline.compare.significance import holm, u_test
from redline.compare.windows import cut
from redline.errors import ConfigError
from test_steps import hdr

# -- outcomes: goodput and error rate --------------------------------------------------------


@pytest.mark.parametrize(
    "label, snap, goodput, error_rate",
    [
        ("all good", {"requests": 100, "errors": 0}, 100.0, 0.0),
        # 10 answered with a 5xx: in requests and in errors; 100 outcomes, 90 passed.
        (
            "bad status",
            {"requests": 100, "errors": 10, "errors_by_class": {"status": 10}},
            90.0,
            0.1,
        ),
        # 5 failed checks and 20 connection resets (never answered): 120 outcomes.
        (
            "check and reset",
            {"requests": 100, "errors": 25, "errors_by_class": {"check": 5, "reset": 20}},
            95.0,
            25 / 120,
        ),
        ("nothing", {"requests": 0, "errors": 0}, 0.0, None),
    ],
)
def test_outcomes_count_each_request_once(label, snap, goodput, error_rate):
    o = outcomes([snap], 1.0)
    assert o.goodput == pytest.approx(goodput), label
    assert o.error_rate == (None if error_rate is None else pytest.approx(error_rate)), label


@pytest.mark.parametrize(
    "snaps",
    [
        [{"requests": 100, "errors": 0}],
        [{"requests": 100, "errors": 10, "errors_by_class": {"status": 10}}],
        # Transport errors (never answered) with refusals and failed checks, over intervals.
        [
            {"requests": 80, "errors": 25, "errors_by_class": {"check": 5, "reset": 20}},
            {"requests": 40, "errors": 37, "errors_by_class": {"status": 30, "timeout": 7}},
        ],
        [{"requests": 0, "errors": 12, "errors_by_class": {"connect": 12}}],
    ],
)
def test_compare_and_find_give_the_same_error_rate_for_the_same_counts(snaps):
    # One formula (redline.analysis.outcome): failed outcomes over all outcomes, transport
    # errors included, each request counted once, whether compare or find reads the counts.
    from redline.analysis.outcome import error_rate
    from redline.find.steps import aggregate_step

    requests = sum(s["requests"] for s in snaps)
    errors = sum(s["errors"] for s in snaps)
    by_class: dict[str, int] = {}
    for s in snaps:
        for k, v in (s.get("errors_by_class") or {}).items():
            by_class[k] = by_class.get(k, 0) + v
    expected = error_rate(requests, errors, by_class)
    assert outcomes(snaps, 1.0).error_rate == pytest.approx(expected)
    assert aggregate_step(snaps)["error_rate"] == pytest.approx(expected)


# -- synthetic interval data -----------------------------------------------------------------


def synthetic(
    seed: int, n: int = 30, rps: float = 1000.0, p99: float = 50.0, noise: float = 0.03
) -> Stretch:
    """synthetic: n one-second snapshots whose figures scatter by ``noise`` (relative) around
    the given throughput and p99 (p50 at a fifth of p99), with no histogram, so each window's
    percentiles are its interval's own."""
    rng = random.Random(seed)

    def jitter(x: float) -> float:
        return x * (1.0 + rng.gauss(0.0, noise))

    snaps = []
    for i in range(n):
        q99 = jitter(p99)
        snaps.append(
            {
                "t_s": float(i + 1),
                "requests": round(jitter(rps)),
                "errors": 0,
                "p50_ms": q99 / 5,
                "p90_ms": q99 / 2,
                "p99_ms": q99,
                "p99_9_ms": q99 * 1.5,
            }
        )
    return Stretch(snaps)


def verdicts(base: Stretch, new: Stretch) -> dict[Figure, Verdict]:
    rows = compare_stretches({"all": base}, {"all": new}, window_s=1.0)
    return {r.figure: r.verdict for r in rows}


@pytest.mark.parametrize(
    "label, new_seed, new_kwargs, expected",
    [
        ("identical runs", 1, {}, {}),
        ("20 % slower p99, low noise", 2, {"p99": 60.0, "noise": 0.01}, {"p99": "worse"}),
        ("20 % faster throughput", 2, {"rps": 1200.0}, {"rps": "better"}),
        ("2 % within 3 % noise", 2, {"p99": 51.0}, {}),
    ],
)
def test_verdicts_on_synthetic_data(label, new_seed, new_kwargs, expected):
    base = synthetic(1, noise=new_kwargs.get("noise", 0.03))
    got = verdicts(base, synthetic(new_seed, **new_kwargs))
    want = {f: Verdict.SAME for f in got}
    for name, v in expected.items():
        f = figures.parse_figure(name)
        want[f] = Verdict(v)
        if f is Figure.P99:  # p50, p90 and p99.9 moved with p99
            want.update({Figure.P50: Verdict(v), Figure.P90: Verdict(v), Figure.P99_9: Verdict(v)})
    assert got == want, label


def test_noise_alone_is_never_a_change():
    """Two runs of one configuration (same distribution, different seeds) come out "~" on
    every figure for every seed; the test alone (p<0.05, no minimum effect) errs at most
    about as often as its level says, 1 in 20."""
    flagged, small_p = 0, 0
    for seed in range(20):
        rows = compare_stretches(
            {"all": synthetic(100 + seed)}, {"all": synthetic(200 + seed)}, window_s=1.0
        )
        flagged += sum(r.verdict is not Verdict.SAME for r in rows)
        small_p += next(r for r in rows if r.figure is Figure.P99).p < 0.05  # type: ignore[operator]
    assert flagged == 0
    assert small_p <= 1


#: RECORDED: two 60 s runs of one server (the target answering in 20 ms, 16 connections, 0.5 s
#: intervals with their histograms), recorded by tests/data/same_server.py.
RECORDED = Path(__file__).resolve().parent / "data" / "same-server.json.gz"


def test_the_same_server_twice_is_no_change_on_recorded_intervals():
    """Two runs of the same server, recorded (real intervals, the machine's noise in them):
    20 fixed draws of a 20 s stretch from each run, each compared in 2 s windows (10 a
    side), come out "~" on every figure in at least 19 of the 20. The data and the seeds are
    fixed, so the count is too: the test is exact, not flaky."""
    doc = json.loads(gzip.decompress(RECORDED.read_bytes()))
    a, b = ([s for s in run if not s.get("warmup")] for run in doc["runs"])
    assert len(a) >= 100 and len(b) >= 100 and all(s.get("histogram") for s in a + b)
    span = 40  # intervals of 0.5 s
    # The second run's answers cut by a fifth: the same draws must see that goodput fell.
    slower = [{**s, "requests": round(0.8 * s["requests"])} for s in b]
    rng = random.Random(2026)
    quiet, flagged, fell = 0, [], 0
    for _ in range(20):
        i, j = rng.randrange(len(a) - span), rng.randrange(len(b) - span)
        base = {"all": Stretch(a[i : i + span])}
        rows = compare_stretches(base, {"all": Stretch(b[j : j + span])}, window_s=2.0)
        assert len(rows) == 6 and all(r.evidence.n == (10, 10) for r in rows)
        changed = [(r.figure.value, r.verdict.value) for r in rows if r.verdict is not Verdict.SAME]
        quiet += not changed
        flagged += changed
        cut_rows = compare_stretches(base, {"all": Stretch(slower[j : j + span])}, window_s=2.0)
        fell += any(r.figure is Figure.RPS and r.verdict is Verdict.WORSE for r in cut_rows)
    assert quiet >= 19, flagged
    assert fell == 20


def test_too_few_windows_are_not_judged():
    rows = compare_stretches(
        {"all": synthetic(1, n=3)}, {"all": synthetic(2, n=3, p99=100.0)}, window_s=1.0
    )
    assert {r.verdict for r in rows} == {Verdict.UNKNOWN}


def with_histograms(seed: int, n: int, scale: float = 1.0, per_s: int = 1200) -> Stretch:
    """with_histograms: n one-second snapshots of ``per_s`` requests each, with histograms,
    latencies drawn from one distribution (a 4 ms floor, an exponential tail of mean 1 ms)
    times ``scale``: a known p99 for the requests to judge."""
    rng = random.Random(seed)
    snaps = []
    for i in range(n):
        values = [round(1000 * scale * (4.0 + rng.expovariate(1.0))) for _ in range(per_s)]
        q = sorted(values)
        snaps.append(
            {
                "t_s": float(i + 1),
                "requests": per_s,
                "errors": 0,
                "p50_ms": q[per_s // 2] / 1000,
                "p90_ms": q[per_s * 9 // 10] / 1000,
                "p99_ms": q[per_s * 99 // 100] / 1000,
                "p99_9_ms": q[-1] / 1000,
                "histogram": hdr(values),
            }
        )
    return Stretch(snaps)


@pytest.mark.parametrize(
    "label, scale, verdict",
    [("25 % slower", 1.25, Verdict.WORSE), ("the same", 1.0, Verdict.SAME)],
)
def test_too_few_windows_judge_a_latency_from_the_requests(label, scale, verdict):
    """3+3 windows cannot be tested; 3,600 requests a side with histograms can: a p99 25 %
    higher is worse, the same distribution drawn again is no change, and the goodput (no
    requests to resample) stays unjudged."""
    rows = compare_stretches(
        {"all": with_histograms(1, 3)}, {"all": with_histograms(2, 3, scale)}, window_s=1.0
    )
    got = {r.figure: r for r in rows}
    assert got[Figure.P99].verdict is verdict, label
    assert got[Figure.P99].evidence.requests == (3600, 3600)
    assert got[Figure.P99].evidence.n == (3, 3)
    assert got[Figure.P50].verdict is verdict, label
    assert got[Figure.RPS].verdict is Verdict.UNKNOWN
    # p99.9 needs 10,000 requests beyond which 10 lie: 3,600 are too few to judge it.
    assert got[Figure.P99_9].verdict is Verdict.UNKNOWN
    if verdict is Verdict.WORSE:
        lo, hi = got[Figure.P99].ci  # type: ignore[misc]
        assert 0.10 < lo < 0.25 < hi < 0.40


def test_a_gated_figure_that_cannot_be_judged_fails_the_gate():
    """Two 3-window runs without histograms, the p99 doubled: the gate says it cannot judge
    (it returned [] and passed), and lets it pass only when unjudged figures are allowed."""
    base, new = synthetic(1, n=3), synthetic(2, n=3, p99=100.0)
    c = Comparison(_doc(base), _doc(new), compare_stretches({"all": base}, {"all": new}, 1.0))
    rules = parse_rules(["p99:+10%", "rps:-5%"])
    assert failures(rules, c) == [
        "cannot judge p99: 3+3 windows, need 4 (or 1000 requests a side with histograms);"
        " run longer or use --interval",
        "cannot judge rps: 3+3 windows, need 4; run longer or use --interval",
    ]
    assert unjudged(rules, c) == failures(rules, c)
    assert failures(rules, c, allow_unjudged=True) == []


@pytest.mark.parametrize(
    "label, ps, adjusted",
    [
        ("one test", [0.01], [0.01]),
        ("three", [0.01, 0.04, 0.03], [0.03, 0.06, 0.06]),
        ("capped at 1", [0.6, 0.5], [1.0, 1.0]),
        ("untested stays None", [None, 0.02, 0.04], [None, 0.04, 0.04]),
    ],
)
def test_holm(label, ps, adjusted):
    assert holm(ps) == pytest.approx(adjusted), label


@pytest.mark.parametrize("names, verdict", [(1, Verdict.WORSE), (7, Verdict.SAME)])
def test_holm_across_request_names(names, verdict):
    """Five windows a side fully separated give p = 0.0079: significant alone, and still
    after Holm among 6 names (x6 = 0.048), but not among 7 (x7 = 0.056)."""
    base = {f"n{i}": synthetic(10 + i, n=5) for i in range(names)}
    new = {f"n{i}": synthetic(10 + i, n=5) for i in range(names)}
    new["n0"] = synthetic(99, n=5, p99=80.0)
    rows = compare_stretches(base, new, window_s=1.0)
    row = next(r for r in rows if r.group == "n0" and r.figure is Figure.P99)
    assert row.evidence.p == pytest.approx(0.0079, abs=1e-4)
    assert row.verdict is verdict


# -- the bootstrap interval ------------------------------------------------------------------


def cis(base: Stretch, new: Stretch, **kwargs: Any) -> dict[Figure, tuple[float, float] | None]:
    return bootstrap.intervals(cut(base, 1.0), cut(new, 1.0), **kwargs)


@pytest.mark.parametrize(
    "label, new_kwargs, figure, truth",
    [
        ("20 % more throughput", {"rps": 1200.0}, Figure.RPS, 0.2),
        ("20 % slower p99", {"p99": 60.0}, Figure.P99, 0.2),
        ("10 % faster p50", {"p99": 45.0}, Figure.P50, -0.1),
    ],
)
def test_the_interval_holds_a_known_change_and_not_zero(label, new_kwargs, figure, truth):
    """Twenty pairs of runs whose truth differs by ``truth`` (3 % noise a window, seeds fixed):
    the 95 % interval holds the truth in at least 18 of 20 (the level says 19), never holds 0,
    and is a few percent wide."""
    held = 0
    for seed in range(20):
        lo, hi = cis(synthetic(100 + seed), synthetic(200 + seed, **new_kwargs))[figure] or (0, 0)
        held += lo <= truth <= hi
        assert not lo <= 0.0 <= hi and hi - lo < 0.06, (label, seed, lo, hi)
    assert held >= 18, label


def test_windows_scaled_by_a_known_factor_give_an_interval_around_it():
    base = synthetic(1)
    slower = Stretch([{**s, "p99_ms": 1.25 * s["p99_ms"]} for s in base.snapshots])
    lo, hi = cis(base, slower)[Figure.P99] or (0.0, 0.0)
    assert lo < 0.25 < hi and lo > 0.2, (lo, hi)


def test_identical_samples_give_an_interval_around_zero():
    same = synthetic(1)
    got = cis(same, same)
    for f, ci in got.items():
        assert ci is not None and ci[0] <= 0.0 <= ci[1], f
    rows = compare_stretches({"all": same}, {"all": same}, window_s=1.0)
    assert {r.verdict for r in rows} == {Verdict.SAME}
    assert all(r.ci is not None and r.ci[0] <= 0.0 <= r.ci[1] for r in rows)


def test_the_interval_is_reproducible_and_holds_zero_for_noise():
    """Seeded: the same windows give the same interval. Two runs of one configuration (20 seed
    pairs): the p99's 95 % interval holds 0 in at least 18 of 20 (the level says 19)."""
    a, b = synthetic(1), synthetic(2)
    assert cis(a, b) == cis(a, b)
    assert cis(a, b) != cis(a, b, seed=16)
    held = 0
    for seed in range(20):
        lo, hi = cis(synthetic(100 + seed), synthetic(200 + seed))[Figure.P99] or (1.0, 1.0)
        held += lo <= 0.0 <= hi
    assert held >= 18


@pytest.mark.parametrize(
    "label, delta, p, shift, ci, expected",
    [
        ("all agree: worse", 0.2, 0.01, 1, (0.1, 0.3), Verdict.WORSE),
        ("the interval holds 0", 0.2, 0.01, 1, (-0.1, 0.3), Verdict.SAME),
        ("no interval (not drawn): the test decides", 0.2, 0.01, 1, None, Verdict.WORSE),
        ("not significant", 0.2, 0.2, 1, (0.1, 0.3), Verdict.SAME),
        ("below the minimum effect", 0.03, 0.001, 1, (0.02, 0.04), Verdict.SAME),
        ("windows shifted the other way", 0.2, 0.01, -1, (0.1, 0.3), Verdict.SAME),
        ("faster p99: better", -0.2, 0.01, -1, (-0.3, -0.1), Verdict.BETTER),
    ],
)
def test_the_verdict_rules(label, delta, p, shift, ci, expected):
    from redline.compare.significance import Evidence, verdict

    got = verdict(Figure.P99, delta, Evidence(p, shift, (8, 8)), p, ci)
    assert got is expected, label


def test_too_few_windows_have_no_interval():
    got = cis(synthetic(1, n=3), synthetic(2, n=3))
    assert set(got.values()) == {None}


def test_the_interval_is_printed_beside_the_change():
    c = Comparison(
        _doc(synthetic(1)),
        _doc(synthetic(2)),
        compare_stretches({"all": synthetic(1)}, {"all": synthetic(2, rps=1200.0)}, window_s=1.0),
    )
    row = c.row(Figure.RPS)
    assert row is not None and row.ci is not None
    text = render_text([c])
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("goodput"))
    assert re.search(r"\+\d+\.\d%\s+\[\+\d+\.\d, \+\d+\.\d\]\s+better", line), line
    assert f"[{100 * row.ci[0]:+.1f}, {100 * row.ci[1]:+.1f}]" in render_markdown([c])


# -- the gate --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, figure, tolerance, unit, group",
    [
        ("p99:+10%", Figure.P99, 10.0, "%", None),
        ("rps:-5%", Figure.RPS, 5.0, "%", None),
        ("p99.9:20ms", Figure.P99_9, 20.0, "ms", None),
        ("errors:+1pp", Figure.ERRORS, 1.0, "pp", None),
        ("GET /login:p95x:+1%", None, 0, "", None),
        ("GET /login:p90:+15%", Figure.P90, 15.0, "%", "GET /login"),
    ],
)
def test_parse_rule(spec, figure, tolerance, unit, group):
    if figure is None:
        with pytest.raises(ConfigError, match="unknown figure 'p95x'"):
            parse_rule(spec)
        return
    r = parse_rule(spec)
    assert (r.figure, r.tolerance, r.unit, r.group) == (figure, tolerance, unit, group)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("p99", "expected FIGURE:TOLERANCE"),
        ("p99:+ten%", "is not like"),
        ("rps:+5%", "falls; write rps:-5%"),
        ("p99:-10%", "rises; write p99:+10%"),
        ("rps:-5ms", "only a latency"),
        ("p99:+1pp", "only the error rate"),
    ],
)
def test_bad_rules_say_why(spec, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_rule(spec)


def test_gate_trips_only_on_a_significant_change_beyond_tolerance():
    base = synthetic(1, noise=0.01)
    slower = Comparison(
        _doc(base),
        _doc(synthetic(2, p99=60.0, noise=0.01)),
        compare_stretches({"all": base}, {"all": synthetic(2, p99=60.0, noise=0.01)}, window_s=1.0),
    )
    assert failures(parse_rules(["p99:+30%", "rps:-5%"]), slower) == []
    (line,) = failures(parse_rules(["p99:+10%"]), slower)
    assert line.startswith("p99 got worse by +19.") and "beyond --fail-on p99:+10%" in line
    # A 2 % change within noise does not trip a 10 % (or a 1 %) tolerance.
    within = Comparison(
        _doc(base),
        _doc(base),
        compare_stretches({"all": base}, {"all": synthetic(3, p99=51.0)}, window_s=1.0),
    )
    assert failures(parse_rules(["p99:+10%", "p99:+1%"]), within) == []
    with pytest.raises(ConfigError, match="no p99 in 'GET /x'"):
        failures([parse_rule("GET /x:p99:+1%")], within)


def _doc(stretch: Stretch) -> Document:
    return Document("x.json", Kind.RUN, {}, {"all": stretch})


# -- the u test ------------------------------------------------------------------------------


def test_the_u_test_gives_scipys_p_values():
    """significance.u_test is hand-rolled (importing scipy.stats cost compare 1.3 s): on 2,000
    seeded random pairs of samples, small (exact) and large (normal approximation), with ties
    and without, shifted and not, its p equals scipy's mannwhitneyu to 1e-12."""
    from scipy.stats import mannwhitneyu

    rng = np.random.default_rng(20261126)
    for _ in range(2000):
        n1, n2 = int(rng.integers(1, 13)), int(rng.integers(1, 41))
        x = rng.normal(0.0, 1.0, n1)
        y = rng.normal(float(rng.choice([0.0, 0.5, 1.0, 2.0])), 1.0, n2)
        if rng.random() < 0.4:
            x, y = np.round(x, 1), np.round(y, 1)  # ties
        if len(set(x) | set(y)) == 1:
            continue
        want = float(mannwhitneyu(x, y, alternative="two-sided").pvalue)
        assert u_test(list(x), list(y)) == pytest.approx(want, abs=1e-12), (x, y)


def test_compare_starts_without_scipy():
    """What compare imports to judge two results leaves scipy out (a fresh interpreter)."""
    code = (
        "import sys, redline.cli.commands, redline.compare, redline.compare.page,"
        " redline.report.render;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "[]", p.stdout
