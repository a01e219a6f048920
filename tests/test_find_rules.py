"""The search's rules and readings that need no simulated service: SLOs as written, a trend
beyond its noise, steadiness of small counts, the steady state under a failed confirmation,
and how long a step of users running a flow lasts and when a held load starts its clock.
(The search against simulated services is in test_find_search.py.)"""

from __future__ import annotations

import random
from typing import Any

import pytest
from redline.analysis.evidence import queue_rise_floor_ms, rate_se, trend
from redline.analysis.steady import steady_counts
from redline.errors import ConfigError
from redline.find import steady_answer
from redline.find.rules import Limits, Slo
from redline.find.search import Plan, Search
from redline.find.step import Step


@pytest.mark.parametrize(
    ("text", "percentile", "bound"),
    [
        ("p99<100ms", "p99", 100.0),
        ("p50 < 2s", "p50", 2000.0),
        ("max<500us", "max", 0.5),
        ("p95<20ms", "p95", 20.0),
        # The thresholds' grammar: the same figures as --threshold, a bare number in ms.
        ("p99.9<1s", "p99.9", 1000.0),
        ("mean<=50ms", "mean", 50.0),
        ("p99<250", "p99", 250.0),
    ],
)
def test_slo_parses(text, percentile, bound):
    slo = Slo.parse(text)
    assert (slo.percentile, slo.bound_ms, slo.figure) == (percentile, bound, None)


@pytest.mark.parametrize(
    ("text", "figure", "percentile", "bound"),
    [
        ("ttft_p99<500ms", "ttft", "p99", 500.0),
        ("itl_p50<50ms", "itl", "p50", 50.0),
        ("first_byte_p99.9<1s", "first_byte", "p99.9", 1000.0),
        ("chunk_gap_max<=200ms", "chunk_gap", "max", 200.0),
        ("ttft_mean<0.3s", "ttft", "mean", 300.0),
    ],
)
def test_a_stream_slo_parses_and_reads_its_figure_of_a_step(text, figure, percentile, bound):
    slo = Slo.parse(text)
    assert (slo.figure, slo.percentile, slo.bound_ms) == (figure, percentile, bound)
    assert str(slo) == f"{figure}_{percentile}<{bound:g}ms"
    key = {"p99": "p99_ms", "p50": "p50_ms", "p99.9": "p99_9_ms", "max": "max_ms"}
    field = key.get(percentile, "mean_ms")
    step = Step(index=0, load=1.0, throughput_rps=1.0, p50_ms=1.0, p99_ms=2.0)
    assert slo.of(step) is None, "a step without the figure is not judged on it"
    step.stream = {figure: {field: bound + 1.0}}
    got = slo.of(step)
    assert got == bound + 1.0 and slo.breached(got)


@pytest.mark.parametrize(
    "bad",
    ["ttft_p99>500ms", "tft_p99<1s", "ttft_errors<1%", "chat:ttft_p99<1s", "ttft_rps>1"],
)
def test_a_bad_stream_slo_is_one_clear_error(bad):
    with pytest.raises(ConfigError, match="--slo") as e:
        Slo.parse(bad)
    assert "\n" not in str(e.value) and "ttft_p99" in str(e.value)


@pytest.mark.parametrize(
    "bad",
    ["p99>100ms", "p98<100ms", "p99<fast", "", "submit:p99<100ms", "errors<1%", "rps>100"],
)
def test_bad_slo_is_one_clear_error(bad):
    with pytest.raises(ConfigError, match="--slo"):
        Slo.parse(bad)


def test_a_trend_is_significant_only_beyond_its_noise():
    rng = random.Random(3)
    t = [i * 0.5 for i in range(10)]
    noise = [0.15 + rng.uniform(-0.03, 0.03) for _ in t]
    climb = [10.0 + 3.0 * x for x in t]
    assert not trend(t, noise).significant() or abs(trend(t, noise).rise) < 0.1
    assert trend(t, climb).significant() and trend(t, climb).rise == pytest.approx(13.5)
    # A rise of 0.03 ms on a 0.15 ms service is never material; 20 ms on a 40 ms one is.
    assert queue_rise_floor_ms(0.15, None) == 1.0
    assert queue_rise_floor_ms(40.0, None) == 20.0
    assert queue_rise_floor_ms(40.0, 100.0) == 10.0


