"""connection: Ray opened (or joined), the injector actors placed and checked, and all of
it closed again.

Ray is imported here and nowhere else, only when a run asks for a cluster, so a plain
install and ``redline run`` without ``--cluster`` never pay for it. ``local:N`` starts a Ray
on this machine (N CPUs, no dashboard) and shuts it down at the end, unless this process
already runs one (the tests share one per module), which is left as found.
"""

from __future__ import annotations

import importlib
import time
import warnings
from dataclasses import dataclass
from typing import Any

from redline import _engine
from redline.cluster.address import Address, Kind
from redline.cluster.injector import Injector
from redline.cluster.reaper import Reaper
from redline.errors import ClusterError

#: INSTALL_HINT: the one line said when Ray is missing.
INSTALL_HINT = "--cluster needs Ray: pip install 'redline[ray]'"

#: FACTS_TIMEOUT_S bounds the wait for the injectors to start and answer.
FACTS_TIMEOUT_S = 120.0

#: ACTOR_CONCURRENCY: calls an injector runs at once (a waiting poll, a set_target, a stop).
ACTOR_CONCURRENCY = 4


def import_ray() -> Any:
    """import_ray is the ``ray`` module, or a ClusterError saying how to install it."""
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise ClusterError(INSTALL_HINT) from None


@dataclass
class Member:
    """Member is one placed injector: its actor and what it said about itself."""

    index: int
    actor: Any
    version: str
    cores: int
    host: str
    pid: int
    #: clock_skew_s: its clock minus the driver's, estimated at the midpoint of the call.
    clock_skew_s: float
    #: rtt_s: the round trip of that call, the bound on the skew estimate's error.
    rtt_s: float

    @property
    def name(self) -> str:
        """name: how reports and errors call it (``injector 2 (host, pid 123)``)."""
        return f"injector {self.index} ({self.host}, pid {self.pid})"


class Connection:
    """Connection is an open cluster with its injectors placed; ``close`` ends them (and the
    Ray this connection started)."""

    def __init__(
        self, ray: Any, members: list[Member], owns_ray: bool, reaper: Reaper | None = None
    ):
        self.ray = ray
        self.members = members
        self.owns_ray = owns_ray
        #: reaper: ends the local Ray this connection started if redline dies before close.
        self.reaper = reaper
        self.closed = False

    @classmethod
    def open(
        cls, address: Address, injectors: int | None, runtime_env: dict[str, Any] | None = None
    ) -> Connection:
        """open joins or starts Ray and places ``injectors`` actors (``local:N``: N; a
        ``ray://`` cluster: one per alive node when not given), then checks their versions."""
        ray = import_ray()
        owns = False
        reaper = None
        if not ray.is_initialized():
            owns = True
            # A local Ray's processes are this machine's: they must not outlive redline,
            # however it ends (see redline.cluster.reaper).
            reaper = Reaper() if address.kind is Kind.LOCAL else None
            try:
                with warnings.catch_warnings():
                    # Ray Client warns on a timeout before it raises: the error says it once.
                    warnings.simplefilter("ignore")
                    _init(ray, address, runtime_env)
            except Exception as e:  # Ray raises ConnectionError, RuntimeError, ValueError...
                shutdown_ray(ray, reaper)
                raise ClusterError(
                    f"cannot reach the Ray cluster {address.text}: {_first_line(e)}"
                ) from None
        n = injectors or _default_injectors(ray)
        try:
            members = _place(ray, n)
        except BaseException:
            if owns:
                shutdown_ray(ray, reaper)
            raise
        conn = cls(ray, members, owns, reaper)
        try:
            check_versions(_engine.__version__, members)
        except ClusterError:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        """close kills the injector actors and shuts down the Ray this connection started;
        idempotent."""
        if self.closed:
            return
        self.closed = True
        for m in self.members:
            try:
                self.ray.kill(m.actor)
            except Exception:  # already dead: nothing to end
                pass
        if self.owns_ray:
            shutdown_ray(self.ray, self.reaper)


