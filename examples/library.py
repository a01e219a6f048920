"""redline as a library, in the spirit of vegeta's README: start a server, load it, read the
figures. Run: .venv/bin/python examples/library.py"""

import redline

with redline.Target() as target:
    # Closed model: 20 virtual users, each sending its next request when the last completes.
    closed = redline.run(target.url + "/?latency=5ms", connections=20, duration="3s")
    print(f"closed: {closed.rps:.0f} req/s, p99 {closed.latency.p99:.2f} ms")

    # Open model: 500 req/s whatever the server does; latency from the intended send time.
    opened = redline.run(
        target.url + "/?latency=5ms",
        rate=500,
        duration="3s",
        progress=lambda s: print(f"  t={s['t_s']:.0f}s {s['achieved_rate']:.0f} req/s"),
    )
    service = opened.uncorrected_latency
    assert service is not None  # the open model always keeps the uncorrected figure
    print(f"open:   p99 {opened.latency.p99:.2f} ms (service time {service.p99:.2f} ms)")
    print(f"server counted {target.stats()['requests']} requests")