def test_steadiness_allows_for_poisson_noise_of_small_counts():
    rng = random.Random(5)
    small = [rng.choice([2, 3, 4, 5, 6]) for _ in range(10)]  # 4 ± 2: Poisson, steady
    assert steady_counts(small)
    assert not steady_counts([100, 120, 140, 160, 180, 200, 220, 240])
    assert rate_se([100] * 10, 5.0) < rate_se([50, 150] * 5, 5.0)


# -- the confirmation --------------------------------------------------------------------------


def _held(index: int, load: float, x: float, phase: str, fired: tuple[str, ...] = ()) -> Step:
    why = "p99 was 5603.3 ms (SLO p99<500ms)" if fired else ""
    return Step(index=index, load=load, model="closed", throughput_rps=x, throughput_se=10.0,
                p50_ms=5.0, p99_ms=5603.3 if fired else 60.0, mean_ms=8.0, phase=phase,
                fired=list(fired), why=why)  # fmt: skip


def _searched() -> Search:
    s = Search(None, Plan(model="closed"), Limits())  # type: ignore[arg-type]
    s.steps = [
        _held(0, 1280, 516, "sweep"),
        _held(1, 2560, 750, "sweep", ("slo",)),
        _held(2, 1810, 697, "refine"),
        _held(3, 2348, 929, "refine"),
    ]
    return s


def test_a_confirmation_that_breaks_a_limit_moves_the_steady_state_under_it():
    """Demo 2 of 2026-11-26 07:57: 2,348 users met the SLO in the search (929 tasks/s) and
    broke it held again a minute later (p99 5.6 s); the answer said "sustains 929 at 2348
    users". No load at or above a failed confirmation is steady: the search's steady step
    under it, confirmed there when time allows, or said to be unconfirmed."""
    s = _searched()
    assert s.steady_load() == 2348 and s.steady_load(below=2348) == 1810
    s.steps.append(_held(4, 2348, 722, "confirm", ("slo",)))
    steady, notes = steady_answer(s.steps[3], s)
    assert steady is s.steps[2], steady
    assert "confirmation at 2348 users broke a limit (p99 was 5603.3 ms" in notes[0]
    assert "at 1810 users, not confirmed" in notes[1]
    s.steps.append(_held(5, 1810, 700, "confirm"))
    steady, notes = steady_answer(s.steps[3], s)
    assert steady is s.steps[5] and "Held at 1810 users instead, it held" in notes[-1]


def test_a_confirmation_that_holds_is_the_steady_state():
    s = _searched()
    s.steps.append(_held(4, 2348, 930, "confirm"))
    assert steady_answer(s.steps[3], s) == (s.steps[4], [])
    s.steps.pop()
    assert steady_answer(s.steps[3], s) == (s.steps[3], [])  # no confirmation: the search's


def test_no_steady_state_under_a_failed_confirmation_is_none_not_the_best_step():
    """Every confirmation broke a limit and no lighter step of the search met every limit:
    steady_answer says None, and the answers keep it None (they used to fall back to the
    good step with the most throughput, at or above the load that failed)."""
    from redline.analysis.answers import build_answers

    s = Search(None, Plan(model="closed"), Limits())  # type: ignore[arg-type]
    s.steps = [_held(0, 2348, 929, "sweep"), _held(1, 2348, 722, "confirm", ("slo",))]
    steady, notes = steady_answer(s.steps[0], s)
    assert steady is None and "No lighter step" in notes[-1]
    searched = s.steps[:1]
    a = build_answers(searched, model="closed", steady=steady, pick_steady=False)
    assert a["steady_state_throughput_rps"] is None, a["text"]["throughput"]
    assert a["text"]["throughput"].startswith("No steady state was confirmed"), a["text"]
    assert build_answers(searched, model="closed")["steady_state_throughput_rps"] == 929


