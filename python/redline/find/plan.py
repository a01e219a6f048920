"""plan: how a capacity search moves (:class:`Plan`): the model it steps (VUs or req/s),
where it starts and its ceiling, how fast it grows, how long a step lasts and ramps, and when
refining stops. Settings only: :mod:`redline.find.search` does the moving."""

from __future__ import annotations

from dataclasses import dataclass

from redline.errors import ConfigError

#: SEARCH_DEFAULTS: the run options whose default in a search differs from the engine's
#: (``redline run``'s 30 s timeout and 1 s interval), in seconds, deliberately: a search
#: judges short steps (3 to 15 s). It reads a figure every half second so that a short step
#: still has the intervals its steadiness and noise are judged on; and a request out for 10 s
#: has failed by any measure a step applies, so it ends as a timeout near the step that sent
#: it instead of hanging over the next two. :func:`redline.find.finder.find` applies them to an
#: option left as None; ``redline find --help`` shows them.
SEARCH_DEFAULTS: dict[str, float] = {"timeout": 10.0, "interval": 0.5}


#: MAX_TIME_S: the bound on a whole search, its confirmation included (``--max-time``;
#: :class:`Plan`'s ``max_time_s`` is the search's share of it).
MAX_TIME_S = 120.0

#: CONFIRM_S: how long the confirmation step at the answer lasts (after a 1 s warm-up).
CONFIRM_S = 10.0


@dataclass
class Plan:
    """Plan is how the search moves: where it starts, how it grows, how long steps last.

    ``ramp_s`` is how long a step change takes (users join at a spawn rate, a rate ramps):
    by default a quarter of the shortest step or 1 s, whichever is shorter. ``resolution``
    is the bracket, relative, within which refining stops (or the steps' own confidence
    interval, if wider). ``recover_s`` bounds the wait for a service to recover after an
    overload. A step lasts until at least ``min_outcomes`` requests ended (counts that small
    are too noisy to judge) or ``max_step_s`` passed. These defaults are the search's, once:
    :func:`redline.find.finder.find` and ``redline find --help`` read them here."""

    model: str = "closed"
    start: float = 1.0
    ceiling: float = 1e6
    growth: float = 2.0
    near_growth: float = 1.25
    resolution: float = 0.02
    min_step_s: float = 3.0
    max_step_s: float = 15.0
    ramp_s: float | None = None
    max_time_s: float = MAX_TIME_S
    recover_s: float = 30.0
    min_outcomes: int = 200
    stop_at_knee: bool = False

    def __post_init__(self) -> None:
        if self.model not in ("closed", "open"):
            raise ConfigError(f"--model: closed or open, got {self.model!r}")
        if not self.start > 0:
            raise ConfigError(f"the starting load must be > 0, got {self.start}")
        if not self.min_step_s <= self.max_step_s:
            raise ConfigError("the minimum step time must not exceed the maximum")
        if self.ramp_s is None:
            self.ramp_s = min(self.min_step_s / 4, 1.0)

    @property
    def ramp(self) -> float:
        """ramp is the step change's duration in seconds."""
        return float(self.ramp_s or 0.0)
