"""Seed 004's question: does hedging help, and by how much? Users submit http-fetch tasks to
taskqueue (services/taskqueue) against an origin with a long tail; each fetch has 300 ms
(``timeout_ms``) or the task FAILS, a failed check of the status poll. With ``--var
HEDGE_MS=60`` taskqueue sends a second request when the first has not answered in 60 ms and
takes whichever answers first ("The Tail at Scale"); ``HEDGE_MS=0``, the default, sends none.
Run it both ways and compare (docs/compare.md, "The seed workloads"):

    redline target --port 8081 &
    taskqueue serve --port 8000 --data-dir /tmp/tq --allow-fetch-cidr 127.0.0.0/8 &
    ORIGIN='http://127.0.0.1:8081/?latency=lognormal:20ms:1.5'
    redline run examples/hedging.py --host http://127.0.0.1:8000 --var ORIGIN="$ORIGIN" \
        --var HEDGE_MS=0 --json off.json
    redline run examples/hedging.py --host http://127.0.0.1:8000 --var ORIGIN="$ORIGIN" \
        --var HEDGE_MS=60 --json on.json
    redline compare off.json on.json

The origin's latency is lognormal, median 20 ms, sigma 1.5: P(> 300 ms) = 1 - Phi(ln 15 / 1.5)
= 3.6 % of fetches time out without hedging; with a hedge at 60 ms a task fails only when the
first request takes over 300 ms and the hedge over 240 ms: 3.6 % x 4.9 % = 0.17 %.
"""

from redline.scenario import Scenario, between, json_eq, json_in

scenario = Scenario(host="http://127.0.0.1:8000", users=50, duration="1m")


@scenario.flow()
def fetch(u):
    submission = {"type": "http-fetch", "url": u.var("ORIGIN"), "timeout_ms": 300}
    hedge_ms = int(u.setting("HEDGE_MS", "0"))
    if hedge_ms:
        submission["hedge_after_ms"] = hedge_ms
    sub = u.post("/tasks/submissions", json=submission, name="submit", status=202)
    tid = sub.json("$.id")
    u.poll(
        f"/tasks/submissions/{tid}",
        name="status",
        every="500ms",
        timeout="30s",
        until=json_in("$.status", ["SUCCEEDED", "FAILED"]),
        checks=[json_eq("$.status", "SUCCEEDED")],
    )
    u.get(f"/tasks/{tid}", name="result", status=200)
    u.think(between(0.5, 1))
