"""synthetic_find: a find result of known shape for the report tests, as `redline find --json`
writes it: a search over a USL service, its intervals, a monitor and a soak whose fds leak."""

from __future__ import annotations

from typing import Any

import numpy as np
from redline.analysis import StepResult, analyse, usl_throughput


def synthetic_find_result(model: str = "closed", monitor: bool = True) -> dict[str, Any]:
    """synthetic_find_result: a search over a USL service (λ 50, σ 0.04, κ 0.004), 5 s
    steps sampled every 0.5 s, a p99 SLO of 150 ms that breaks at 24 users, a monitor, a
    soak whose fds leak, and the analysis of it all: the shape `redline find --json` writes."""
    rng = np.random.default_rng(7)
    steps: list[StepResult] = []
    timeseries: list[dict[str, Any]] = []
    samples: list[dict[str, Any]] = []
    t = 0.0
    for i, n in enumerate([1, 2, 4, 8, 12, 16, 24]):
        step = _step(i, n, t, model)
        steps.append(step)
        for k in range(10):
            t += 0.5
            noise = 1 + rng.normal(0, 0.03)
            timeseries.append(_interval(step, n, k, t, noise))
            if monitor and k % 2 == 1:
                samples.append(_sample(i, n, t, noise))
    # A 10 s soak at 8 users after the search, whose fds keep climbing (the seed's leak).
    soak = [
        {"t_s": t + k, "cpu_percent": 72.0, "load1": 1.6, "rss_bytes": 8e7, "fds": 100.0 + 3 * k}
        for k in range(1, 11)
    ]
    samples += soak if monitor else []
    analysis = analyse(steps, model=model, soak_samples=soak if monitor else [])
    return {
        "version": 1,
        "url": "http://127.0.0.1:8080/",
        "scenario": None,
        "model": model,
        "started_at": "2026-11-23T20:00:00Z",
        "duration_s": t,
        "stop": {"condition": "slo", "detail": "p99 was over 150 ms (SLO p99<150ms)"},
        "generator_limited": False,
        "config": {"slos": ["p99<150ms"], "max_errors": 0.01, "max_time_s": 180},
        "steps": [s.to_dict() for s in steps],
        "timeseries": timeseries,
        "monitor": samples,
        **analysis,
    }


def _step(i: int, n: int, t: float, model: str) -> StepResult:
    """_step: step I of the search, N users of the USL service (or the rate they reach, 5 %
    over, in the open model) from T s for 5 s; over the SLO, with a few errors, at 24 users."""
    x = float(usl_throughput(n, 50, 0.04, 0.004))
    mean = 1000 * n / x
    load = n if model == "closed" else round(x * 1.05, 1)
    fired = ["slo"] if 2.4 * mean > 150 else []
    return StepResult(
        index=i,
        load=float(load),
        model=model,
        phase="sweep",
        start_s=t,
        end_s=t + 5,
        offered_rps=load if model == "open" else None,
        throughput_rps=x,
        p50_ms=0.9 * mean,
        p90_ms=1.6 * mean,
        p95_ms=1.9 * mean,
        p99_ms=2.4 * mean,
        p99_9_ms=3.5 * mean,
        mean_ms=mean,
        max_ms=5 * mean,
        requests=int(5 * x),
        errors=12 if fired else 0,
        errors_by_class={"timeout": 9, "status": 3} if fired else {},
        error_rate=12 / (5 * x) if fired else 0.0,
        inflight_mean=float(n),
        steady=True,
        service={
            "cpu_percent": 9.0 * n,
            "load1": 0.2 * n,
            "rss_bytes": 8e7,
            "fds": 30.0 + 4 * i,
        },
        fired=fired,
        why="p99 was over 150 ms (SLO p99<150ms)" if fired else "",
    )


def _interval(step: StepResult, n: int, k: int, t: float, noise: float) -> dict[str, Any]:
    """_interval: the snapshot of interval K of STEP (N users), ending at T s, its figures
    scaled by NOISE."""
    x, mean = step.throughput_rps, step.mean_ms
    return {
        "t_s": round(t, 3),
        "warmup": False,
        "requests": int(x * 0.5 * noise),
        "errors": 1 if step.fired and k % 4 == 0 else 0,
        "p50_ms": 0.9 * mean * noise,
        "p90_ms": 1.6 * mean * noise,
        "p99_ms": 2.4 * mean * noise,
        "max_ms": 5 * mean * noise,
        "active_connections": n,
        "intended_rate": step.load if step.model == "open" else None,
        "achieved_rate": x * noise,
        "send_lag_ms": 0.0,
        "target": step.load,
        "step": step.index,
    }


def _sample(i: int, n: int, t: float, noise: float) -> dict[str, Any]:
    """_sample: the monitor's sample at T s during step I (N users), its CPU scaled by NOISE."""
    return {
        "t_s": round(t, 3),
        "cpu_percent": 9.0 * n * noise,
        "load1": 0.2 * n,
        "rss_bytes": 8e7 + 1e5 * t,
        "fds": 30.0 + 2 * t,
        "threads": 4.0,
        "connections": float(n),
        "extra": {'taskqueue_tasks{status="queued"}': float(i)},
    }
