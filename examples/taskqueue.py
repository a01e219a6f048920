"""Seed 000: users of the task queue (services/taskqueue). Five http-fetch submissions for
every factorial one; each polls the task's status every second until SUCCEEDED or FAILED
(FAILED fails the check) and then reads the result. Stats: submit, status, result; the
status polls are tallied by what they said (QUEUED, RUNNING, SUCCEEDED, FAILED), so the run's
report charts the queue filling and draining as the users saw it.

    taskqueue serve --port 0 --data-dir /tmp/tq --allow-fetch-cidr 127.0.0.0/8 &
    redline run examples/taskqueue.py --host http://127.0.0.1:PORT \
        --var ORIGIN=http://127.0.0.1:ORIGIN_PORT/ -u 100 -d 1m
"""

from redline.scenario import Scenario, between, json_eq, json_in

scenario = Scenario(host="http://127.0.0.1:8000", users=20, duration="1m")

DONE = ["SUCCEEDED", "FAILED"]


def task(u, submission):
    sub = u.post("/tasks/submissions", json=submission, name="submit", status=202)
    tid = sub.json("$.id")
    u.poll(
        f"/tasks/submissions/{tid}",
        name="status",
        every="1s",
        timeout="60s",
        until=json_in("$.status", DONE),
        checks=[json_eq("$.status", "SUCCEEDED")],
        tally="$.status",
    )
    u.get(f"/tasks/{tid}", name="result", status=200)
    u.think(between(1, 2))


@scenario.flow(weight=5)
def fetch(u):
    task(u, {"type": "http-fetch", "url": u.var("ORIGIN")})


@scenario.flow(weight=1)
def factorial(u):
    task(u, {"type": "factorial", "n": 1000})
