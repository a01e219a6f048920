"""live_run: the live engine run a capacity search drives (:class:`LiveRun`: targets set,
snapshots read, and the generator's own CPU and the machine's alongside each snapshot, and
the service's own count of work done when asked), and a
service monitor shown on that run's clock (:class:`Aligned`)."""

from __future__ import annotations

import json
import time
from typing import Any

from redline.runs.config import RunConfig
from redline.runs.runner import ClusterOptions, start_handle
from redline.runs.usage import machine_cpu_s, worker_cpu_s
from redline.runs.watching import interval_parts


class LiveRun:
    """LiveRun wraps the native run handle: snapshots as dicts, and the generator's own CPU
    (its worker threads' CPU time, read from /proc at each snapshot) for the saturation check.
    """

    def __init__(
        self,
        config: RunConfig,
        cluster: ClusterOptions | None = None,
        work: Any = None,
    ):
        #: work: a :class:`~redline.service.work.WorkProbe` whose reading each snapshot
        #: carries as ``work`` (the service's own count of work done, its backlog).
        self.work = work
        #: parts: the watched parts (:class:`~redline.service.parts.Parts`, set by the
        #: search) whose figures over each interval its snapshot carries as ``parts``.
        self.parts: Any = None
        self.handle = start_handle(config, cluster)
        self.timeseries: list[dict[str, Any]] = []
        self._cpu: list[tuple[float, float, float, int]] = []
        #: _injector_cpu: a cluster run's worker CPU, per injector, at each snapshot
        #: ([ran_s, waited_s, threads], as :func:`worker_cpu_s`).
        self._injector_cpu: list[tuple[float, dict[str, list[float]]]] = []
        #: _machine: at each local snapshot, the workers' run time, the machine's busy and
        #: total CPU time (seconds; :func:`machine_cpu_s`) and this process's CPU time (all
        #: its threads: the workers, and the search and the watching in Python).
        self._machine: list[tuple[float, float, float, float, float]] = []

    def set_target(self, value: float, ramp_s: float = 0.0) -> float:
        return float(self.handle.set_target(value, ramp_s))

    def next_snapshot(self, timeout_s: float) -> dict[str, Any] | None:
        raw = self.handle.next_snapshot(timeout_s)
        if raw is None:
            return None
        snap: dict[str, Any] = json.loads(raw)
        if self.work is not None:
            # Read as the interval's snapshot arrives: the counter's growth since the last
            # one is this interval's work, to the scrape's own delay at either end.
            snap["work"] = self.work.read()
        if "worker_cpu" in snap:
            self._injector_cpu.append((float(snap["t_s"]), snap["worker_cpu"]))
        else:
            cpu = worker_cpu_s()
            if cpu is not None:
                self._cpu.append((float(snap["t_s"]), *cpu))
                machine = machine_cpu_s()
                if machine is not None:
                    self._machine.append(
                        (float(snap["t_s"]), cpu[0], *machine, time.process_time())
                    )
        if self.parts is not None:
            snap["parts"] = self._interval_parts(float(snap["t_s"]))
        self.timeseries.append(snap)
        return snap

    def _interval_parts(self, t1: float) -> dict[str, dict[str, float]]:
        """_interval_parts: each watched part's figures over the interval ending at ``t1``
        (the means of its samples in it; none in an interval shorter than the sampling) and
        the generator's busy and waiting shares over it."""
        t0 = float(self.timeseries[-1]["t_s"]) if self.timeseries else 0.0
        out = interval_parts(self.parts, t0, t1)
        shares = self._worker_shares(t0, t1)
        if shares is not None:
            out["generator"] = {"busy": shares[0] + shares[1], "wait": shares[1]}
        return out

    @property
    def done(self) -> bool:
        return bool(self.handle.done)

    @property
    def failure(self) -> str | None:
        """failure: why a cluster run stopped on an injector it lost (None otherwise)."""
        failure = getattr(self.handle, "failure", None)
        return str(failure) if failure else None

    def lost_share_of(self, lost: list[str]) -> float | None:
        """lost_share_of: the part of the load the injectors named in ``lost`` (as the
        snapshots' ``injectors_lost`` name them) carried when lost; None off a cluster."""
        share = getattr(self.handle, "lost_share_of", None)
        return share(lost) if callable(share) else None

    def generator_busy(self, t0: float, t1: float) -> float | None:
        """generator_busy is the CPU the workers wanted over [t0, t1] (ran or waited for) as a
        share of their threads' wall time."""
        shares = self._worker_shares(t0, t1)
        return None if shares is None else shares[0] + shares[1]

    def generator_wait(self, t0: float, t1: float) -> float | None:
        """generator_wait is the time the workers sat runnable without a CPU over [t0, t1],
        as a share of their threads' wall time: a generator starved by the machine (the
        service and other work on the same cores) sends and reads late, whatever its own
        load, and the figures then describe the machine."""
        shares = self._worker_shares(t0, t1)
        return None if shares is None else shares[1]

    def machine(self, t0: float, t1: float) -> tuple[float, float, float] | None:
        """machine is how busy this machine's CPUs were over [t0, t1], the share of them
        redline's workers ran on, and the share redline's whole process took (its workers,
        and its Python: the search, the watching), all shares of the machine's CPU time: a
        load generator that takes a good part of a saturated machine takes it from a service
        on the same machine. None on a cluster (the injectors' machines are not this one's)."""
        if self._injector_cpu:
            return None
        inside = [x for x in self._machine if t0 - 1e-6 <= x[0] <= t1 + 1e-6]
        if len(inside) < 2:
            return None
        (_, ra, ba, ta, pa), (_, rb, bb, tb, pb) = inside[0], inside[-1]
        if tb <= ta:
            return None
        # The busy time is the machine's CPU time less its idle time, both growing floats: an
        # idle window can difference to -1e-12, which is no share (the result's schema says >= 0).
        total = tb - ta
        return max(0.0, (bb - ba) / total), max(0.0, (rb - ra) / total), max(0.0, (pb - pa) / total)

    def generator_series(self) -> list[dict[str, float]]:
        """generator_series is the generator's own part in the watched series: per interval,
        its workers' busy share (ran or waited for a CPU) and waiting share of their wall
        time (empty on a cluster: each injector's machine is its own)."""
        out = []
        for (ta, ra, wa, _), (tb, rb, wb, n) in zip(self._cpu, self._cpu[1:], strict=False):
            wall = n * (tb - ta)
            # A reading taken as the run ends, its workers gone, counts less than the one
            # before (their threads' clocks went with them): no measure of that interval.
            if wall > 0 and rb >= ra and wb >= wa:
                out.append(
                    {"t_s": tb, "busy": (rb - ra + wb - wa) / wall, "wait": (wb - wa) / wall}
                )
        return out

    def _worker_shares(self, t0: float, t1: float) -> tuple[float, float] | None:
        """_worker_shares: (ran, waited) of the workers over [t0, t1], shares of wall time;
        on a cluster, the busiest injector's, so that a limit that is one injector's is named
        as the generator's."""
        if self._injector_cpu:
            return _busiest(self._injector_cpu, t0, t1)
        inside = [x for x in self._cpu if t0 - 1e-6 <= x[0] <= t1 + 1e-6]
        if len(inside) < 2 or inside[-1][0] <= inside[0][0] or inside[-1][3] == 0:
            return None
        (ta, ra, wa, _), (tb, rb, wb, n) = inside[0], inside[-1]
        if rb < ra or wb < wa:
            return None  # the workers ended inside the span: their clocks went with them
        wall = n * (tb - ta)
        return (rb - ra) / wall, (wb - wa) / wall

    def finish(self) -> dict[str, Any]:
        if self.work is not None:
            self.work.stop()
        self.handle.stop()
        while not self.handle.done:
            if self.next_snapshot(0.5) is None and self.handle.done:
                break
        report: dict[str, Any] = json.loads(self.handle.report())
        return report


