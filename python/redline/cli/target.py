"""target: ``redline target``, the bundled test server served until Ctrl-C
(:class:`redline.Target` is the library's)."""

from __future__ import annotations

import argparse
import signal
import time

from redline.errors import RedlineError


def add_target_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """add_target_parser defines ``redline target``."""
    t = sub.add_parser(
        "target",
        help="serve redline's bundled test server until Ctrl-C",
        description=TARGET_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    t.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    t.add_argument(
        "--port", type=int, default=0, metavar="PORT", help="0 picks a free port (default)"
    )
    t.add_argument(
        "--threads", type=int, metavar="N", help="server threads (default: one per core)"
    )
    t.add_argument("--tls-cert", metavar="FILE", help="serve https with this PEM certificate")
    t.add_argument("--tls-key", metavar="FILE", help="the PEM private key of --tls-cert")
    _add_probe_flags(t.add_argument_group("probes (server-wide behaviour of known truth)"))
    t.set_defaults(func=cmd_target)
    return t


def _add_probe_flags(probes: argparse._ArgumentGroup) -> None:
    """_add_probe_flags defines the server-wide probes of ``redline target``."""
    probes.add_argument(
        "--capacity",
        type=int,
        metavar="N",
        help="serve at most N requests at once, the rest queue (needs --service-time)",
    )
    probes.add_argument(
        "--service-time",
        metavar="DURATION",
        help="how long a request is served alone, e.g. 10ms (with --capacity: each slot is held "
        "this long, capacity = N / DURATION req/s; or with --contention)",
    )
    probes.add_argument(
        "--queue-limit",
        type=int,
        metavar="Q",
        help="with --capacity: a request that would wait when Q already wait gets 503 "
        "(Retry-After: 1) at once",
    )
    probes.add_argument(
        "--pause",
        metavar="D/P",
        help="with --capacity: serve nothing for the first D of every P, e.g. 50ms/1s",
    )
    probes.add_argument(
        "--contention",
        type=float,
        metavar="KAPPA",
        help="requests in service slow each other (USL crosstalk KAPPA, e.g. 0.01; needs "
        "--service-time; not with --capacity)",
    )
    probes.add_argument(
        "--serial",
        type=float,
        metavar="SIGMA",
        help="with --contention: the serialised share SIGMA (default 0)",
    )
    probes.add_argument(
        "--rate-limit",
        type=float,
        metavar="R",
        help="a token bucket in front: R requests a second pass, the rest are refused",
    )
    probes.add_argument(
        "--burst", type=int, metavar="B", help="with --rate-limit: the bucket's size (default 1)"
    )
    probes.add_argument(
        "--refuse-status",
        type=int,
        metavar="STATUS",
        help="with --rate-limit: the status of refused requests (default 503; 429 is common)",
    )
    probes.add_argument(
        "--fail-every",
        type=int,
        metavar="N",
        help="the task app fails every N-th fresh task (status FAILED); X-Retry-Of: ID "
        "resubmits a failed one",
    )
    probes.add_argument(
        "--idle-timeout",
        metavar="DURATION",
        help="close an HTTP/1.1 connection that waits this long for a request (uvicorn: 5s)",
    )


#: TARGET_HELP: ``redline target --help``'s description, each probe with its truth.
TARGET_HELP = """Serve redline's bundled test server until Ctrl-C. Behaviour is per request, by
query parameters on any path (combine them: /x?size=1024&latency=20ms); /__stats counts what it
saw.

Query knobs (unknown ones are ignored, bad values are a 400):
  latency=20ms                     answer after a fixed time (us, ms, s)
  latency=uniform:5ms..50ms        ... uniform between two times
  latency=exp:20ms                 ... exponential with that mean
  latency=lognormal:20ms:0.5       ... lognormal with that median and sigma
  size=1024                        a body of N filler bytes (default: "ok")
  chunked=1                        send the body chunked
  status=500&p=0.1                 answer 500 to a share p of requests (p=1 when left out)
  p503=0.1&p429=0.05               several statuses at once, each with its share
  stall=1s/5s                      hold every answer in the first 1 s of each 5 s window
  close=1                          answer with Connection: close, then close
  hang=1                           never answer (the connection stays open)
  reset=0.1                        abort a share of connections with a TCP RST instead
Paths: /api/work (a flaky upstream: lognormal latency, random 500 and 429), /form and
/thanks (a survey form with a session cookie), /tasks/... (a task queue's API).

Probes: server-wide behaviour whose truth is known (N slots, S service time, load L req/s):
  --capacity N --service-time S    at most N in service, each for exactly S, the rest wait
                                   (FIFO): throughput N/S under overload, C/S with C < N clients
  ... --queue-limit Q              load shedding: beyond Q waiting, 503 + Retry-After: 1 at once;
                                   accepted stays N/S, refused share 1 - (N/S)/L
  ... --pause D/P                  noise: no service starts or completes in the first D of every
                                   P (in-progress ones resume after): capacity N/S x (1 - D/P)
  --contention K [--serial s] --service-time S
                                   USL: with n in service each takes S x f(n),
                                   f(n) = 1 + s(n-1) + K n(n-1) (processor sharing, exact);
                                   N users get N / (S f(N)), peak at N* = sqrt((1-s)/K), falling
                                   beyond; best power X^2/N at the root of 3KN^2 + (s-K)N - (1-s).
                                   S=10ms K=0.01: 526 req/s at 10 users, power best at ~6.
                                   Open model past the peak: collapse (n grows, throughput falls),
                                   and it stays collapsed when the load drops back (metastable)
  --rate-limit R [--burst B] [--refuse-status 429]
                                   token bucket in front of any of the above (or of the plain
                                   immediate answer): accepted rate R (at most B + R x W in any
                                   window W), the rest 503 (or STATUS) with Retry-After
  --fail-every N                   the task app fails every N-th fresh task (FAILED); a POST with
                                   X-Retry-Of: ID of a failed task is a resubmission
  --idle-timeout T                 close an HTTP/1.1 connection idle for T between requests
                                   (FIN), as a keep-alive timeout does (uvicorn: 5s)
/__stats: queue_* (capacity), queue_refused, contention_busy/peak/served, rate_accepted/refused,
tasks_succeeded/failed/resubmitted, idle_closed, grpc_calls/received/messages/failed (the gRPC
probe, examples/grpc/probe.proto).
"""


def cmd_target(args: argparse.Namespace) -> int:
    """cmd_target serves the target server until SIGINT or SIGTERM."""
    from redline.runs.target import Target

    if not 0 <= args.port <= 65535:
        raise RedlineError(f"--port: must be 0..65535, got {args.port}")
    # A plain flag, not a threading.Event: Event.set takes a lock that the main thread may
    # hold inside Event.wait when the handler runs there, and the process then hangs until
    # its supervisor's SIGKILL (a target lost its "served" line that way).
    stop: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    if (args.tls_cert is None) != (args.tls_key is None):
        raise RedlineError("--tls-cert and --tls-key go together")
    _check_probe_flags(args)
    with Target(
        args.host,
        args.port,
        args.threads,
        args.tls_cert,
        args.tls_key,
        capacity=args.capacity,
        service_time=args.service_time,
        queue_limit=args.queue_limit,
        pause=args.pause,
        contention=args.contention,
        serial=args.serial,
        rate_limit=args.rate_limit,
        burst=args.burst,
        refuse_status=args.refuse_status,
        fail_every=args.fail_every,
        idle_timeout=args.idle_timeout,
    ) as target:
        print(f"listening on {target.url}", flush=True)
        try:
            while not stop:
                time.sleep(0.2)  # the handler runs in it; the flag is read each 0.2 s
        except KeyboardInterrupt:
            pass
        stats = target.stats()
        # Said before the server shuts down: a supervisor that gives up waiting for the
        # shutdown (SIGKILL after its grace) must not lose the count.
        print(
            f"served {stats['requests']} requests on {stats['connections']} connections",
            flush=True,
        )
    return 0


def _check_probe_flags(args: argparse.Namespace) -> None:
    """_check_probe_flags refuses, in the flags' own spelling, a probe flag given without the
    mode it belongs to (the server checks the values)."""
    if args.service_time is not None and args.capacity is None and args.contention is None:
        raise RedlineError("--service-time needs --capacity or --contention")
    if args.capacity is not None and args.contention is not None:
        raise RedlineError("--capacity and --contention are different probes: choose one")
    needs = (
        ("--capacity", args.capacity, "--service-time", args.service_time),
        ("--contention", args.contention, "--service-time", args.service_time),
        ("--queue-limit", args.queue_limit, "--capacity", args.capacity),
        ("--pause", args.pause, "--capacity", args.capacity),
        ("--serial", args.serial, "--contention", args.contention),
        ("--burst", args.burst, "--rate-limit", args.rate_limit),
        ("--refuse-status", args.refuse_status, "--rate-limit", args.rate_limit),
    )
    for flag, value, needed, present in needs:
        if value is not None and present is None:
            if (flag, needed) == ("--capacity", "--service-time"):
                raise RedlineError("--capacity and --service-time go together")
            raise RedlineError(f"{flag} needs {needed}")
