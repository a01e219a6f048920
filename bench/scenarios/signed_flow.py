"""A signed-request flow for benchmarks: each iteration POSTs a JSON body holding the VU, the
iteration, a UUID and the time, with the UUID and the time in headers and an HMAC-SHA256 of
the body (hex) in X-Signature, all computed by the engine per request. ``--var SIGNED=0``
compiles the same flow unsigned: the same body without the UUID and the time, no signature,
to /plain. The server of tests/verifier.py checks each signed request.

    redline run bench/scenarios/signed_flow.py --host http://127.0.0.1:PORT -u 50 -n 100000
"""

from redline.scenario import Scenario

#: KEY: the key tests/verifier.py checks the signatures with.
KEY = "k3y-for-tests"

scenario = Scenario(users=50, duration="20s")


@scenario.flow
def order(u):
    if u.setting("SIGNED", "1") == "1":
        rid, ts = u.uuid4(), u.now()
        body = u.json_encode({"vu": u.vu, "iteration": u.iteration, "id": rid, "ts": ts})
        headers = {
            "Content-Type": "application/json",
            "X-Request-Id": rid,
            "X-Timestamp": ts,
            "X-Signature": u.hmac_sha256(KEY, body),
        }
        u.post("/signed", body=body, headers=headers, name="signed", status=200)
    else:
        body = {"vu": u.vu, "iteration": u.iteration}
        u.post("/plain", json=body, name="plain", status=200)
