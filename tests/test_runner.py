"""Integration tests of redline.run against the real target server on 127.0.0.1.

Each test asserts on what the server saw (its /__stats counters) as well as on what redline
reported. Every run is bounded by a request count or a duration of a few seconds.
"""

from __future__ import annotations

import time

import psutil
import pytest
import redline


def served(target: redline.Target) -> int:
    return int(target.stats()["requests"])


def test_request_count_equals_what_the_server_counted(target):
    before = served(target)
    result = redline.run(target.url + "/", connections=8, requests=3000, threads=1)
    assert result.requests == 3000
    assert served(target) - before == 3000
    assert result.errors_total == 0
    assert result.status_codes == {200: 3000}
    assert result.data["bytes_out"] > 0 and result.data["bytes_in"] > 0


def test_duration_run_agrees_with_the_server(target):
    before = served(target)
    result = redline.run(target.url + "/?size=512", connections=10, duration="2s")
    seen = served(target) - before
    # The run waits for the requests in flight when the clock runs out (a 512-byte answer
    # takes well under the grace period): every request the server saw was answered.
    assert seen == result.requests
    assert result.errors_total == 0
    assert result.requests > 100
    assert 1.8 <= result.duration_s <= 2.6
    assert result.data["bytes_in"] >= result.requests * 512


def fixed_latency_run(target: redline.Target) -> redline.Result:
    """fixed_latency_run: 10 connections for 3 s against a server that answers 20 ms after
    each request arrived; never early."""
    result = redline.run(target.url + "/?latency=20ms", connections=10, duration="3s")
    assert result.requests > 500  # 10 conns * 3 s / 20 ms = 1500 at most
    assert result.latency.min >= 19.0
    return result


def test_fixed_latency_gives_p50_near_the_servers_delay(target):
    """Beside a busy suite: p50 under 1.5 times the 20 ms delay, never under it. The answer
    leaves when the server's one thread wakes on its timer (tokio's ticks are 1 ms), and on a
    busy box that thread wakes late: the median moves by the box's median wake-up (p50
    23.6 ms, p75 31.8 ms once on the busy box). The alone test holds it to a millisecond; this one
    still fails a clock in the wrong units or one that times an answer from an earlier send
    on its connection (40 ms and more)."""
    result = fixed_latency_run(target)
    assert 19.0 <= result.latency.p50 <= 20.0 * 1.5, result.latency


@pytest.mark.alone
def test_fixed_latency_gives_p50_within_a_millisecond(target):
    result = fixed_latency_run(target)
    assert 19.0 <= result.latency.p50 <= 21.0, result.latency


def test_naps_between_hits_do_not_stretch_latency(target):
    """At ~1,100 req/s on one thread the next hit is always under a millisecond away, so the
    open model naps until it instead of waking for each response; responses wait in their
    sockets meanwhile (up to ~0.9 ms; the median grew by 0.85 ms with stamps disabled). Kernel
    receive timestamps must keep that wait out of the latency: the open model's median service
    time stays within 0.3 ms of a closed-model baseline (one connection, no naps).

    Compared pair by pair, each open run right after its own baseline, and judged on the best
    pair: the regression adds its 0.85 ms to every pair, while a neighbour's burst of CPU on
    this shared machine spoils a pair, not all of them. Pairs are taken until one is within
    both bounds, six at most (three were spoiled together on the busy box). An open run the
    box held back (under 700 of its 770 hits sent: 654 once, p99 130 ms) did not nap at 1,100
    a second and is not judged; the server's count is held in every run."""
    gaps: list[float] = []
    gaps_corrected: list[float] = []
    held_back = []
    for _ in range(6):
        base = redline.run(target.url + "/", connections=1, duration="0.7s", threads=1)
        before = served(target)
        result = redline.run(target.url + "/", rate=1100, duration="0.7s", threads=1)
        assert served(target) - before == result.requests
        assert result.errors_total == 0
        if result.requests < 700:
            held_back.append(result.requests)
            continue
        uncorrected = result.uncorrected_latency
        assert uncorrected is not None
        gaps.append(uncorrected.p50 - base.latency.p50)
        # Timed from the intended send, which the nap ends at: no more than a little later.
        gaps_corrected.append(result.latency.p50 - base.latency.p50)
        if gaps[-1] <= 0.3 and gaps_corrected[-1] <= 0.4:
            break
    assert gaps, f"the box held back every open run: {held_back} hits of 770"
    assert min(gaps) <= 0.3, (gaps, held_back)
    assert min(gaps_corrected) <= 0.4, (gaps_corrected, held_back)


