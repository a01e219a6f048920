"""find on a cluster that loses an injector mid-step, against a simulated cluster of known
truth (no Ray, no network, an injected clock): the step the loss cut into is not judged and
is named with the share of its load that went missing; under ``continue`` the same load is
measured again on the injectors left (counting them only) and the search still lands on the
service's capacity; under ``fail`` the search stops there and its stop says which step.
"""

from __future__ import annotations

from typing import Any

from redline.find.document import result_document
from redline.find.rules import Limits
from redline.find.search import Plan, Search
from test_find_search import DT, FakeEngine, Slots

#: LOST: how the handle names a lost injector in its snapshots' injectors_lost.
LOST = "injector 2 (node-2, pid 4410) died (actor killed)"

#: INJECTORS: the simulated cluster's size; each carries a third of the load.
INJECTORS = 3


class LosingCluster(FakeEngine):
    """LosingCluster: a FakeEngine over INJECTORS injectors, one of which is lost at
    ``lose_at`` s. From then on every interval says so (``injectors_lost``) and merges the
    two left; the load they offer is their share of the last target (two thirds: the lost
    one's third is gone) until the next target is split over them. With ``fail`` the run
    stops one interval after the loss, as the handle does under --on-injector-loss fail."""

    def __init__(self, service: Slots, model: str, lose_at: float, fail: bool = False):
        super().__init__(service, model, seed=3)
        self.lose_at, self.fail = lose_at, fail
        self.lost = False
        self.failure: str | None = None
        self.asked = 1.0
        #: offered: (t_s, load offered) of every interval, for the test's own bookkeeping.
        self.offered: list[tuple[float, float]] = []

    def set_target(self, value: float, ramp_s: float = 0.0) -> float:
        self.asked = value
        return super().set_target(value, ramp_s)  # split over the injectors left: all of it

    def next_snapshot(self, timeout_s: float) -> dict[str, Any] | None:  # type: ignore[override]
        if self.done:
            return None
        if not self.lost and self.t + DT > self.lose_at:
            self.lost = True
            # The lost one's share of the current target is no longer offered.
            self.load = self.asked * (INJECTORS - 1) / INJECTORS
            if self.fail:
                self.failure = f"{LOST}: run stopped (--on-injector-loss fail)"
        elif self.fail and self.lost:
            self.done = True
            return None
        snap = super().next_snapshot(timeout_s)
        self.offered.append((snap["t_s"], self.load))
        snap["injectors"] = INJECTORS
        snap["injectors_reported"] = INJECTORS - 1 if self.lost else INJECTORS
        if self.lost:
            snap["injectors_lost"] = [LOST]
        return snap

    def lost_share_of(self, lost: list[str]) -> float | None:
        return 1.0 / INJECTORS if LOST in lost else None


def _search(engine: LosingCluster, model: str) -> tuple[Any, Search]:
    plan = Plan(model=model, start=1.0 if model == "closed" else 50.0)

    def sample(t0: float, t1: float) -> dict[str, float]:
        return {"generator_busy": 0.1, "generator_wait": 0.02}

    s = Search(engine, plan, Limits(), sample=sample, clock=engine.clock, interval_s=DT)
    return s.run(), s


def _judged_windows_hold_no_loss(out: Any, engine: LosingCluster) -> None:
    """No judged step holds an interval offered less than its load (the lost share)."""
    for step in out.steps:
        inside = [
            load
            for t, load in engine.offered
            if (step.judged_from_s or step.start_s) < t <= step.end_s + 1e-9
            and abs(load - step.load) > 1e-6
        ]
        assert not inside, (step.index, step.load, inside)


def test_continue_spoils_the_step_measures_it_again_and_finds_the_capacity() -> None:
    q = Slots(8, 10.0)  # 800 req/s: found within 3 % by the search on one machine
    engine = LosingCluster(q, "closed", lose_at=9.0)
    out, s = _search(engine, "closed")
    (spoiled,) = out.spoiled
    assert spoiled["measured_again"] is True and spoiled["lost"] == LOST
    assert spoiled["lost_share"] == 1.0 / INJECTORS
    assert spoiled["from_s"] <= 9.0 <= spoiled["to_s"], spoiled
    # The spoiled load was asked again (split over the two left) right after the loss.
    again = [i for i, v in enumerate(engine.targets) if v == spoiled["load"]]
    assert len(again) >= 2 and again[1] == again[0] + 1, (engine.targets, spoiled)
    _judged_windows_hold_no_loss(out, engine)
    cap = max(st.throughput_rps for st in out.steps)
    assert abs(cap - q.capacity) <= 0.03 * q.capacity, cap
    assert out.reason in ("plateau", "backlog", "max-load"), (out.reason, out.detail)


def test_fail_stops_the_search_and_names_the_step_it_spoiled() -> None:
    engine = LosingCluster(Slots(8, 10.0), "open", lose_at=9.0, fail=True)
    out, s = _search(engine, "open")
    assert out.reason == "interrupted"
    (spoiled,) = out.spoiled
    assert spoiled["measured_again"] is False
    assert out.detail.startswith(engine.failure or "?"), out.detail
    assert f"step at {spoiled['load']:g} req/s" in out.detail and "spoiled" in out.detail
    assert "33 % of its load" in out.detail, out.detail
    assert all(st.end_s <= 9.0 for st in out.steps), [st.end_s for st in out.steps]
    _judged_windows_hold_no_loss(out, engine)
    # The result document carries it, and its notes say it in a sentence.
    doc = result_document(
        "http://127.0.0.1:1/",
        "open",
        out,
        {},
        engine.timeseries if hasattr(engine, "timeseries") else [],
        None,
        [],
        None,
        None,
        None,
        Limits(),
        {},
        "2026-11-28T07:00:00Z",
        10.0,
        True,
        None,
        s.meter,
    )
    assert doc["spoiled"] == out.spoiled
    assert any(n.startswith("The sweep step at") for n in doc["answers"]["notes"]), doc["answers"][
        "notes"
    ]
