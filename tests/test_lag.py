"""The generator's own lag measured apart from the server's time (issue 35): a preempted
generator moves the lag, not the latency; and compare, judging like with like, fails the gate
on a 25 % slower server and not on the same server twice.

Both load a core on purpose (a loop that takes a pinned generator's core; runs whose tails are
compared), so they are marked ``alone``. What they measure is the generator, so the server
must not be what varies: it runs in its own process on the last core at SCHED_FIFO (as
bench/lag.py --server-rt does), so that a loaded machine (two cores shared with builds and
other suites) delays neither its timers nor its answers. Where real-time priority is not
allowed, the tests skip: a server at normal priority on a loaded machine has a p99 of 10 ms
and more against its 4 ms, and no tail comparison can see 1 ms through that."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

pytestmark = pytest.mark.alone

ROOT = Path(__file__).resolve().parent.parent


class Server:
    """Server is ``redline target`` (one thread) in a process of its own, pinned to ``core``
    at SCHED_FIFO 50."""

    def __init__(self, core: int) -> None:
        def realtime() -> None:
            os.sched_setaffinity(0, {core})
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "redline", "target", "--threads", "1"],
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=realtime,
        )
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        self.url = line.strip().rsplit(" ", 1)[-1]
        assert self.url.startswith("http://"), line

    def requests(self) -> int:
        """requests: how many requests the server answered (its own count)."""
        with urllib.request.urlopen(self.url + "/__stats", timeout=10) as r:
            return int(json.loads(r.read())["requests"])

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """A 4 ms-capable target on the last core at real-time priority (skips without it)."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("needs two cores: the generator's and the server's")
    try:
        probe = subprocess.run(
            ["true"],
            preexec_fn=lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50)),
            check=False,
        )
    except (subprocess.SubprocessError, PermissionError):
        probe = None
    if probe is None or probe.returncode != 0:
        pytest.skip("needs SCHED_FIFO for the server (root or CAP_SYS_NICE)")
    s = Server(cores[-1])
    try:
        yield s
    finally:
        s.stop()


def _pinned_run(url: str, out: Path, core: int, *flags: str) -> dict[str, Any]:
    """_pinned_run runs redline (one thread) on ``core`` alone, at 400 req/s for 4 s."""
    p = subprocess.run(
        [sys.executable, "-m", "redline", "run", url, "--rate", "400", "-d", "4s"]
        + ["--threads", "1", "-q", "--json", str(out), *flags],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.sched_setaffinity(0, {core}),
    )
    assert p.returncode == 0, p.stderr
    return dict(json.loads(out.read_text()))