def _busiest(
    samples: list[tuple[float, dict[str, list[float]]]], t0: float, t1: float
) -> tuple[float, float] | None:
    """_busiest: (ran, waited) over [t0, t1], as shares of its worker threads' wall time, of
    the injector that wanted the most CPU, from the per-injector CPU each merged snapshot
    carries."""
    inside = [x for x in samples if t0 - 1e-6 <= x[0] <= t1 + 1e-6]
    if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
        return None
    (ta, a), (tb, b) = inside[0], inside[-1]
    shares = [
        ((b[k][0] - a[k][0]) / wall, (b[k][1] - a[k][1]) / wall)
        for k in b
        if k in a and (wall := b[k][2] * (tb - ta)) > 0
    ]
    return max(shares, key=sum) if shares else None


class Aligned:
    """Aligned shows a monitor's samples on the live run's clock (``offset``: the run's start
    in the monitor's time)."""

    def __init__(self, monitor: Any, offset: float):
        self.monitor = monitor
        self.offset = offset

    def window(self, t0: float, t1: float) -> dict[str, float]:
        return dict(self.monitor.window(t0 + self.offset, t1 + self.offset))

    def series(self) -> list[dict[str, Any]]:
        return [{**x, "t_s": x["t_s"] - self.offset} for x in self.monitor.series()]

    def stop(self) -> None:
        self.monitor.stop()
