"""Seed 002's consumers: users that each submit a factorial task (n = 20000, a few ms of one
core), poll its status every 200 ms until it is done, and read the result. taskqueue's worker
processes compute the factorials, so its capacity in tasks a second follows --workers: the
experiment in workers.toml searches it with one worker, then two.

    redline find examples/factorials.py --host 'http://127.0.0.1:{port}' \
        --vary @examples/workers.toml --throughput submit=tasks --report workers.html
"""

from redline.scenario import Scenario, json_eq, json_in

scenario = Scenario(host="http://127.0.0.1:8000", users=4, duration="10s")


@scenario.flow()
def factorial(u):
    sub = u.post(
        "/tasks/submissions", json={"type": "factorial", "n": 20000}, name="submit", status=202
    )
    tid = sub.json("$.id")
    u.poll(
        f"/tasks/submissions/{tid}",
        name="status",
        every="200ms",
        timeout="30s",
        until=json_in("$.status", ["SUCCEEDED", "FAILED"]),
        checks=[json_eq("$.status", "SUCCEEDED")],
    )
    u.get(f"/tasks/{tid}", name="result", status=200)
