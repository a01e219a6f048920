"""split: one run's load cut into each injector's share.

VUs (closed model) and req/s (open model) go to the injectors in proportion to their cores;
a request count likewise; data-file rows are dealt out, each row to one injector only, so
that a pass over the file is one pass over the cluster, not one per injector. Every
injector's configuration names one start instant (``start_at_unix_s``), so the open model's
schedule is one schedule.

The split works on the typed :class:`~redline.runs.config.RunConfig`: :func:`shares` says
each injector's :class:`Share`, and :meth:`Share.config` makes its config, in one place.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from redline.errors import ClusterError
from redline.runs.config import RunConfig, StageConfig


def apportion(total: int, weights: Sequence[float]) -> list[int]:
    """apportion splits the integer ``total`` in proportion to ``weights`` (largest
    remainder: the shares add up to ``total`` exactly and each is within 1 of its quota)."""
    if not weights or any(w <= 0 for w in weights):
        raise ValueError("apportion needs positive weights")
    whole = sum(weights)
    quotas = [total * w / whole for w in weights]
    shares = [math.floor(q) for q in quotas]
    left = total - sum(shares)
    by_remainder = sorted(range(len(weights)), key=lambda i: (shares[i] - quotas[i], i))
    for i in by_remainder[:left]:
        shares[i] += 1
    return shares


def split_value(value: float, weights: Sequence[float], closed: bool) -> list[float]:
    """split_value is each injector's share of a load: whole VUs in the closed model (at
    least one each: the engine runs no injector at zero), req/s in proportion in the open."""
    if closed:
        return [float(max(1, s)) for s in apportion(round(value), weights)]
    whole = sum(weights)
    return [value * w / whole for w in weights]


@dataclass(frozen=True)
class Share:
    """Share: one injector's part of a run, each field the injector's value of the
    :class:`~redline.runs.config.RunConfig` field of that name (None: the whole run's, as it
    is): its VUs (``connections``, the ``max_vus`` cap) or req/s (``rate``), its ramp
    (``stages``), its request count, its pool cap and its rows of the plan's data."""

    connections: int | None = None
    rate: float | None = None
    stages: list[StageConfig] | None = None
    requests: int | None = None
    max_connections: int | None = None
    max_vus: int | None = None
    plan: dict[str, Any] | None = None

    def config(self, whole: RunConfig, start_at_unix_s: float) -> RunConfig:
        """config is the injector's RunConfig: ``whole`` with this share's fields and the
        cluster's one start instant (``start_at_unix_s``), the one place a split config is
        made (typed: a key RunConfig lacks, or a value of the wrong type, fails mypy)."""
        out = whole.copy()
        out["start_at_unix_s"] = start_at_unix_s
        if self.connections is not None:
            out["connections"] = self.connections
        if self.rate is not None:
            out["rate"] = self.rate
        if self.stages is not None:
            out["stages"] = self.stages
        if self.requests is not None:
            out["requests"] = self.requests
        if self.max_connections is not None:
            out["max_connections"] = self.max_connections
        if self.max_vus is not None:
            out["max_vus"] = self.max_vus
        if self.plan is not None:
            out["plan"] = self.plan
        return out


def split_config(
    config: RunConfig,
    weights: Sequence[float],
    start_at_unix_s: float,
    whole_cap: bool = False,
) -> list[RunConfig]:
    """split_config is each injector's RunConfig: ``config``'s load, request count, pool cap
    and data rows split by ``weights`` (:func:`shares`), and the shared start instant."""
    return [s.config(config, start_at_unix_s) for s in shares(config, weights, whole_cap)]


