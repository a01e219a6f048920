"""The signed-request flow in Locust (FastHttpUser): what bench/scenarios/signed_python_flow.py
does with a Python step, as a Locust user writes it (the same sign())."""

import hashlib
import hmac
import itertools
import json
import time
import uuid

from locust import FastHttpUser, task

KEY = "k3y-for-tests"
_VUS = itertools.count()


def sign(vu, iteration):
    rid, ts = str(uuid.uuid4()), str(int(time.time()))
    body = json.dumps({"vu": vu, "iteration": iteration, "id": rid, "ts": ts})
    sig = hmac.new(KEY.encode(), body.encode(), hashlib.sha256).hexdigest()
    return {"body": body, "id": rid, "ts": ts, "sig": sig}


class Signer(FastHttpUser):
    def on_start(self):
        self.vu, self.iteration = str(next(_VUS)), 0

    @task
    def order(self):
        s = sign(self.vu, str(self.iteration))
        self.iteration += 1
        headers = {
            "Content-Type": "application/json",
            "X-Request-Id": s["id"],
            "X-Timestamp": s["ts"],
            "X-Signature": s["sig"],
        }
        self.client.post("/signed", data=s["body"], headers=headers, name="signed")
