"""live: what ``--web --prometheus`` cost the generator, per request (issue 17: within noise).

    .venv/bin/python bench/live.py [PAIRS]

Runs ``redline run URL --rate 5000 -d 4s --interval 0.25s`` against the bundled target, with
and without ``--web 0 --prometheus 0``, alternating, PAIRS times (default 5), and prints the
process's and the engine workers' CPU per request (the result's ``generator`` figures), each
run's and the ratio of the medians. The live endpoints work once per interval on the Python
thread, never per request, so the ratio should sit within the runs' own spread.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import redline


def measure(url: str, live: bool, out: Path) -> tuple[float, float]:
    """measure runs once and returns (process CPU µs / request, worker CPU µs / request)."""
    extra = ["--web", "0", "--prometheus", "0"] if live else []
    cmd = [sys.executable, "-m", "redline", "run", url, "--rate", "5000", "-d", "4s"]
    cmd += ["--interval", "0.25s", "-q", "--json", str(out), *extra]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    result = json.loads(out.read_text())
    g = result["generator"]
    return float(g["cpu_us_per_request"]), 1e6 * float(g["worker_cpu_s"]) / result["requests"]


def main(pairs: int) -> None:
    runs: dict[str, list[tuple[float, float]]] = {"plain": [], "live": []}
    with redline.Target(threads=1) as target, tempfile.TemporaryDirectory() as tmp:
        for _ in range(pairs):
            for mode in ("plain", "live"):
                runs[mode].append(measure(target.url, mode == "live", Path(tmp) / "r.json"))
    for i, what in enumerate(("process CPU µs/request", "worker CPU µs/request")):
        med = {k: statistics.median(r[i] for r in v) for k, v in runs.items()}
        each = {k: [round(r[i], 1) for r in v] for k, v in runs.items()}
        print(f"{what}: {each}  live/plain {med['live'] / med['plain']:.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