def _first_line(e: BaseException) -> str:
    """_first_line: an exception's first line of text (its type's name if it has none)."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def check_versions(driver: str, members: list[Member]) -> None:
    """check_versions refuses injectors running another redline than the driver: their
    snapshots and reports would not be the same documents."""
    odd = [m for m in members if m.version != driver]
    if odd:
        m = odd[0]
        raise ClusterError(
            f"{m.name} runs redline {m.version}, the driver {driver}: install the same "
            "version on the cluster (docs/distributed.md)"
        )


def _init(ray: Any, address: Address, runtime_env: dict[str, Any] | None) -> None:
    """_init starts a local Ray (``local:N``: N CPUs, no dashboard) or joins ``ray://``."""
    if address.kind is Kind.LOCAL:
        ray.init(
            num_cpus=address.injectors,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env=runtime_env,
        )
    else:
        ray.init(address=address.ray_address, runtime_env=runtime_env)


def _default_injectors(ray: Any) -> int:
    alive = [n for n in ray.nodes() if n.get("Alive")]
    return max(1, len(alive))


def _place(ray: Any, n: int) -> list[Member]:
    actor_class = ray.remote(num_cpus=1, max_concurrency=ACTOR_CONCURRENCY)(Injector)
    actors = [
        actor_class.options(scheduling_strategy="SPREAD", name=None).remote() for _ in range(n)
    ]
    refs = [a.facts.remote() for a in actors]
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=FACTS_TIMEOUT_S)
    if len(ready) < len(refs):
        _kill(ray, actors)
        raise ClusterError(
            f"only {len(ready)} of {n} injectors started within {FACTS_TIMEOUT_S:g}s: "
            "does the cluster have a free CPU for each?"
        )
    try:
        answers = ray.get(refs)
    except Exception as e:  # an actor that died placed (RayActorError...): Ray's own words
        _kill(ray, actors)
        raise ClusterError(f"an injector failed to start: {_first_line(e)}") from None
    members = []
    for i, (actor, facts) in enumerate(zip(actors, answers, strict=True)):
        # A second call, the actor now warm: its round trip bounds the skew estimate.
        sent = time.time()
        clock = float(ray.get(actor.facts.remote())["clock"])
        back = time.time()
        members.append(
            Member(
                index=i,
                actor=actor,
                version=str(facts["version"]),
                cores=int(facts["cores"]),
                host=str(facts["host"]),
                pid=int(facts["pid"]),
                clock_skew_s=clock - (sent + back) / 2,
                rtt_s=back - sent,
            )
        )
    return members


def _kill(ray: Any, actors: list[Any]) -> None:
    for a in actors:
        try:
            ray.kill(a)
        except Exception:  # already dead: nothing to end
            continue


#: REAP_WAIT_S: how long the processes of a Ray this connection started get to exit after
#: ray.shutdown() before they are terminated (its dashboard agent notices the raylet's end
#: only at its next check).
REAP_WAIT_S = 3.0


def shutdown_ray(ray: Any, reaper: Reaper | None = None) -> None:
    """shutdown_ray stops the Ray this process started and every process of it: ray.shutdown()
    ends the raylet and GCS, whose own children (the dashboard agent, log monitor) would
    otherwise linger for seconds, orphaned; none may outlive the CLI. The ``reaper`` watching
    them is released once they are gone."""
    try:
        _shutdown(ray)
    finally:
        if reaper is not None:
            reaper.release()


def _shutdown(ray: Any) -> None:
    import psutil

    ours = [p for p in _children() if _is_ray(p)]
    try:
        ray.shutdown()
    except Exception:  # shutting down what never started
        pass
    _, alive = psutil.wait_procs(ours, timeout=REAP_WAIT_S)
    for p in alive:
        try:
            p.terminate()
        except psutil.Error:
            continue
    _, alive = psutil.wait_procs(alive, timeout=REAP_WAIT_S)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            continue


def _children() -> list[Any]:
    import psutil

    try:
        return list(psutil.Process().children(recursive=True))
    except psutil.Error:
        return []


def _is_ray(p: Any) -> bool:
    """_is_ray: a process of Ray's (its binaries, its Python modules, its workers), not one
    this process started for another reason (a monitored service)."""
    import psutil

    try:
        line = " ".join(p.cmdline())
    except psutil.Error:
        return False
    return line.startswith("ray::") or "/ray/" in line or "raylet" in line
