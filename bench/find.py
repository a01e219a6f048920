"""find: how long `redline find` takes to find a known capacity, and how close it lands.

The target server's capacity mode is a queue of known throughput (N slots of S each: N / S
req/s). For each model (closed: users; open: arrival rate) and each queue, this runs the
search with its default settings and records the wall time, the throughput found against the
truth, and (closed model) the optimal users against N. The goal: under 3 minutes, within
±10 %. Results are appended to bench/results/find.md (see bench/record.py).

    .venv/bin/python bench/find.py            # two queues, both models
    .venv/bin/python bench/find.py --quick    # one queue
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import record  # noqa: E402
import redline  # noqa: E402
from redline.find import find  # noqa: E402

#: QUEUES: (slots, service time in ms) of the capacity-mode targets.
QUEUES = [(8, 10.0), (32, 20.0)]


def one(slots: int, service_ms: float, model: str) -> dict[str, float | str]:
    """one searches one queue in one model and returns the row."""
    truth = slots * 1000.0 / service_ms
    with redline.Target(threads=1, capacity=slots, service_time=f"{service_ms}ms") as t:
        t0 = time.monotonic()
        r = find(t.url + "/", model=model)
        took = time.monotonic() - t0
    a = r["answers"]
    found = a["steady_state_throughput_rps"] or 0.0
    opt = a["optimal"] or {}
    users = opt.get("users")
    return {
        "queue": f"{slots} x {service_ms:g} ms",
        "model": model,
        "truth": truth,
        "found": found,
        "error": found / truth - 1,
        "users": "" if users is None else f"{users:g} (N = {slots})",
        "stop": r["stop"]["condition"],
        "steps": len(r["steps"]),
        "seconds": took,
    }


def table(rows: list[dict[str, float | str]]) -> str:
    """table renders the rows as Markdown."""
    lines = [
        "| queue | model | truth req/s | found req/s | error | optimal users | stop | steps"
        " | time |",
        "| --- | --- | ---: | ---: | ---: | --- | --- | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['queue']} | {r['model']} | {float(r['truth']):.0f} | {float(r['found']):.0f}"
            f" | {float(r['error']):+.1%} | {r['users']} | {r['stop']} | {r['steps']}"
            f" | {float(r['seconds']):.0f} s |"
        )
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one queue only")
    args = p.parse_args()
    ctx = record.Context.now()
    rows = []
    for slots, service_ms in QUEUES[:1] if args.quick else QUEUES:
        for model in ("closed", "open"):
            row = one(slots, service_ms, model)
            print(table([row]).splitlines()[-1], flush=True)
            rows.append(row)
    text = table(rows)
    ok = all(abs(float(r["error"])) <= 0.1 and float(r["seconds"]) <= 180 for r in rows)
    verdict = "all within ±10 % and 3 minutes" if ok else "NOT all within ±10 % and 3 minutes"
    path = record.append(
        "find", "redline find against known capacities", ctx, f"{text}\n\n{verdict}."
    )
    print(f"\n{text}\n\n{verdict}; appended to {path}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
