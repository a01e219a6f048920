"""split: one run's load cut into each injector's share.

VUs (closed model) and req/s (open model) go to the injectors in proportion to their cores;
a request count likewise; data-file rows are dealt out, each row to one injector only, so
that a pass over the file is one pass over the cluster, not one per injector. Every
injector's configuration names one start instant (``start_at_unix_s``), so the open model's
schedule is one schedule.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Sequence
from typing import Any

from redline.errors import ClusterError


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


def split_config(
    config: dict[str, Any],
    weights: Sequence[float],
    start_at_unix_s: float,
    whole_cap: bool = False,
) -> list[dict[str, Any]]:
    """split_config is each injector's RunConfig: ``config``'s load, request count, pool cap
    and data rows split by ``weights``, and the shared start instant. ``whole_cap`` gives
    every injector the whole VU cap (``max_vus``), so that it can take over others' load."""
    n = len(weights)
    closed = not (config.get("open") or config.get("rate") is not None)
    out = [copy.deepcopy(config) for _ in range(n)]
    if "rate" in config:
        for c, r in zip(out, split_value(float(config["rate"]), weights, False), strict=True):
            c["rate"] = r
    if closed and "stages" not in config:
        vus = int(config.get("connections", _default_connections()))
        if vus < n:
            raise ClusterError(
                f"{vus} connections cannot be split over {n} injectors: give at least {n}"
            )
        for c, v in zip(out, apportion(vus, weights), strict=True):
            c["connections"] = v
    if "max_vus" in config:
        caps = (
            [int(config["max_vus"])] * n
            if whole_cap
            else apportion(int(config["max_vus"]), weights)
        )
        for c, cap in zip(out, caps, strict=True):
            c["max_vus"] = max(cap, int(c.get("connections", 1)))
    if "stages" in config:
        for c in out:
            c["stages"] = [dict(s) for s in config["stages"]]
        for k, stage in enumerate(config["stages"]):
            shares = _stage_shares(float(stage["target"]), weights, closed)
            for c, share in zip(out, shares, strict=True):
                c["stages"][k]["target"] = share
    if "requests" in config:
        total = int(config["requests"])
        if total < n:
            raise ClusterError(f"{total} requests cannot be split over {n} injectors")
        for c, r in zip(out, apportion(total, weights), strict=True):
            c["requests"] = r
    if "max_connections" in config:
        whole = sum(weights)
        for c, w in zip(out, weights, strict=True):
            c["max_connections"] = max(1, math.ceil(int(config["max_connections"]) * w / whole))
    if (config.get("plan") or {}).get("python"):
        raise ClusterError(
            "a scenario with Python steps (u.python) runs on one machine: its functions live in "
            "this process; drop --cluster, or use the engine's functions"
        )
    if config.get("plan") is not None:
        for i, c in enumerate(out):
            c["plan"] = partition_plan(config["plan"], i, n)
    for c in out:
        c["start_at_unix_s"] = start_at_unix_s
    return out


def for_rebalance(config: dict[str, Any]) -> dict[str, Any]:
    """for_rebalance makes ``config`` a live run (its load can be raised when another
    injector is lost), which needs a constant load for a duration: connections or a rate."""
    if "stages" in config or "requests" in config:
        raise ClusterError(
            "--on-injector-loss rebalance needs a constant load for a duration "
            "(connections or --rate; not --stages or -n)"
        )
    out = {**config, "live": True}
    if not (config.get("open") or config.get("rate") is not None):
        out.setdefault("max_vus", round(load_of(config)))
    return out


def load_of(config: dict[str, Any]) -> float:
    """load_of: the load a RunConfig starts at, VUs or req/s (stages: their first target)."""
    if config.get("rate") is not None:
        return float(config["rate"])
    if config.get("stages"):
        return float(config["stages"][0]["target"])
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
