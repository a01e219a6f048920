"""cli: the ``redline`` command. It parses arguments and calls the same functions a Python user
calls (:func:`redline.run`, :class:`redline.Target`); nothing here measures anything."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from redline.errors import RedlineError
from redline.progress import for_stream
from redline.runner import run
from redline.summary import render

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    """build_parser defines every subcommand and flag."""
    p = _Parser(prog="redline", description="HTTP load testing that tells the truth.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("run", help="generate load against a URL and print a summary (wrk-style)")
    r.add_argument("url", help="http://host:port/path or https://...")
    r.add_argument(
        "-c", "--connections", type=int, help="closed model: connections/VUs (default 50)"
    )
    r.add_argument("-d", "--duration", help="how long to run, e.g. 15s, 2m (default 10s)")
    r.add_argument("-n", "--requests", type=int, help="stop after this many requests")
    r.add_argument("--rate", type=float, help="open model: requests per second")
    r.add_argument("--stages", help="ramp, e.g. 10s:100,30s:100,10s:0 (VUs, or req/s with --open)")
    r.add_argument("--open", action="store_true", help="stages are req/s targets (open model)")
    r.add_argument("--max-connections", type=int, help="open model: connection pool cap")
    r.add_argument("-t", "--threads", type=int, help="worker threads (default: one per core)")
    r.add_argument("-m", "--method", default="GET", help="HTTP method (default GET)")
    r.add_argument("-H", "--header", action="append", default=[], help="'Name: value' (repeatable)")
    r.add_argument("--body", help="request body: a string, or @file")
    r.add_argument("--timeout", default="30s", help="per-request timeout (default 30s)")
    r.add_argument("--warmup", default="0s", help="left out of the summary (default 0s)")
    r.add_argument("--interval", default="1s", help="reporting interval (default 1s)")
    r.add_argument("--cacert", metavar="FILE", help="https: also trust the CAs in this PEM file")
    r.add_argument(
        "-k", "--insecure", action="store_true", help="https: skip certificate verification"
    )
    r.add_argument("--json", metavar="FILE", help="write the full result as JSON")
    r.add_argument("-q", "--quiet", action="store_true", help="no live progress")
    r.set_defaults(func=cmd_run)

    t = sub.add_parser("target", help="serve redline's bundled test server until Ctrl-C")
    t.add_argument("--host", default="127.0.0.1")
    t.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    t.add_argument("--threads", type=int, help="server threads (default: one per core)")
    t.add_argument("--tls-cert", metavar="FILE", help="serve https with this PEM certificate")
    t.add_argument("--tls-key", metavar="FILE", help="the PEM private key of --tls-cert")
    t.set_defaults(func=cmd_target)
    return p


def cmd_run(args: argparse.Namespace) -> int:
    """cmd_run runs one load test, prints the summary and writes --json."""
    if args.json:
        parent = Path(args.json).resolve().parent
        if not parent.is_dir():
            raise RedlineError(f"--json: directory {str(parent)!r} does not exist")
    view = None if args.quiet else for_stream(sys.stderr)
    try:
        result = run(
            args.url,
            connections=args.connections,
            rate=args.rate,
            duration=args.duration,
            requests=args.requests,
            stages=args.stages,
            open_model=args.open,
            threads=args.threads,
            method=args.method,
            headers=args.header,
            body=args.body,
            timeout=args.timeout,
            warmup=args.warmup,
            interval=args.interval,
            max_connections=args.max_connections,
            insecure=args.insecure,
            cacert=args.cacert,
            progress=view,
        )
    finally:
        if view is not None:
            view.close()
    print(render(result), flush=True)
    if args.json:
        result.write_json(args.json)
    return 130 if result.interrupted else 0


def cmd_target(args: argparse.Namespace) -> int:
    """cmd_target serves the target server until SIGINT or SIGTERM."""
    from redline.target import Target

    if not 0 <= args.port <= 65535:
        raise RedlineError(f"--port: must be 0..65535, got {args.port}")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if (args.tls_cert is None) != (args.tls_key is None):
        raise RedlineError("--tls-cert and --tls-key go together")
    with Target(args.host, args.port, args.threads, args.tls_cert, args.tls_key) as target:
        print(f"listening on {target.url}", flush=True)
        try:
            while not stop.wait(0.2):
                pass
        except KeyboardInterrupt:
            pass
        stats = target.stats()
    print(f"served {stats['requests']} requests on {stats['connections']} connections", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """main is the console entry point; user errors become one line and exit code 2."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except RedlineError as e:
        print(f"redline: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("redline: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
