"""The seed-000 flow with 6 s of think time after each task: every user's next submission goes
out on a connection idle for 6 s, past uvicorn's 5 s keep-alive timeout, so taskqueue has
closed it (the failures of the hour-long soak rows in bench/results/soak.md, provoked at once).

    redline run bench/scenarios/seed000_think.py --host http://127.0.0.1:PORT -u 20 -d 2m
    .venv/bin/python bench/soak.py taskqueue --flow bench/scenarios/seed000_think.py --rate 2 ...
"""

from redline.scenario import Scenario, json_eq, json_in

scenario = Scenario(users=20, duration="2m")


@scenario.flow
def task(u):
    tid = u.post(
        "/tasks/submissions", json={"type": "factorial", "n": 100}, name="submit", status=202
    ).json("$.id")
    u.poll(
        f"/tasks/submissions/{tid}",
        name="status",
        every="20ms",
        timeout="30s",
        until=json_in("$.status", ["SUCCEEDED", "FAILED"]),
        checks=[json_eq("$.status", "SUCCEEDED")],
    )
    u.get(f"/tasks/{tid}", name="result", status=200)
    u.think("6s")
