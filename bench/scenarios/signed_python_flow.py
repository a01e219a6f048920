"""The signed-request flow with a Python step (issue 33): the UUID, the time, the JSON body
and its HMAC-SHA256 computed in Python per iteration by the Locust user's own function
(bench/scenarios/signed_locustfile.py), pasted in; tests/verifier.py checks each request.

    redline run bench/scenarios/signed_python_flow.py --host http://127.0.0.1:PORT -u 50
"""

import hashlib
import hmac
import json
import time
import uuid

from redline.scenario import Scenario

#: KEY: the key tests/verifier.py checks the signatures with.
KEY = "k3y-for-tests"

scenario = Scenario(users=50, duration="20s")


def sign(vu, iteration):
    rid, ts = str(uuid.uuid4()), str(int(time.time()))
    body = json.dumps({"vu": vu, "iteration": iteration, "id": rid, "ts": ts})
    sig = hmac.new(KEY.encode(), body.encode(), hashlib.sha256).hexdigest()
    return {"body": body, "id": rid, "ts": ts, "sig": sig}


@scenario.flow
def order(u):
    s = u.python(sign, u.vu, u.iteration, returns=("body", "id", "ts", "sig"))
    headers = {
        "Content-Type": "application/json",
        "X-Request-Id": s["id"],
        "X-Timestamp": s["ts"],
        "X-Signature": s["sig"],
    }
    u.post("/signed", body=s["body"], headers=headers, name="signed", status=200)
