"""bench/soak.py: its slope test on series of known truth, and a 2-minute soak of redline
alone against the test server with the same slope test, so that a leak in redline or in the
test server shows in CI (the hour-long rows are in bench/results/soak.md)."""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def soak_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("soak", ROOT / "bench" / "soak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["soak"] = module  # its dataclasses look their module up there
    path = list(sys.path)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = path  # the script puts bench/ last; the suite's path stays as it was
    return module


@pytest.mark.parametrize(
    ("label", "growth_per_h", "noise", "flat"),
    [
        ("steady, noisy", 0.0, 2.0, True),
        ("0.5 %/h, a hair of noise: significant but under 1 %/h", 0.5, 0.01, True),
        ("5 %/h over an hour, little noise", 5.0, 0.05, False),
        ("a leak of 1 MiB a minute", 60.0, 0.5, False),
    ],
)
def test_the_slope_test_tells_growth_from_noise(label, growth_per_h, noise, flat) -> None:
    soak = soak_module()
    rng = random.Random(4)
    t = [60.0 * k for k in range(1, 61)]  # an hour, per minute
    base = 100.0
    y = [base * (1 + growth_per_h / 100.0 * s / 3600.0) + rng.gauss(0, noise) for s in t]
    got = soak.slope(t, y)
    assert got.flat is flat, (label, got)
    assert got.low <= base * growth_per_h / 100.0 <= got.high, (label, got)


def test_a_short_window_judges_rss_above_its_resolution_floor() -> None:
    # 90 s sampled every 10 s: 12 KiB of rise is under a 1 MiB floor (pages, not a leak);
    # 2 MiB is a leak of 80 MiB an hour, and no floor hides it.
    soak = soak_module()
    t = [30.0 + 10 * k for k in range(10)]
    pages = [24.0 + 0.012 * k / 9 for k in range(10)]
    leak = [24.0 + 2.0 * k / 9 for k in range(10)]
    assert soak.slope(t, pages).flat is False and soak.slope(t, pages, 1.0).flat is True
    assert soak.slope(t, leak, 1.0).flat is False


def test_too_few_points_give_no_verdict() -> None:
    soak = soak_module()
    assert soak.slope([1.0, 2.0], [5.0, 6.0]).flat is None
    assert soak.slope([1.0, 2.0, 3.0], [5.0, None, 6.0]).flat is None


@pytest.mark.alone
def test_two_minutes_of_redline_alone_hold_flat(tmp_path: Path) -> None:
    """Two minutes at 2,000 req/s (open model), sampled every 10 s, the first 30 s left out:
    RSS and the fds held besides live connections, of redline and of the test server, are flat
    (the bench's exit status says so; an RSS rise under 1 MiB over the 90 s fitted is below
    what two minutes resolve, a leak of 40 MiB an hour is not), and the server saw what redline
    counted, exactly. Open fds in all are not judged: on a busy machine the open model widens
    its pool while it runs behind (CI saw 22 -> 30 on both sides, a busy box 15 -> 1,000 and
    RSS with them), a connection is no leak: the pool is capped at 32 so that RSS stays judged."""
    out = tmp_path / "soak.json"
    argv = [sys.executable, str(ROOT / "bench" / "soak.py"), "redline", "--minutes", "2"]
    argv += [
        "--rate",
        "2000",
        "--sample",
        "10",
        "--warmup",
        "30",
        "--rss-floor",
        "1",
        "--max-connections",
        "32",
        "--no-record",
    ]
    p = subprocess.run(
        [*argv, "--json", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    doc = json.loads(out.read_text()) if out.exists() else {}
    if p.returncode != 0:  # the whole table, not pytest's shortened repr of it
        pytest.fail(f"soak exited {p.returncode}:\n{p.stdout[-4000:]}\n{p.stderr[-2000:]}")
    assert doc["books"]["served"] == doc["books"]["counted"] > 0.95 * 2000 * 120, doc["books"]
    slopes = doc["slopes"]
    for side in ("service", "redline"):
        for key in ("rss_mib", "held_fds"):
            s = slopes[f"{side}.{key}"]
            assert s["points"] >= 8 and s["flat"] is True, (side, key, s)
    for row in doc["rows"]:  # what the pool holds are connections, both ends of them
        assert row["redline"]["connections"] >= 1 and row["service"]["connections"] >= 1, row
    assert len(doc["rows"]) >= 11 and all(r["requests"] for r in doc["rows"]), doc["rows"]