def _busy_core() -> Any:
    """_busy_core is bench/lag.py's `busy_core`: the same loop takes the core in the test and in
    the bench's table. Run at SCHED_FIFO it spins 3 ms of every 10, so every request due while
    it spins leaves up to 3 ms late, about a third of them, and the lag shows at the p90. (A
    plain spinning loop at normal priority barely delays a thread that sleeps between sends:
    the scheduler lets it preempt the loop at once on waking, and the lag's p99 read 0.4-0.5 ms
    quiet or busy alike, too little for any figure to tell a lag charged to the server.) It
    ends with its parent, even one killed with -9: never left spinning."""
    path = list(sys.path)
    sys.path.insert(0, str(ROOT / "bench"))  # it imports bench/record.py
    try:
        spec = importlib.util.spec_from_file_location("lag", ROOT / "bench" / "lag.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = path
    return module.busy_core


def test_a_busy_core_moves_the_lag_not_the_latency(server, tmp_path):
    """A 4 ms server at 400 req/s, redline pinned to a core: quiet, then beside a loop that
    takes that core 3 ms of every 10 (the generator's thread loses whole slices). The latency
    (wait + the server's time from the kernel's send stamp) stays the server's; the lag takes
    the preemption; --latency-from intended puts it back in the figure.

    Judged at the p90, where a third of the busy run's requests carry up to 3 ms of lag (the
    lag's p90 read 2.1 ms, the intended figure's p90 6.2 ms against 4.1): a fresh-clone CI run
    once read a busy p99 of 9.9 ms against a quiet 5.0, a stall of the whole VM (the server's
    answers came late too) that the 1 % tail of a 4 s run cannot tell from a lag charged to
    the server; the p90 moves only if a tenth of the requests do."""
    core = sorted(os.sched_getaffinity(0))[0]
    url = f"{server.url}/?latency=4ms"
    before = server.requests()
    quiet = _pinned_run(url, tmp_path / "quiet.json", core)
    with _busy_core()(str(core), realtime=True):
        busy = _pinned_run(url, tmp_path / "busy.json", core)
        intended = _pinned_run(url, tmp_path / "intended.json", core, "--latency-from", "intended")
    answered = quiet["requests"] + busy["requests"] + intended["requests"]
    assert server.requests() - before >= answered
    # Kernel-timed sends: every write's syscall bracketed, a wide one read from the kernel
    # where its request asked for a stamp (one in 16), else user space's (mixed).
    assert busy["generator"]["send_stamps"] in ("kernel", "mixed"), busy["generator"]
    # The server answers in 4 ms: the latency's median is its, quiet or busy.
    for doc in (quiet, busy):
        assert 4.0 <= doc["latency_ms"]["p50"] < 5.5, doc["latency_ms"]
    # The busy run's lag is the loop's: up to 3 ms for the requests due while it spins.
    for doc in (busy, intended):
        assert doc["lag_ms"]["p90"] >= 1.0, doc["lag_ms"]
    # ... and it is not in the latency: the busy p90 stays the quiet one's, well below the
    # same load timed from the intended send, which carries the lag.
    assert busy["latency_ms"]["p90"] < quiet["latency_ms"]["p90"] + 0.5, (busy, quiet)
    assert busy["latency_ms"]["p90"] + 1.0 < intended["latency_ms"]["p90"], (busy, intended)
    assert intended["generator"]["latency_from"] == "intended"


def _run(s: Server, latency: str, path: Path, *load: str) -> None:
    p = run_cli(
        "run", f"{s.url}/?latency={latency}", *load, "-d", "16s",
        "--interval", "0.5s", "--json", str(path), "-q",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("load", [("--rate", "400"), ("-c", "5")], ids=["open", "closed"])
def test_compare_fails_a_25_percent_slower_server_and_not_the_same(server, tmp_path, load):
    """The issue's compare case, a 25 % slower server at three times the issue's service time:
    a 12 ms server and a 15 ms one, --fail-on 'p99:+10%' exits 1; the 12 ms server run again
    exits 0. 16 s runs (16 windows of 1 s), twice the issue's 8 s: a fresh-clone CI run's 8 s
    base caught a stall (p99 14.3 ms, p99.9 21.7 against a 12 ms server), and compare rightly
    could not tell the p99's +10.2 % from nothing (CI [-12.5, +16.9]); over twice the windows
    and requests, one stall weighs half as much.

    Why not 4 ms against 5 ms: on a CI VM about 1 % of answers came 2-3 ms late from both
    servers alike (the 4 ms server's p99 read 7.12 ms with its p50 at 4.11; the 5 ms one's
    7.70, p50 5.12), so the two p99s differed by 8 %, under the gate's 10 %: the tail measured
    that VM, and compare rightly called it "~". At 12 and 15 ms the same few milliseconds leave
    the p99s about 20 % apart."""
    base, slow, same = (tmp_path / f"{n}.json" for n in ("base", "slow", "same"))
    before = server.requests()
    _run(server, "12ms", base, *load)
    _run(server, "15ms", slow, *load)
    _run(server, "12ms", same, *load)
    docs = [json.loads(p.read_text()) for p in (base, slow, same)]
    assert server.requests() - before >= sum(d["requests"] for d in docs)
    p = run_cli("compare", str(base), str(slow), "--fail-on", "p99:+10%")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "FAIL: p99 got worse by +" in p.stdout
    p = run_cli("compare", str(base), str(same), "--fail-on", "p99:+10%")
    assert p.returncode == 0, p.stdout + p.stderr
