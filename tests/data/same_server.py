"""same_server: records the interval data of two runs of one server, for the compare test
that needs the same server twice (tests/test_compare.py,
``test_the_same_server_twice_is_no_change_on_recorded_intervals``).

It starts the bundled target (one thread) on a free port of 127.0.0.1, runs ``redline run``
against ``/?latency=20ms`` with 16 connections for 60 s (2 s of warm-up, 0.5 s intervals)
twice in a row, and writes the two runs' timeseries (every interval snapshot, its merged
HdrHistogram included) to same-server.json.gz beside this file, with how and when they were
recorded. Re-record with:

    .venv/bin/python tests/data/same_server.py
"""

from __future__ import annotations

import datetime
import gzip
import json
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "same-server.json.gz"
RUN = ["-c", "16", "-t", "1", "-d", "60s", "--warmup", "2s", "--interval", "0.5s", "-q"]


def main() -> None:
    redline = [sys.executable, "-m", "redline"]
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "target.log"
        with log.open("wb") as out:
            target = subprocess.Popen(
                [*redline, "target", "--threads", "1", "--port", "0"], stdout=out, stderr=out
            )
        try:
            deadline = time.monotonic() + 20
            while not (m := re.search(r"http://127\.0\.0\.1:\d+", log.read_text())):
                if time.monotonic() > deadline:
                    raise SystemExit(f"the target did not start: {log.read_text()}")
                time.sleep(0.05)
            url = m.group(0) + "/?latency=20ms"
            runs = []
            for i in range(2):
                path = Path(d) / f"run{i}.json"
                subprocess.run([*redline, "run", url, *RUN, "--json", str(path)], check=True)
                runs.append(json.loads(path.read_text())["timeseries"])
        finally:
            target.terminate()
            target.wait(10)
    doc = {
        "recorded": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "how": f"redline run URL/?latency=20ms {' '.join(RUN)}, twice, against `redline target"
        " --threads 1`",
        "machine": f"{platform.machine()}, Linux {platform.release()}",
        "runs": runs,
    }
    OUT.write_bytes(gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), mtime=0))
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