def test_send_ahead_sends_hits_together_and_times_them_from_their_send(target):
    """--send-ahead 5ms at 400 req/s (a hit every 2.5 ms): each hit due within 5 ms of one
    going out goes with it, up to 5 ms before its time. The server saw every hit, and none
    of its 10 ms answers reads shorter (a hit sent early is timed from its send, not from its
    later due time); the report says the window and that the server saw bursts. The default
    window (200 us) says neither."""
    before = served(target)
    result = redline.run(
        target.url + "/?latency=10ms", rate=400, duration="1s", threads=1, send_ahead="5ms"
    )
    assert served(target) - before == result.requests == 400
    assert result.errors_total == 0
    assert result.latency.min >= 9.9, result.latency.min
    gen = result.data["generator"]
    assert gen["send_ahead_ms"] == pytest.approx(5.0)
    assert "within 5 ms of one another went out together" in gen["verdict"]
    plain = redline.run(target.url + "/", rate=400, duration="0.5s", threads=1)
    assert plain.data["generator"]["send_ahead_ms"] == pytest.approx(0.2)
    assert "went out together" not in plain.data["generator"]["verdict"]


@pytest.mark.slow
def test_stall_shows_in_corrected_percentiles():
    """Server stalls 1 s in every 5 s; at a fixed rate 20 % of the requests are intended inside
    a stall and wait (1 s - offset), uniform over 0..1 s: corrected p90 = 500 ms, p99 = 950 ms.
    A small pool queues requests inside the generator, so the uncorrected (service) time hides
    the stall: that is coordinated omission, and the corrected figure must not."""
    with redline.Target(threads=1) as t:
        started = time.monotonic()
        # Start 1.2 s into a 5 s cycle so that a 10 s run covers exactly two whole stalls.
        phase = (time.monotonic() - started) % 5.0
        time.sleep((1.2 - phase) % 5.0)
        result = redline.run(
            t.url + "/?stall=1s/5s", rate=200, duration="10s", max_connections=10, threads=1
        )
    lat, unc = result.latency, result.uncorrected_latency
    assert unc is not None
    assert 1900 <= result.requests <= 2100
    assert lat.p90 == pytest.approx(500, rel=0.10)
    assert lat.p99 == pytest.approx(950, rel=0.10)
    assert unc.p99 < 0.5 * lat.p99
    assert result.data["generator"]["late_sends"] > 0


@pytest.mark.parametrize(
    "path, cls",
    [("/?reset=1", "reset"), ("/?hang=1", "timeout"), ("/?status=500", "status")],
)
def test_errors_are_classified(target, path, cls):
    result = redline.run(target.url + path, connections=4, duration="1s", timeout="200ms")
    errors = result.errors
    assert errors[cls] > 0, errors
    others = {k: v for k, v in errors.items() if k != cls and v}
    # A reset can surface as a read error on some kernels; nothing else is acceptable.
    assert set(others) <= ({"read"} if cls == "reset" else set()), errors
    if cls == "status":
        assert result.status_codes.get(500) == errors["status"]
    # The live view sees them interval by interval, by class, and they add up to the totals.
    for name, total in errors.items():
        assert sum(s["errors_by_class"][name] for s in result.timeseries) == total, name


def test_unreachable_target_is_an_error_before_the_run(free_port):
    with pytest.raises(redline.UnreachableError):
        redline.run(f"http://127.0.0.1:{free_port}/", duration="1s")