def shares(config: RunConfig, weights: Sequence[float], whole_cap: bool = False) -> list[Share]:
    """shares is each injector's :class:`Share` of ``config``, in proportion to ``weights``.
    ``whole_cap`` gives every injector the whole VU cap (``max_vus``), so that it can take
    over others' load. What cannot be split is a ClusterError."""
    n = len(weights)
    if (config.get("plan") or {}).get("python"):
        raise ClusterError(
            "a scenario with Python steps (u.python) runs on one machine: its functions live in "
            "this process; drop --cluster, or use the engine's functions"
        )
    closed = not (config.get("open") or config.get("rate") is not None)
    rate = config.get("rate")
    rates: list[float | None] = (
        list(split_value(float(rate), weights, False)) if rate is not None else [None] * n
    )
    stages = config.get("stages")
    connections: list[int | None] = [None] * n
    if closed and stages is None:
        vus = int(config.get("connections", _default_connections()))
        if vus < n:
            raise ClusterError(
                f"{vus} connections cannot be split over {n} injectors: give at least {n}"
            )
        connections = list(apportion(vus, weights))
    caps: list[int | None] = [None] * n
    max_vus = config.get("max_vus")
    if max_vus is not None:
        whole = [int(max_vus)] * n if whole_cap else apportion(int(max_vus), weights)
        own = [c if c is not None else int(config.get("connections", 1)) for c in connections]
        caps = [max(cap, c) for cap, c in zip(whole, own, strict=True)]
    ramps: list[list[StageConfig] | None] = [None] * n
    if stages is not None:
        per_stage = [_stage_shares(float(s["target"]), weights, closed) for s in stages]
        ramps = [
            [
                {"duration_s": s["duration_s"], "target": t[i]}
                for s, t in zip(stages, per_stage, strict=True)
            ]
            for i in range(n)
        ]
    counts: list[int | None] = [None] * n
    requests = config.get("requests")
    if requests is not None:
        if int(requests) < n:
            raise ClusterError(f"{requests} requests cannot be split over {n} injectors")
        counts = list(apportion(int(requests), weights))
    pools: list[int | None] = [None] * n
    max_connections = config.get("max_connections")
    if max_connections is not None:
        pools = [max(1, math.ceil(int(max_connections) * w / sum(weights))) for w in weights]
    plan = config.get("plan")
    plans = [partition_plan(plan, i, n) if plan is not None else None for i in range(n)]
    return [
        Share(
            connections=connections[i],
            rate=rates[i],
            stages=ramps[i],
            requests=counts[i],
            max_connections=pools[i],
            max_vus=caps[i],
            plan=plans[i],
        )
        for i in range(n)
    ]


def for_rebalance(config: RunConfig) -> RunConfig:
    """for_rebalance makes ``config`` a live run (its load can be raised when another
    injector is lost), which needs a constant load for a duration: connections or a rate."""
    if "stages" in config or "requests" in config:
        raise ClusterError(
            "--on-injector-loss rebalance needs a constant load for a duration "
            "(connections or --rate; not --stages or -n)"
        )
    out = config.copy()
    out["live"] = True
    if not (config.get("open") or config.get("rate") is not None):
        out.setdefault("max_vus", round(load_of(config)))
    return out


def load_of(config: RunConfig) -> float:
    """load_of: the load a RunConfig starts at, VUs or req/s (stages: their first target)."""
    rate, stages = config.get("rate"), config.get("stages")
    if rate is not None:
        return float(rate)
    if stages:
        return float(stages[0]["target"])
    return float(config.get("connections", _default_connections()))


def partition_plan(plan: dict[str, Any], index: int, n: int) -> dict[str, Any]:
    """partition_plan is injector ``index``'s copy of a compiled scenario plan, holding every
    ``n``-th row of each data set from row ``index`` on: each row goes to one injector, so
    ``unique=True`` holds across the cluster. A CSV set's text goes whole, with the slice
    for the engine to keep (it alone parses the file; it refuses a slice left empty)."""
    datasets = plan.get("data") or []
    mine = []
    for ds in datasets:
        if "csv" in ds:
            mine.append({**ds, "slice": [index, n]})
            continue
        rows = ds["rows"]
        if len(rows) < n:
            raise ClusterError(
                f"data set {ds['name']!r} has {len(rows)} rows, fewer than the {n} injectors "
                "(each row goes to one injector): add rows or use fewer injectors"
            )
        mine.append({**ds, "rows": rows[index::n]})
    return {**plan, "data": mine} if datasets else plan


def _stage_shares(target: float, weights: Sequence[float], closed: bool) -> list[float]:
    if not closed:
        return split_value(target, weights, False)
    return [float(s) for s in apportion(round(target), weights)]


def _default_connections() -> int:
    from redline import _engine  # the engine owns the defaults (runner.defaults reads them)

    return int(json.loads(_engine.defaults())["connections"])
