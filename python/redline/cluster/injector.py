"""injector: the load generator on one Ray worker: one engine run (``start_run``) with its
share of the load, read by the driver a batch of snapshots at a time.

The class is plain Python (Ray wraps it as an actor in :mod:`redline.cluster.connection`),
so it imports without Ray and its methods are the whole wire protocol: its RunConfig (a
dict) and numbers in, JSON strings, numbers and small dicts out. The actor runs its calls on a few
threads, so a ``poll`` waiting for the next snapshot does not hold up a ``set_target``.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from redline import _engine
from redline.runs.config import RunConfig


def cores() -> int:
    """cores: the CPUs this process may run on (its affinity, else the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class Injector:
    """Injector runs one engine run for the driver; ``facts`` says who it is first."""

    def __init__(self) -> None:
        # Imported now, while the actor is placed, not in the first poll after the start
        # instant (redline.find pulls in numpy: seconds on a busy machine).
        from redline.runs.usage import worker_cpu_s

        self.handle: Any = None
        self.worker_cpu_s = worker_cpu_s

    def facts(self) -> dict[str, Any]:
        """facts: the injector's redline version, cores, host, pid and clock (Unix seconds),
        which the driver checks before starting (versions must match; clocks must agree for
        the shared start instant)."""
        return {
            "version": _engine.__version__,
            "cores": cores(),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "clock": time.time(),
        }

    def start(self, config: RunConfig) -> None:
        """start begins this injector's run (its RunConfig, start instant included)."""
        self.handle = _engine.start_run(config)

    def poll(self, timeout_s: float) -> dict[str, Any]:
        """poll waits up to ``timeout_s`` for the next snapshot and returns it with any that
        are also ready (``snapshots``: JSON strings, in order), whether the run is over
        (``done``: every snapshot has been handed out) and its worker threads' CPU so far
        (``worker_cpu``: [ran_s, waited_s, threads], or None off Linux) for the saturation check."""
        out: list[str] = []
        first = self.handle.next_snapshot(timeout_s)
        if first is not None:
            out.append(first)
            while (more := self.handle.next_snapshot(0.0)) is not None:
                out.append(more)
        cpu = self.worker_cpu_s()
        return {
            "snapshots": out,
            "done": bool(self.handle.done),
            "worker_cpu": None if cpu is None else list(cpu),
        }

    def set_target(self, value: float, ramp_s: float) -> float:
        """set_target moves this injector's share of the load (see RunHandle.set_target)."""
        return float(self.handle.set_target(value, ramp_s))

    def target(self) -> float | None:
        """target: the load this injector is asked for now."""
        t = self.handle.target()
        return None if t is None else float(t)

    def stop(self) -> None:
        """stop ends this injector's run; its report still comes from ``report``."""
        if self.handle is not None:
            self.handle.stop()

    def report(self) -> str:
        """report waits for the run's end and returns its report (JSON)."""
        return str(self.handle.report())