def test_progress_receives_one_snapshot_per_interval(target):
    seen = []
    result = redline.run(
        target.url + "/", connections=4, duration="2s", interval="500ms", progress=seen.append
    )
    assert 4 <= len(seen) <= 5  # four intervals, and the drain after the end if any answers came
    assert seen == result.timeseries
    # The snapshots partition the run: their answers add up to the total, interval by interval.
    assert sum(s["requests"] for s in seen) == result.requests
    assert [round(s["t_s"], 1) for s in seen[:4]] == [0.5, 1.0, 1.5, 2.0]
    assert all(
        s["requests"] > 0 and 0 < s["p50_ms"] <= s["p95_ms"] <= s["p99_ms"] for s in seen[:4]
    )


def test_closed_stages_ramp_the_connections(target):
    before = target.stats()["connections"]
    result = redline.run(
        target.url + "/?latency=5ms", stages="2s:10,1s:10", threads=1, interval="500ms"
    )
    active = [s["active_connections"] for s in result.timeseries]
    assert max(active) == 10
    assert active[0] <= 5  # 0.5 s into a 2 s ramp to 10: about 2.5 VUs
    assert active[:4] == sorted(active[:4])  # rising through the 2 s ramp
    assert target.stats()["connections"] - before == 10 + 1  # one VU each, plus the preflight


@pytest.mark.slow
def test_memory_stays_flat_over_a_longer_run(target):
    proc = psutil.Process()
    rss = {}

    def sample(s):
        rss[round(s["t_s"])] = proc.memory_info().rss

    result = redline.run(target.url + "/", connections=50, duration="12s", progress=sample)
    assert result.requests > 100_000
    growth = rss[max(rss)] - rss[4]
    assert growth < 4 * 2**20, f"RSS grew {growth / 2**20:.1f} MiB between t=4s and the end"


def test_histograms_merge_and_agree_with_the_summary(target):
    a = redline.run(target.url + "/?latency=2ms", connections=4, requests=400)
    b = redline.run(target.url + "/?latency=20ms", connections=4, requests=400)
    merged = redline.merge_histograms([a.histograms["latency"], b.histograms["latency"]])
    from redline import _engine

    count, (p25, p75) = _engine.histogram_quantiles(merged, [0.25, 0.75])
    assert count == 800
    # Each run is half the merge, and none of b's answers (20 ms) comes before a's median, so
    # the merged p25 is a's median, and the merged p75 is b's median or, if some of a's
    # answers came later than that (a busy box's stalls), a little higher in b: never past
    # b's p75 unless a quarter of a's 2 ms answers took longer than b's median. Held to the
    # runs' own figures, not to ranges of the servers' delays: a fixed range failed on the busy
    # box, where b's own p75 read 27.9 ms.
    assert 2000 <= p25 < 20000 <= p75, (p25, p75)
    assert p25 / 1000 == pytest.approx(a.latency.p50, rel=0.01), (p25, a.latency)
    assert b.latency.p50 * 0.99 <= p75 / 1000 <= b.latency.p75 * 1.01, (p75, b.latency)
    assert a.percentile(0.5) == pytest.approx(a.latency.p50, rel=0.01)


def test_generator_cpu_is_what_the_kernel_charged_this_process(target):
    """The engine runs inside this process: the CPU it reports is bounded by what the kernel
    charged the process around the run, and is most of it (Python sleeps meanwhile)."""
    proc = psutil.Process()
    before = proc.cpu_times()
    result = redline.run(target.url + "/", connections=4, duration="1s", threads=1)
    after = proc.cpu_times()
    charged = (after.user - before.user) + (after.system - before.system)
    g = result.generator
    assert g["cpu_s"] <= charged + 0.02, (g, charged)
    assert g["cpu_s"] >= 0.5 * charged > 0, (g, charged)
    assert 0 < g["worker_cpu_s"] <= g["cpu_s"] + 0.01, g


def test_the_gil_is_released_while_the_engine_runs(target):
    """A Python thread keeps running during a run: the engine does not hold the GIL."""
    import threading

    ticks = 0
    done = threading.Event()

    def spin():
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)

    t = threading.Thread(target=spin)
    t.start()
    try:
        redline.run(target.url + "/", connections=4, duration="1s")
    finally:
        done.set()
        t.join(timeout=5)
    assert ticks > 200  # about 1000 if never blocked; 0-10 if the GIL were held
