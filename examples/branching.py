"""Seed 000 with a branch on the poll: submit a task, poll its status until SUCCEEDED or
FAILED, then branch on what it said. SUCCEEDED: fetch the result. FAILED: resubmit it once
(with `X-Retry-Of: ID`), poll the retry, and fetch its result if it succeeded. Stats: submit,
status, result, resubmit; the polls are tallied by what they said.

    redline target --fail-every 7 &          # every 7th task fails; counts in /__stats
    redline run examples/branching.py --host http://127.0.0.1:PORT -u 10 --iterations 50

The target's `tasks_results` and `tasks_resubmitted` then equal its `tasks_succeeded` and
`tasks_failed` (tests/test_scenario_branching.py). Against taskqueue (services/taskqueue) the
same flow runs as is; `--var EVERY=0` polls back to back.
"""

from redline.scenario import Scenario, json_eq, json_in

scenario = Scenario(host="http://127.0.0.1:8000", users=10, duration="1m")

DONE = ["SUCCEEDED", "FAILED"]
TASK = {"type": "factorial", "n": 100}


@scenario.flow
def task(u):
    every = float(u.setting("EVERY", "0.5"))
    tid = u.post("/tasks/submissions", json=TASK, name="submit", status=202).json("$.id")
    st = u.poll(
        f"/tasks/submissions/{tid}",
        name="status",
        every=every,
        timeout="60s",
        until=json_in("$.status", DONE),
        tally="$.status",
    ).json("$.status")
    with u.when(st == "SUCCEEDED"):
        u.get(f"/tasks/{tid}", name="result", status=200)
    with u.otherwise():  # FAILED: resubmit once
        retry = u.post(
            "/tasks/submissions",
            json=TASK,
            headers={"X-Retry-Of": tid},
            name="resubmit",
            status=202,
        ).json("$.id")
        u.poll(
            f"/tasks/submissions/{retry}",
            name="status",
            every=every,
            timeout="60s",
            until=json_in("$.status", DONE),
            tally="$.status",
        )
        with u.when(json_eq("$.status", "SUCCEEDED")):  # a check judges the last response
            u.get(f"/tasks/{retry}", name="result", status=200)
