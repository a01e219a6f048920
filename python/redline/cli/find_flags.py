"""find_flags: ``redline find``'s flags as the search's keywords, one place for ``redline
find`` and its experiments."""

from __future__ import annotations

import argparse
from typing import Any

from redline.cli.cluster import cluster_options
from redline.cli.run_flags import run_options
from redline.errors import ConfigError
from redline.runs.options import parse_duration


def parse_share(text: str, what: str) -> float:
    """parse_share reads ``1%`` or ``0.01`` as a share."""
    try:
        if text.endswith("%"):
            return float(text[:-1]) / 100
        return float(text)
    except ValueError:
        raise ConfigError(f"{what}: expected e.g. 1% or 0.01, got {text!r}") from None


def find_options(args: argparse.Namespace) -> dict[str, Any]:
    """find_options maps the search's flags to :func:`redline.find.find`'s keywords (one place
    for ``redline find`` and its experiments): the search's own, and ``options``, the run
    options read from their flags by name (:func:`.run_flags.run_options`; the load shape is
    the search's to set, so ``redline find`` has none of its flags)."""
    return {
        "model": args.model,
        "slos": args.slo,
        "max_errors": parse_share(args.max_errors, "--max-errors"),
        "max_time": parse_duration(args.max_time, "--max-time"),
        "start": args.start,
        "max_load": args.max_load,
        "options": run_options(args),
        "min_step": parse_duration(args.min_step, "--min-step"),
        "max_step": parse_duration(args.max_step, "--max-step"),
        "confirm": parse_duration(args.confirm, "--confirm"),
        "soak": parse_duration(args.soak, "--soak"),
        "service_cpu": args.service_cpu,
        "throughput": args.throughput,
        "backlog": getattr(args, "backlog", None),
        "watch": getattr(args, "watch", None) or (),
        "stop_at_knee": args.stop_at_knee,
        "cluster": cluster_options(args),
    }
