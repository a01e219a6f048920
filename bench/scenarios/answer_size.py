"""Each VU asks the test server for an answer of SIZE bytes, then thinks 1-2 s: the memory a
VU's connection keeps after its largest answer (issue 35's 10,000-VU line). A connection's
read buffer starts at 1 KiB and grows to 8 KiB on the first read that fills it
(crates/engine/src/conn.rs, READ_BUF_FIRST), given back when the VU thinks (Lane::rest), so
SIZE=500 and SIZE=3000 (the default) tell the two apart:

    redline target --threads 1 &
    /usr/bin/time -f %M redline run bench/scenarios/answer_size.py --host http://127.0.0.1:PORT \\
        --var SIZE=3000 --stages 10s:10000,10s:10000 --timeout 30s -q
"""

from redline.scenario import Scenario, between

scenario = Scenario(host="http://127.0.0.1:8000", users=20, duration="1m")


@scenario.flow()
def get(u):
    u.get("/x?size=" + u.var("SIZE", "3000"), name="get")
    u.think(between(1, 2))
