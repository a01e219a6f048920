"""Seed 004, as a JMeter thread group: 100 threads started over a 25 s ramp-up, each running
100 loops of one GET of the test server's /api/work (a flaky upstream: ~50 ms lognormal,
5 % 500s, 5 % 429s). The run ends when every thread has done its loops: 10,000 requests.

    redline target &
    redline run examples/jmeter_style.py --host http://127.0.0.1:PORT
"""

from redline.scenario import Scenario

scenario = Scenario(users=100, ramp_up="25s", loops=100)


@scenario.flow
def work(u):
    u.get("/api/work", name="work")
