"""demo: is `make demo`'s answer the same twice, and does it fit its 3 minutes?

Runs the demo (`examples/demo.py`, what `make demo` runs after installing) N times in a row
as a subprocess, each in a scratch directory, and records for each: the wall time, the limit
(tasks a second, with its ±, and how it was named), the steady state, the optimal users, and
whether the result and its Markdown report agree with themselves (tests/consistency.py).
The last line gives the limits' spread: (max − min) / mean, and the largest deviation from
the mean. Results go to bench/results/demo.md (see bench/record.py).

    .venv/bin/python bench/demo.py             # three demos
    .venv/bin/python bench/demo.py --repeat 5
    .venv/bin/python bench/demo.py --keep /tmp/demos   # and keep each result JSON
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import record  # noqa: E402
from consistency import consistency_of  # noqa: E402

DEMO = record.ROOT / "examples" / "demo.py"


def one(i: int, keep: Path | None = None) -> dict[str, Any]:
    """one runs the demo once and reads its result (kept as demo-<i>.json in ``keep``)."""
    with tempfile.TemporaryDirectory(prefix="redline-bench-demo-") as d:
        t0 = time.monotonic()
        p = subprocess.run(
            [sys.executable, str(DEMO)], cwd=d, capture_output=True, text=True, timeout=600
        )
        took = time.monotonic() - t0
        if p.returncode != 0:
            raise SystemExit(f"demo {i} exited {p.returncode}: {p.stderr[-2000:]}")
        result = json.loads((Path(d) / "demo-result.json").read_text())
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            (keep / f"demo-{i}.json").write_text(json.dumps(result))
        markdown = (Path(d) / "demo-report.md").read_text()
    consistent = consistency_of(result, markdown)
    a = result["answers"]
    lim = a["limit"]
    return {
        "run": i,
        "seconds": took,
        "limit": lim.get("capacity_rps") or 0.0,
        "limit_ci": lim.get("capacity_ci") or 0.0,
        "kind": f"{lim.get('kind')}: {result['stop']['condition']}",
        "steady": a.get("steady_state_throughput_rps") or 0.0,
        "steady_ci": a.get("steady_state_throughput_ci") or 0.0,
        "users": (a.get("optimal") or {}).get("users"),
        "p99": (a.get("latency_ms") or {}).get("p99"),
        "unit": a.get("unit") or "req/s",
        "consistent": consistent,
    }


def table(rows: list[dict[str, Any]]) -> str:
    """table renders the rows and the limits' spread as Markdown."""
    lines = [
        "| demo | limit ± | how | steady state ± | p99 there | optimal users | consistent | time |",
        "| ---: | ---: | --- | ---: | ---: | ---: | --- | ---: |",
    ]
    for r in rows:
        p99 = "—" if r["p99"] is None else f"{r['p99']:,.1f} ms"
        lines.append(
            f"| {r['run']} | {r['limit']:,.0f} ± {r['limit_ci']:,.0f} {r['unit']} | {r['kind']} |"
            f" {r['steady']:,.0f} ± {r['steady_ci']:,.0f} | {p99} | {r['users'] or '—'} |"
            f" {r['consistent']} | {r['seconds']:.0f} s |"
        )
    limits = [r["limit"] for r in rows]
    if len(limits) > 1 and statistics.fmean(limits) > 0:
        mean = statistics.fmean(limits)
        spread = (max(limits) - min(limits)) / mean
        worst = max(abs(x / mean - 1) for x in limits)
        lines.append("")
        lines.append(
            f"Limits: mean {mean:,.0f}, spread (max − min) / mean {spread:.1%},"
            f" largest deviation from the mean {worst:.1%}."
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="demos in a row")
    ap.add_argument("--no-record", action="store_true", help="print, do not append")
    ap.add_argument("--keep", type=Path, help="keep each demo's result JSON in this directory")
    args = ap.parse_args()
    ctx = record.Context.now()
    rows = []
    for i in range(1, args.repeat + 1):
        rows.append(one(i, args.keep))
        print(table([rows[-1]]).splitlines()[2], flush=True)
    text = table(rows)
    print(text)
    if not args.no_record:
        record.append("demo", "make demo, repeated: the same answer, within 3 minutes", ctx, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