def _flow_snaps(n: int, iterations: int, requests: int = 400) -> list[dict[str, Any]]:
    """_flow_snaps: n steady 0.5 s intervals of a scenario run, each with ``iterations``
    ended and ``requests`` answered in 2 ms."""
    return [
        {"t_s": 0.5 * (i + 1), "requests": requests, "errors": 0, "mean_ms": 2.0,
         "in_flight_mean": requests / 0.5 * 0.002, "iterations": {"completed": iterations,
         "failed": 0, "started": iterations}}
        for i in range(n)
    ]  # fmt: skip


def test_a_step_lasts_at_least_one_iteration_of_its_users():
    """Demo 3 of 11:09: doubled from 2,000 to 4,000 users, the seed-000 flows' step ended
    after 3 s at 424 tasks/s, over the 300 a second taskqueue's fetch connections allow: the
    2,000 users who had just joined had not been through their flow once (submit, polls
    while the queue inside taskqueue grew, result). 4,000 users ending 421 iterations a
    second take 9.5 s an iteration: a step of them lasts that long."""
    s = Search(None, Plan(model="closed"), Limits(), interval_s=0.5)  # type: ignore[arg-type]
    short = _flow_snaps(6, iterations=210)  # 3 s, 420 iterations a second
    assert s.reader.cycle_s(short, 4000) == pytest.approx(4000 / 420)
    assert not s.reader.enough(short, 4000)
    assert s.reader.enough(short, 64)  # 64 users cycle in 0.15 s: 3 s is plenty
    assert s.reader.enough(_flow_snaps(20, iterations=210), 4000)  # 10 s
    # A URL run (no iterations) and the open model have no users cycling through a flow.
    url = [{k: v for k, v in x.items() if k != "iterations"} for x in short]
    assert s.reader.cycle_s(url, 4000) is None
    open_model = Search(None, Plan(model="open"), Limits(), interval_s=0.5)  # type: ignore[arg-type]
    assert open_model.reader.cycle_s(short, 4000) is None


class _Scripted:
    """_Scripted: a live run that answers each snapshot from a list (then ends)."""

    def __init__(self, snaps: list[dict[str, Any]]):
        self.snaps, self.t, self.done = snaps, 0.0, False

    def set_target(self, value: float, ramp_s: float = 0.0) -> float:
        return self.t

    def next_snapshot(self, timeout_s: float) -> dict[str, Any] | None:
        if not self.snaps:
            self.done = True
            return None
        snap = self.snaps.pop(0)
        self.t = float(snap["t_s"])
        return snap


def test_a_held_load_of_users_is_measured_after_their_first_iteration():
    """The confirmation of the same demo (1,280 users, after lighter optimum steps) read
    322 tasks/s over a bound of 300: the burst of the users who joined at it. A held load
    starts its clock once as many iterations ended as there are users (here 1,280 users at
    200 iterations a second: 6.4 s), then holds its seconds."""
    burst = _flow_snaps(13, iterations=100)  # 6.5 s: 1,300 iterations ended
    for x in burst:
        x["requests"] = 900  # the joiners' submits
    steady = [{**x, "t_s": x["t_s"] + 6.5} for x in _flow_snaps(10, iterations=100)]
    s = Search(_Scripted(burst + steady), Plan(model="closed"), Limits(), interval_s=0.5)  # type: ignore[arg-type]
    step = s.hold(1280, 5.0, "confirm")
    # The ramp (Plan.ramp) settles first; then 1,280 iterations end (6.5 s) before the clock.
    assert step.start_s >= 6.5 and step.answered_rps == pytest.approx(800), step
    # A URL run's held load has no flow to wait for.
    url = [{k: v for k, v in x.items() if k != "iterations"} for x in burst + steady]
    s = Search(_Scripted(url), Plan(model="closed"), Limits(), interval_s=0.5)  # type: ignore[arg-type]
    assert s.hold(1280, 5.0, "confirm").start_s == pytest.approx(1.0)  # after the ramp only
    # No warm-up past the time the confirmation was given (--max-time): none here.
    run = _Scripted(burst + steady)
    s = Search(run, Plan(model="closed"), Limits(), interval_s=0.5, clock=lambda: run.t)  # type: ignore[arg-type]
    assert s.hold(1280, 5.0, "confirm", end_by=5.0).start_s == pytest.approx(1.0)
