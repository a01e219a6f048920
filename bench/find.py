"""find: does `redline find` give each probe's truth, and how long does it take?

Every probe is the bundled target in a mode whose truth is derived in its module docs
(crates/testserver/src/): a capacity queue (N slots of S: N / S req/s), load shedding (the
same queue refusing past Q waiting: N / S accepted), periodic pauses (N / S · (1 − D/P)),
USL contention (X(N) = N / (S(1 + κN(N − 1))): peak at √(1/κ) users, power best at the root
of 3κN² − κN − 1 = 0) and a token bucket (R accepted a second). The immediate answer has no
capacity of its own on this machine: its truth is the closed model's maximum in the same run
(or the generator named as the limit).

For each probe and model the search runs with its defaults (plus the probe's SLO) and the row
records the truth, what was found (the limit's capacity, with its uncertainty), the error,
the optimal users against their truth, the load where throughput peaked (contention: √(1/κ)
users), how the limit was named, and the wall time. Results
go to bench/results/find.md (see bench/record.py).

    .venv/bin/python bench/find.py                       # every probe
    .venv/bin/python bench/find.py --only bucket-500 --repeat 5
    .venv/bin/python bench/find.py --only immediate --repeat 5 --keep /tmp/finds
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import record  # noqa: E402
import redline  # noqa: E402
from consistency import consistency_of  # noqa: E402
from redline.find.finder import find  # noqa: E402
from redline.report.render import render_markdown  # noqa: E402


@dataclass
class Probe:
    """Probe is one target mode: its Target arguments, the models to search, its truth in
    req/s (None: measured in the run), the optimal users' truth, and the search's extra
    options."""

    name: str
    target: dict[str, Any]
    models: tuple[str, ...]
    truth: float | None
    optimal_users: float | None = None
    options: dict[str, Any] = field(default_factory=dict)
    tolerance: float = 0.03
    #: peak_users: the closed model's users at the throughput peak, where the probe has one
    #: (contention: sqrt(1/κ)); a queue's throughput only levels off, so it has none.
    peak_users: float | None = None


SLO = {"slos": ["p99<500ms"]}

PROBES = [
    Probe(
        "capacity 4 x 20 ms", {"capacity": 4, "service_time": "20ms"}, ("closed", "open"), 200.0, 4
    ),
    Probe(
        "capacity 8 x 10 ms", {"capacity": 8, "service_time": "10ms"}, ("closed", "open"), 800.0, 8
    ),
    Probe(
        "capacity 50 x 40 ms",
        {"capacity": 50, "service_time": "40ms"},
        ("closed", "open"),
        1250.0,
        50,
    ),
    Probe(
        "shedding 8 x 10 ms, Q 8",
        {"capacity": 8, "service_time": "10ms", "queue_limit": 8},
        ("closed", "open"),
        800.0,
        8,
        tolerance=0.05,
    ),
    Probe(
        "pauses 8 x 10 ms, 50ms/1s",
        {"capacity": 8, "service_time": "10ms", "pause": "50ms/1s"},
        ("closed", "open"),
        760.0,
        None,
        tolerance=0.05,
    ),
    Probe(
        "contention κ 0.01, 10 ms",
        {"contention": 0.01, "service_time": "10ms"},
        ("closed", "open"),
        526.3,
        6,
        tolerance=0.05,
        peak_users=10.0,
    ),
    Probe("bucket-500", {"rate_limit": 500.0, "burst": 50}, ("open",), 500.0, None, SLO),
    Probe("bucket-5000", {"rate_limit": 5000.0, "burst": 50}, ("open",), 5000.0, None, SLO),
    Probe("immediate", {}, ("closed", "open"), None, None, SLO),
]


def one(p: Probe, model: str, closed_max: float | None, keep: Path | None) -> dict[str, Any]:
    """one searches one probe in one model and returns the row (and keeps the result's JSON
    in ``keep``, when given, to read a surprising row's steps afterwards)."""
    with redline.Target(threads=1, **p.target) as t:
        t0 = time.monotonic()
        r = find(t.url + "/", model=model, **p.options)
        took = time.monotonic() - t0
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        n = len(list(keep.glob("*.json")))
        name = "".join(c if c.isalnum() else "-" for c in p.name)
        (keep / f"{n:02d}-{name}-{model}.json").write_text(json.dumps(r, indent=1, default=str))
    a = r["answers"]
    lim = a["limit"]
    found = lim.get("capacity_rps") or 0.0
    # The immediate answer's truth is the closed model's maximum, for the open model only.
    truth = p.truth if p.truth is not None else (closed_max if model == "open" else None)
    opt = a["optimal"] or {}
    users = opt.get("users")
    # Where the measured throughput peaked: the load of the step with the most goodput.
    measured = [s for s in r["steps"] if s.get("throughput_rps") is not None]
    peak = max(measured, key=lambda s: s["throughput_rps"]) if measured else None
    peak_at = "" if peak is None else f"{peak['load']:,.4g}"
    if peak is not None and model == "closed" and p.peak_users is not None:
        peak_at += f" ({p.peak_users:g})"
    if p.truth is None and model == "open":
        verdict = (
            "generator named"
            if r.get("generator_limited")
            else ("ok" if truth and found >= 0.8 * truth else "MISSED")
        )
    elif truth is None:
        verdict = "-"
    elif p.name.startswith("contention") and model == "open":
        verdict = "ok" if 0.9 * truth <= found <= truth * 1.02 else "MISSED"
    else:
        verdict = "ok" if abs(found / truth - 1) <= p.tolerance else "MISSED"
    return {
        "probe": p.name,
        "model": model,
        "truth": truth,
        "found": found,
        "ci": lim.get("capacity_ci") or 0.0,
        "error": (found / truth - 1) if truth else None,
        "users": ""
        if users is None
        else f"{users:g}" + ("" if p.optimal_users is None else f" ({p.optimal_users:g})"),
        "peak_at": peak_at,
        "limit": f"{lim.get('kind')}: {r['stop']['condition']}",
        "refused": lim.get("refused_share"),
        "verdict": verdict,
        # The result and its Markdown report agree with themselves (the tests' one check).
        "consistent": consistency_of(r, render_markdown(r)),
        "steps": len(r["steps"]),
        "seconds": took,
    }


def table(rows: list[dict[str, Any]]) -> str:
    """table renders the rows as Markdown."""
    lines = [
        "| probe | model | truth | found ± | error | optimal users (truth) | peak at (truth)"
        " | limit | refused | verdict | consistent | steps | time |",
        "| --- | --- | ---: | ---: | ---: | --- | --- | --- | ---: | --- | --- | ---: | ---: |",
    ]
    for r in rows:
        truth = "—" if r["truth"] is None else f"{r['truth']:,.0f}"
        err = "—" if r["error"] is None else f"{r['error']:+.1%}"
        refused = "" if r["refused"] is None else f"{r['refused']:.0%}"
        lines.append(
            f"| {r['probe']} | {r['model']} | {truth} | {r['found']:,.0f} ± {r['ci']:,.0f} |"
            f" {err} | {r['users']} | {r['peak_at']} | {r['limit']} | {refused} | {r['verdict']} |"
            f" {r['consistent']} |"
            f" {r['steps']} | {r['seconds']:.0f} s |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[], help="probe name prefix (repeatable)")
    ap.add_argument("--model", choices=("closed", "open"), help="one model only")
    ap.add_argument("--repeat", type=int, default=1, help="searches per probe and model")
    ap.add_argument("--no-record", action="store_true", help="print, do not append")
    ap.add_argument("--keep", type=Path, help="write each search's JSON result into this folder")
    args = ap.parse_args()
    ctx = record.Context.now()
    rows = []
    probes = [p for p in PROBES if not args.only or any(p.name.startswith(o) for o in args.only)]
    for p in probes:
        closed_max = None
        for model in p.models:
            if args.model and model != args.model and not (p.truth is None and model == "closed"):
                continue
            for _ in range(args.repeat):
                row = one(p, model, closed_max, args.keep)
                if p.truth is None and model == "closed":
                    # The most any closed search of this run found: the strictest truth.
                    closed_max = max(closed_max or 0.0, row["found"])
                rows.append(row)
                print(table([row]).splitlines()[-1], flush=True)
    text = table(rows)
    print(text)
    if not args.no_record:
        record.append("find", "redline find against probes of known truth", ctx, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
