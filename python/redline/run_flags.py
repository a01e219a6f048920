"""run_flags: ``redline run URL``'s flags as :func:`redline.run`'s keywords, one place for
``redline run`` and its experiments (``--vary``)."""

from __future__ import annotations

import argparse
from typing import Any


def url_run_options(args: argparse.Namespace) -> dict[str, Any]:
    """url_run_options: the options of :func:`redline.run` that ``redline run URL``'s flags
    give (None where a flag was not given: the engine's default applies)."""
    return dict(
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
        http2=args.http2,
        streams=args.streams,
    )
