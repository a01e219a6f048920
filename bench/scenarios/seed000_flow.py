"""The seed-000 flow for benchmarks: submit, take the id, poll the status until SUCCEEDED or
FAILED (FAILED fails the check, as in examples/taskqueue.py) with no interval, then get the
result; no think time. Stats: submit, status, result. Any server with the task queue's API:

    redline run bench/scenarios/seed000_flow.py --host http://127.0.0.1:PORT -u 50 -d 20s
"""

from redline.scenario import Scenario, json_eq, json_in

scenario = Scenario(users=50, duration="20s")


@scenario.flow
def task(u):
    tid = u.post(
        "/tasks/submissions", json={"type": "factorial", "n": 100}, name="submit", status=202
    ).json("$.id")
    u.poll(
        f"/tasks/submissions/{tid}",
        name="status",
        every=0,
        timeout="30s",
        until=json_in("$.status", ["SUCCEEDED", "FAILED"]),
        checks=[json_eq("$.status", "SUCCEEDED")],
    )
    u.get(f"/tasks/{tid}", name="result", status=200)
