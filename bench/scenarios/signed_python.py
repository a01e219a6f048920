"""Client CPU per request of the signed-request flow with a Python step (issue 33), in one run:

    .venv/bin/python bench/scenarios/signed_python.py [--seconds 20] [--locust PATH] [--no-record]

against tests/verifier.py on this process, pinned to core 0 (it checks each request: the
HMAC-SHA256 of the body, a new UUIDv4, a timestamp within 30 s, the body's id and ts equal to
the headers; right and wrong counted):
  redline  bench/scenarios/signed_python_flow.py: UUID, time, body and signature computed by
           `u.python(sign, ...)` on redline's Python thread, 50 VUs, 1 thread (and the engine's
           CPU alone from its report: the Python thread included, the start-up not)
  locust   bench/scenarios/signed_locustfile.py, the same sign() in a FastHttpUser, 50 users
Each generator runs pinned to core 1; its CPU is the kernel's rusage of its process (wait4),
its requests what the server counted right and wrong (the server's count, not the tool's).
The verifying server is Python, so it, not the generators, may set the rate: the figure
compared is CPU per request. Results are appended to bench/results/scenarios.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent.parent / "tests"))
sys.path.insert(0, str(HERE))  # before bench/: its run.py is another module
import record  # noqa: E402
from run import USERS, VENV_BIN, Run, measure, pinned  # noqa: E402
from verifier import Verifier  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--locust", default=shutil.which("locust") or "")
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    start = record.Context.now()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})  # this process (the verifier) on core 0
    server = Verifier().__enter__()
    url = server.url

    def counts() -> tuple[int, int]:
        return server.right["/signed"], sum(server.wrong.values())

    rows: list[tuple[str, int, int, Run]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            before = counts()
            js = Path(tmp) / "redline.json"
            argv = [str(VENV_BIN / "redline"), "run", str(HERE / "signed_python_flow.py")]
            argv += ["--host", url, "-u", str(USERS), "-d", f"{args.seconds}s", "-t", "1"]
            r = measure(pinned("1", [*argv, "-q", "--json", str(js)]), args.seconds + 60)
            after = counts()
            doc = json.loads(js.read_text())
            right, wrong = after[0] - before[0], after[1] - before[1]
            rows.append(("redline (Python step)", right, wrong, r))
            engine = Run("", doc["generator"]["cpu_s"], 0.0, r.rss, r.segs)
            rows.append(("redline (engine only)", right, wrong, engine))
            py = doc["scenario"]["python"]
            if args.locust:
                before = counts()
                argv = [args.locust, "-f", str(HERE / "signed_locustfile.py"), "--headless"]
                argv += ["-u", str(USERS), "-r", str(USERS), "-t", f"{args.seconds}s", "-H", url]
                r = measure(pinned("1", [*argv, "--only-summary"]), args.seconds + 60)
                after = counts()
                rows.append(("locust", after[0] - before[0], after[1] - before[1], r))
    finally:
        server.close()
    text = table(rows, py)
    print(text)
    if not args.no_record:
        record.append("scenarios", "signed flow with a Python step: client CPU per request",
                      start, text)  # fmt: skip
    return 0


def table(rows: list[tuple[str, int, int, Run]], py: dict) -> str:
    """table renders the rows and the Python step's own cost."""
    lines = [
        "| tool | requests right (server) | wrong | CPU s (user + sys) | CPU µs/req | "
        "Locust ÷ it | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]

    def us(n: int, r: Run) -> float:
        return (r.user + r.sys) / n * 1e6 if n else float("nan")

    loc = next((us(n + w, r) for t, n, w, r in rows if t == "locust"), float("nan"))
    for tool, n, wrong, r in rows:
        cost = us(n + wrong, r)
        vs = f"{loc / cost:.1f}×" if tool != "locust" and loc == loc else ""
        cpu = f"{r.user + r.sys:.2f} ({r.user:.2f} + {r.sys:.2f})" if r.sys else f"{r.user:.2f}"
        lines.append(
            f"| {tool} | {n:,} | {wrong} | {cpu} | {cost:.1f} | {vs} | {r.rss / 1024:.0f} |"
        )
    lines.append("")
    lines.append(
        f"redline's Python step: {py['calls']:,} calls, {py['us_per_call']:.1f} µs a call, "
        f"its thread {py['cpu_s']:.2f} s CPU ({py['cpu_share']:.0%} of the process's), "
        f"in calls {py['busy_ratio']:.0%} of the run"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
