"""The seed-000 flow for benchmarks: submit, take the id, poll the status until SUCCEEDED or
FAILED (FAILED fails the check, as in examples/taskqueue.py), then get the result. Stats:
submit, status, result. Any server with the task queue's API:

    redline run bench/scenarios/seed000_flow.py --host http://127.0.0.1:PORT -u 50 -d 20s

Two run variables shape it when it compiles: ``POLL_EVERY``, the poll's interval (default 0: no
wait between polls), and ``THINK``, a pause after each task (default: none). With a 6 s think
every user's next submission goes out on a connection idle for 6 s, past uvicorn's 5 s
keep-alive timeout, so taskqueue has closed it (the failures of the hour-long soak rows in
bench/results/soak.md, provoked at once):

    redline run bench/scenarios/seed000_flow.py --host http://127.0.0.1:PORT -u 20 -d 2m \\
        --var THINK=6s --var POLL_EVERY=20ms
    .venv/bin/python bench/soak.py taskqueue --var THINK=6s --var POLL_EVERY=20ms --rate 2 ...
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
        every=u.setting("POLL_EVERY", "0"),
        timeout="30s",
        until=json_in("$.status", ["SUCCEEDED", "FAILED"]),
        checks=[json_eq("$.status", "SUCCEEDED")],
    )
    u.get(f"/tasks/{tid}", name="result", status=200)
    think = u.setting("THINK", "")
    if think:
        u.think(think)
