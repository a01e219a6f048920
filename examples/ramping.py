"""Seed 002: ramping virtual users (k6's ramping-vus), 0 -> 350 over 20 s, then -> 0 over
10 s; each user GETs the page, checks the 200 and sleeps half a second.

    redline run examples/ramping.py --host http://127.0.0.1:PORT
    redline run examples/ramping.py --host http://127.0.0.1:PORT --stages 5s:50,5s:0   # shorter
"""

from redline.scenario import Scenario

scenario = Scenario(stages=[("20s", 350), ("10s", 0)], thresholds=["errors<1%"])


@scenario.flow
def visit(u):
    u.get("/", name="page", status=200)
    u.think("500ms")
