"""cluster: the ``--cluster`` flags of ``redline run`` and ``redline find``, read into the
options the library takes (:class:`redline.runs.runner.ClusterOptions`), checked before any load:
a bad address, a bad policy or a missing Ray is one line and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from redline.errors import ClusterError, InjectorLost
from redline.runs.runner import ClusterOptions

#: EXIT_LOST: a cluster run stopped because an injector was lost (--on-injector-loss fail).
EXIT_LOST = 1


def add_cluster_flags(p: argparse.ArgumentParser) -> None:
    """add_cluster_flags adds --cluster, --injectors and --on-injector-loss to ``p``."""
    g = p.add_argument_group("distributed (Ray; docs/distributed.md)")
    g.add_argument(
        "--cluster",
        metavar="ray://HOST:PORT|local:N",
        help="run the load from injectors on a Ray cluster (local:N starts N here); "
        "needs pip install 'redline[ray]'",
    )
    g.add_argument(
        "--injectors",
        type=int,
        metavar="N",
        help="with --cluster: injectors (default: one per node)",
    )
    g.add_argument(
        "--on-injector-loss",
        default="fail",
        metavar="fail|continue|rebalance",
        help="when an injector dies or falls silent: stop the run (fail, default), go on "
        "with the rest, each interval saying how many reported (continue), or go on with the "
        "lost share handed to the rest (rebalance: a constant load for a duration)",
    )


def cluster_options(args: argparse.Namespace) -> ClusterOptions | None:
    """cluster_options reads the flags (None without --cluster), refusing a bad address, a
    policy not built and a missing Ray before anything starts."""
    address = getattr(args, "cluster", None)
    if address is None:
        if getattr(args, "injectors", None) is not None:
            raise ClusterError("--injectors needs --cluster")
        return None
    from redline.cluster.address import check_injectors, parse_address
    from redline.cluster.connection import import_ray
    from redline.cluster.handle import OnLoss

    parsed = parse_address(address)
    check_injectors(args.injectors, parsed)
    OnLoss.parse(args.on_injector_loss)
    import_ray()  # here, so a missing Ray is said before any load
    return ClusterOptions(address, args.injectors, args.on_injector_loss)


def print_injectors(data: dict[str, Any]) -> None:
    """print_injectors prints a cluster run's per-injector table under the summary."""
    rows = (data.get("cluster") or {}).get("injectors")
    if rows:
        from redline.cluster.table import render

        print(render(rows), flush=True)
        note = loss_note(data["cluster"])
        if note:
            print(note, flush=True)


def loss_note(cluster: dict[str, Any]) -> str | None:
    """loss_note: for a run that went on after losing injectors (continue, rebalance), who
    was lost, when, with which share of the load, the share no injector offered at the end,
    and what the intervals after the loss counted (the injectors left only). None without a
    loss, or under fail (the error line says it)."""
    lost = [r for r in cluster.get("injectors") or [] if r.get("lost")]
    if not lost or cluster.get("failure"):
        return None
    from redline.cluster.table import when

    named = "; ".join(f"injector {r['index']} ({r['host']}, pid {r['pid']}){when(r)}" for r in lost)
    share = float(cluster.get("lost_share") or 0.0)
    out = f"  lost: {named}; {100 * share:.0f} % of the asked load was not offered at the end"
    after = cluster.get("after_loss")
    if after:
        rps = "-" if after["rps"] is None else f"{after['rps']:,.1f}"
        out += (
            f"; from {after['from_s']:.1f} s the figures count the {after['injectors']}"
            f" injectors left only: {after['requests']:,} requests, {rps} req/s"
        )
    return out


def lost_exit(lost: InjectorLost | None) -> int:
    """lost_exit: a run stopped by a lost injector says so in one line; its status is 1."""
    if lost is None:
        return 0
    print(f"redline: error: {lost}", file=sys.stderr)
    return EXIT_LOST
