"""A flow of gRPC calls (docs/protocols.md, gRPC in scenarios), against the test server's probe:

    redline target --port 8080 &
    redline run examples/grpc_calls.py --host http://127.0.0.1:8080

Each VU calls Unary with its number as the payload, sends what the reply carried back as the
count of a streamed call (the probe then writes that many messages: VU 0's 0 means its default,
10), and calls a method the flow expects may fail NOT_FOUND, which it branches on."""

from redline.scenario import Scenario

s = Scenario(users=3, iterations=4)

#: PROBE: the probe's .proto (a relative proto= is looked up beside the scenario file first).
PROBE = "grpc/probe.proto"


@s.flow
def calls(u):
    # A unary call on the run's host, over h2c: the reply is JSON, its payload a variable.
    first = u.grpc(
        "/redline.probe.Probe/Unary",
        proto=PROBE,
        message={"delay_ms": 20, "payload": u.vu},
        metadata={"authorization": "Bearer t0ken"},
        timeout="2s",  # the call's deadline, sent as grpc-timeout (DEADLINE_EXCEEDED past it)
        name="unary",
    )
    n = first.json("$.payload")
    # A server-streaming call sending it: each message timed as it arrives, the reply a list.
    streamed = u.grpc(
        "/redline.probe.Probe/Stream",
        proto=PROBE,
        message={"count": n, "first_ms": 10, "gap_ms": 10, "payload": n},
        name="stream",
    )
    streamed.json("$[0].seq")
    # NOT_FOUND (5) is an answer this step expects: the flow branches on it, no error counted.
    found = u.grpc(
        "/redline.probe.Probe/Unary",
        proto=PROBE,
        message={"status": 5},
        status=("OK", "NOT_FOUND"),
        name="lookup",
    )
    with u.when(found.status == 5):
        u.get("/?latency=5ms", name="fallback", status=200)
