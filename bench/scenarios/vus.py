"""Peak memory of 10,000 concurrent VUs of examples/taskqueue.py in one redline process
(issue 8: <= 200 MB RSS; issue 35: <= 150 MB), in one run:

    .venv/bin/python bench/scenarios/vus.py [--vus 10000] [--ramp 20] [--hold 20] [--no-record]

One taskqueue (fresh data dir, fetches allowed to 127.0.0.0/8) and one origin for its
http-fetch tasks (`redline target`), all on 127.0.0.1; redline ramps to --vus over --ramp
seconds and holds them --hold seconds. Its peak RSS is the kernel's (wait4 ru_maxrss); the
request counts, errors and VUs reached come from its JSON report. The server cannot serve ten
thousand users at their pace on this box: the VUs then wait on it, which is the point (a VU is
cheap while it waits), and the errors it answers with are reported, not hidden.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(HERE))
import record  # noqa: E402
from run import VENV_BIN, measure, start_taskqueue  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vus", type=int, default=10_000)
    ap.add_argument("--ramp", type=int, default=20)
    ap.add_argument("--hold", type=int, default=20)
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument(
        "--library",
        action="store_true",
        help="run through the Python API (redline.run with the compiled plan) "
        "instead of the redline command, whose start-up imports numpy and scipy "
        "for `redline find` (about 85 MB)",
    )
    args = ap.parse_args()
    start = record.Context.now()
    with tempfile.TemporaryDirectory() as tmp:
        server, url = start_taskqueue(tmp, "--allow-fetch-cidr", "127.0.0.0/8")
        origin = subprocess.Popen(
            [str(VENV_BIN / "redline"), "target", "--threads", "1"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert origin.stdout is not None
            origin_url = origin.stdout.readline().split()[-1]
            js = Path(tmp) / "r.json"
            argv = [
                str(VENV_BIN / "redline"),
                "run",
                str(ROOT / "examples/taskqueue.py"),
                "--host",
                url,
                "--var",
                f"ORIGIN={origin_url}/",
                "--stages",
                f"{args.ramp}s:{args.vus},{args.hold}s:{args.vus}",
                "-q",
                "--json",
                str(js),
                "--timeout",
                "30s",
            ]
            if args.library:
                argv = [sys.executable, str(HERE / "vus_library.py"), *argv[2:]]
            r = measure(argv, args.ramp + args.hold + 120)
            out, cpu, rss_kb = r.out, r.user + r.sys, r.rss
            if not js.exists():
                raise SystemExit("redline wrote no report:\n" + out[-3000:])
            doc = json.loads(js.read_text())
        finally:
            server.terminate()
            origin.terminate()
            server.wait(timeout=10)
            origin.wait(timeout=10)
    it = doc["scenario"]["iterations"]
    names = doc["per_name"]
    head = (
        "| VUs | peak RSS MB | CPU s | requests | errors | unfinished "
        "| iterations started/completed/failed | submit / status / result |"
    )
    iters = f"{it['started']:,}/{it['completed']:,}/{it['failed']:,}"
    per = " / ".join(f"{names[n]['requests']:,}" for n in ("submit", "status", "result"))
    row = (
        f"| {doc['connections']:,} | {rss_kb / 1024:.0f} | {cpu:.1f} | {doc['requests']:,} "
        f"| {doc['errors_total']:,} | {doc.get('unfinished', 0):,} | {iters} | {per} |"
    )
    table = "\n".join([head, "|---:|---:|---:|---:|---:|---:|---|---|", row])
    print(table)
    print("errors:", json.dumps(doc["errors"]))
    for n, e in names.items():
        if e.get("failure_reasons"):
            print(n, json.dumps(e["failure_reasons"]))
    if not args.no_record:
        record.append(
            "scenarios", f"{args.vus:,} VUs of examples/taskqueue.py: peak RSS", start, table
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
