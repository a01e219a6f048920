"""parts: every part of a deployment watched, one sample a second each.

A deployment is a balancer, instances, a database, a queue and the load generator itself;
``--watch NAME=SPEC`` (repeatable; one NAME may be given several SPECs, its samples merged)
names each part and how to watch it:

- ``pid:PID``: a process and its descendants (:class:`~redline.service.monitor.ProcessMonitor`);
- ``port:PORT``: whoever listens on that TCP port, and that listening socket's accept queue,
  its length and limit (:mod:`redline.service.sockets`, as ``ss -lnt`` reads them);
- ``prometheus:URL``: an exporter's series: the process collector's, every ``X_in_use`` /
  ``X_limit`` (or ``X_max``) gauge pair as a pool, and every counter as a rate;
- ``cmd:COMMAND``: start the command, watch its tree, stop it at the end (``--monitor-cmd``).

For a process, each sample also carries what it may use (:func:`allowance`): the cores its
affinity and cgroup quota allow, its open-file limit and its memory limit, so that the
bottleneck is judged against the part's own share (a process pinned to one core at 100 % of
a core is saturated on a machine of 16); and how long its threads waited for a CPU
(:class:`RunQueue`, ``cpu_wait``): a process starved by other work on its cores reads as low
CPU, and only the run queue says its CPU was what it lacked.
"""

from __future__ import annotations

import bisect
import math
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import psutil

from redline.errors import ConfigError
from redline.service.exposition import Scraped, fetch
from redline.service.monitor import (
    CommandMonitor,
    Monitor,
    ProcessMonitor,
    PrometheusMonitor,
    Sample,
    _alive,
    window_means,
)
from redline.service.sockets import accept_queue, listener_pid

#: KINDS: the ways a part can be watched.
KINDS = ("pid", "port", "prometheus", "cmd")

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class Watch:
    """Watch is one ``--watch NAME=SPEC``: the part's name, how (``kind``) and what."""

    name: str
    kind: str
    target: str

    @classmethod
    def parse(cls, text: str) -> Watch:
        """parse reads ``NAME=pid:PID``, ``NAME=port:PORT``, ``NAME=prometheus:URL`` or
        ``NAME=cmd:COMMAND``; a mistake is one line naming the flag."""
        name, eq, spec = text.partition("=")
        kind, colon, target = spec.partition(":")
        if not eq or not _NAME.match(name):
            raise ConfigError(
                f"--watch {text}: expected NAME=SPEC with NAME a word (letters, digits, _.-)"
            )
        if not colon or kind not in KINDS or not target:
            raise ConfigError(
                f"--watch {text}: SPEC is pid:PID, port:PORT, prometheus:URL or cmd:COMMAND"
            )
        if name == "generator":
            raise ConfigError("--watch generator=...: the generator is always watched (redline)")
        if kind in ("pid", "port") and not (target.isdigit() and 0 < int(target) < 2**22):
            raise ConfigError(f"--watch {text}: {kind} takes a number, got {target!r}")
        if kind == "prometheus" and not target.startswith(("http://", "https://")):
            raise ConfigError(f"--watch {text}: prometheus takes an http(s) URL")
        return cls(name, kind, target)

    def monitor(self, interval_s: float = 1.0) -> Monitor:
        """monitor is the sampler that watches this part this way."""
        if self.kind == "pid":
            return WatchedProcess(int(self.target), interval_s)
        if self.kind == "port":
            return PortMonitor(int(self.target), interval_s)
        if self.kind == "prometheus":
            return ExporterMonitor(self.target, interval_s=interval_s)
        return WatchedCommand(self.target, interval_s)


def allowance(pid: int) -> dict[str, float]:
    """allowance is what process ``pid`` may use: ``cores_allowed`` (its CPU affinity, cut
    by its cgroup's CPU quota), ``fds_limit`` (RLIMIT_NOFILE, soft) and ``memory_limit``
    (its cgroup's memory limit, else the machine's memory). Figures it cannot read are
    left out."""
    out: dict[str, float] = {}
    try:
        p = psutil.Process(pid)
        out["cores_allowed"] = float(len(p.cpu_affinity() or []) or (os.cpu_count() or 1))
        out["fds_limit"] = float(p.rlimit(psutil.RLIMIT_NOFILE)[0])
    except (psutil.Error, AttributeError, OSError):
        pass
    quota, memory = _cgroup_limits(pid)
    if quota is not None:
        out["cores_allowed"] = min(out.get("cores_allowed", quota), quota)
    out["memory_limit"] = float(memory if memory is not None else psutil.virtual_memory().total)
    return out


def _cgroup_limits(pid: int) -> tuple[float | None, float | None]:
    """_cgroup_limits: the CPU quota in cores and the memory limit in bytes of ``pid``'s
    cgroup (v2's cpu.max and memory.max, or v1's cfs quota and limit_in_bytes); None where
    there is none."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None, None
    paths: dict[str, str] = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            paths[c] = path
    quota = memory = None
    v2 = paths.get("")
    if v2 is not None:
        raw = _read(f"/sys/fs/cgroup{v2}/cpu.max")
        if raw and not raw.startswith("max"):
            q, period = raw.split()[:2]
            quota = float(q) / float(period)
        raw = _read(f"/sys/fs/cgroup{v2}/memory.max")
        if raw and raw.isdigit():
            memory = float(raw)
    if quota is None and "cpu" in paths:
        for root in ("/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"):
            cfs = _read(f"{root}{paths['cpu']}/cpu.cfs_quota_us")
            per = _read(f"{root}{paths['cpu']}/cpu.cfs_period_us")
            if cfs and per and int(cfs) > 0:
                quota = int(cfs) / int(per)
                break
    if memory is None and "memory" in paths:
        raw = _read(f"/sys/fs/cgroup/memory{paths['memory']}/memory.limit_in_bytes")
        # v1 says "no limit" with a number near 2**63.
        if raw and raw.isdigit() and int(raw) < 2**60:
            memory = float(raw)
    return quota, memory


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


class RunQueue:
    """RunQueue reads how long a process tree's threads waited for a CPU while they could
    run (the second field of /proc/PID/task/TID/schedstat, the time on a run queue; the
    first is the time on a CPU): :meth:`share` is, since the last call, the waiting over the
    waiting and the running together (0: it ran whenever it could; 0.8: for each second it
    ran it waited four, its cores busy with other work). None on the first call, or without
    schedstat (a kernel built without it). ``busiest`` is, over the same span, the most any
    one thread ran as a share of one core: a process that can only use one thread at a time
    (an event loop, Python's GIL) runs out at one core, whatever cores it may use."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._last: dict[tuple[int, int], tuple[int, int]] = {}
        self._clock = clock
        self._at = clock()
        #: busiest: the busiest thread's run time over the last span, a share of one core.
        self.busiest: float | None = None

    def share(self, pids: Sequence[int]) -> float | None:
        """share: the tree's threads' wait for a CPU as a share of their runnable time."""
        seen: dict[tuple[int, int], tuple[int, int]] = {}
        ran = waited = most = 0
        for pid in pids:
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                fields = (_read(f"/proc/{pid}/task/{tid}/schedstat") or "").split()
                if len(fields) < 2 or not tid.isdigit():
                    continue
                now = (int(fields[0]), int(fields[1]))
                key = (pid, int(tid))
                seen[key] = now
                before = self._last.get(key)
                if before is not None:
                    ran += max(0, now[0] - before[0])
                    waited += max(0, now[1] - before[1])
                    most = max(most, now[0] - before[0])
        first, self._last = not self._last, seen
        at, self._at = self._at, self._clock()
        span_ns = (self._at - at) * 1e9
        self.busiest = None if first or span_ns <= 0 else min(1.0, most / span_ns)
        if first or ran + waited <= 0:
            return None
        return waited / (ran + waited)


#: ALLOWANCE_S: how long what a process may use is taken as read (its affinity, limits and
#: cgroup change rarely; reading them is a dozen files).
ALLOWANCE_S = 10.0


def _with_allowance(sample: Sample, monitor: ProcessMonitor) -> Sample:
    """_with_allowance adds what the process may use (:func:`allowance`, read again every
    :data:`ALLOWANCE_S`) and how long its threads waited for a CPU (``cpu_wait``,
    :class:`RunQueue`, over the tree the sample read) to its sample."""
    extra = dict(sample.extra)
    now = time.monotonic()
    pid, at, allowed = monitor.__dict__.get("_allowance", (None, -ALLOWANCE_S, {}))
    if pid != monitor.pid or now - at >= ALLOWANCE_S:
        allowed = allowance(monitor.pid)
        monitor.__dict__["_allowance"] = (monitor.pid, now, allowed)
    extra.update(allowed)
    runq = monitor.__dict__.setdefault("_run_queue", RunQueue())
    try:
        wait = runq.share([p.pid for p in monitor.procs])
    except psutil.Error:
        wait = None
    if wait is not None:
        extra["cpu_wait"] = wait
    if runq.busiest is not None:
        extra["cpu_thread"] = runq.busiest
    return Sample(**{**sample.to_dict(), "extra": extra})


class WatchedProcess(ProcessMonitor):
    """WatchedProcess is a process tree's sample with what the process may use."""

    def read(self, t_s: float) -> Sample:
        return _with_allowance(super().read(t_s), self)


class WatchedCommand(CommandMonitor):
    """WatchedCommand is a started command's sample with what it may use."""

    def read(self, t_s: float) -> Sample:
        return _with_allowance(super().read(t_s), self)


class PortMonitor(ProcessMonitor):
    """PortMonitor watches whoever listens on TCP ``port`` (the process tree of the listener,
    found again if it restarts) and that socket's accept queue: ``accept_queue`` (its length
    now) and ``accept_queue_limit``."""

    def __init__(
        self, port: int, interval_s: float = 1.0, clock: Callable[[], float] = time.monotonic
    ):
        super().__init__(0, interval_s, clock)
        self.port = port

    def _listener(self) -> int | None:
        pid = listener_pid(self.port)
        if pid is not None:
            return pid
        try:  # netlink refused, or the socket's holder is not readable: psutil's way
            conns = psutil.net_connections(kind="tcp")
        except (psutil.AccessDenied, OSError):
            return None
        for c in conns:
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == self.port and c.pid:
                return int(c.pid)
        return None

    def prime(self) -> None:
        pid = self._listener()
        if pid is None:
            raise ConfigError(f"--watch ...=port:{self.port}: nothing listens on port {self.port}")
        self.pid, self._root = pid, None
        super().prime()

    def read(self, t_s: float) -> Sample:
        # Looked up again only once the listener is gone (a restarted server: watch the new
        # one): finding it reads every socket of every process on the machine.
        pid = self._listener() if self._root is None or not _alive(self._root) else None
        if pid is not None and pid != self.pid:
            self.pid, self._root = pid, None
        sample = _with_allowance(super().read(t_s), self)
        queue = accept_queue(self.port)
        extra = dict(sample.extra)
        if queue is not None:
            extra["accept_queue"] = float(queue.length)
            if queue.limit is not None:
                extra["accept_queue_limit"] = float(queue.limit)
        return Sample(**{**sample.to_dict(), "extra": extra})

    def gone(self) -> bool:
        return False  # the listener may come back


#: _POOL: a gauge pair's in-use half (its limit is the same name with _limit or _max).
_POOL = re.compile(r"^(.*)_in_use$")
#: _ERRORS: counters whose growth is failures (a part whose errors start counting).
_ERRORS = re.compile(r"(error|fail|reject|refus|timeout|abort)", re.IGNORECASE)


class ExporterMonitor(PrometheusMonitor):
    """ExporterMonitor reads an exporter's whole page: the process collector's series (CPU,
    RSS, fds and ``process_max_fds``), every ``X_in_use`` / ``X_limit`` (or ``X_max``)
    gauge pair as ``pool:X{labels}`` and ``pool_limit:X{labels}``, and every counter as a
    rate a second (``rate:NAME``, summed over its labels; ``errors`` the sum of those whose
    name says failure)."""

    def __init__(self, url: str, interval_s: float = 1.0, **kw: Any):
        super().__init__(url, (), interval_s, **kw)
        self._last: tuple[float, dict[str, float]] | None = None
        #: _layout: where each figure is among a page's samples, and the page parse it was
        #: read from (:class:`Layout`: a page of the same shape has it where the last had).
        self._layout: tuple[int, Layout] | None = None

    def read(self, t_s: float) -> Sample:
        got = self.pages.parse(fetch(self.url, self.timeout_s))
        if self._layout is None or self._layout[0] != self.pages.parsed:
            self._layout = (self.pages.parsed, Layout.of(got))
        at = self._layout[1]
        values = [v for _, _, v in got.samples]
        extra: dict[str, float] = {}
        for key, used, most in at.pools:
            extra[f"pool:{key}"] = values[used]
            extra[f"pool_limit:{key}"] = values[most]
        counters = {n: sum(values[i] for i in where) for n, where in at.counters.items()}
        now = self.clock()
        if self._last is not None and now > self._last[0]:
            dt = now - self._last[0]
            errors = 0.0
            for n, v in counters.items():
                before = self._last[1].get(n)
                if before is None or v < before:
                    continue
                extra[f"rate:{n}"] = (v - before) / dt
                if _ERRORS.search(n):
                    errors += (v - before) / dt
            extra["errors_rate"] = errors
        self._last = (now, counters)
        first = {n: values[i] for n, i in at.first.items()}
        if "process_max_fds" in first:
            extra["fds_limit"] = first["process_max_fds"]
        return Sample(
            t_s=t_s,
            cpu_percent=self._cpu_rate(first.get("process_cpu_seconds_total")),
            rss_bytes=first.get("process_resident_memory_bytes"),
            fds=first.get("process_open_fds"),
            extra=extra,
        )


#: _PROCESS: the process collector's series an exporter's sample reads (the first of each).
_PROCESS = (
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "process_open_fds",
    "process_max_fds",
)


@dataclass(frozen=True)
class Layout:
    """Layout is where an exporter's figures are among its page's samples (by index): each
    pool's in-use and limit gauges (``X_in_use`` with ``X_limit`` or ``X_max`` of the same
    labels; of a series given twice, its last sample), each counter's samples (summed over
    its labels) and the process collector's series. Pages of one shape share it."""

    pools: list[tuple[str, int, int]]
    counters: dict[str, list[int]]
    first: dict[str, int]

    @classmethod
    def of(cls, got: Scraped) -> Layout:
        """of reads the layout of one parsed page."""
        index: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
        counters: dict[str, list[int]] = {}
        first: dict[str, int] = {}
        for i, (n, lb, _) in enumerate(got.samples):
            index[(n, tuple(sorted(lb.items())))] = i
            if n in got.counters or n.endswith("_total"):
                counters.setdefault(n, []).append(i)
            if n in _PROCESS:
                first.setdefault(n, i)
        pools = []
        for (name, labels), i in index.items():
            m = _POOL.match(name)
            if not m:
                continue
            for suffix in ("_limit", "_max"):
                j = index.get((m.group(1) + suffix, labels))
                if j is not None:
                    pools.append((m.group(1) + _labels(labels), i, j))
                    break
        return cls(pools, counters, first)


def _labels(labels: tuple[tuple[str, str], ...]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}"


class Part:
    """Part is one named part of the deployment and the monitors that watch it."""

    def __init__(self, name: str, watches: Sequence[Watch], interval_s: float = 1.0):
        self.name = name
        self.watches = list(watches)
        self.monitors = [w.monitor(interval_s) for w in self.watches]

    def samples(self) -> list[Sample]:
        """samples: every monitor's samples, in time order."""
        return sorted((s for m in self.monitors for s in m.samples()), key=lambda s: s.t_s)

    def window(self, t0: float, t1: float) -> dict[str, float]:
        """window: each figure's mean over [t0, t1], every monitor's figures together."""
        out: dict[str, float] = {}
        for m in self.monitors:
            out.update(window_means(m.samples(), t0, t1))
        return out

    def intervals(self, ends: Sequence[float], start: float = 0.0) -> list[dict[str, float]]:
        """intervals: the part's figures over each interval (``start``, ``ends[0]``],
        (``ends[0]``, ``ends[1]``] ... as :meth:`window` reads them, found by bisection
        (a long run's every interval, each its own window, would read every sample each)."""
        out: list[dict[str, float]] = [{} for _ in ends]
        for m in self.monitors:
            samples = m.samples()  # in time order: one loop appends them
            at = [s.t_s for s in samples]
            t0 = start
            for k, t1 in enumerate(ends):
                lo, hi = bisect.bisect_right(at, t0), bisect.bisect_right(at, t1)
                if hi > lo:
                    out[k].update(window_means(samples[lo:hi], -math.inf, math.inf))
                t0 = t1
        return out


class Parts:
    """Parts are the deployment's watched parts (``--watch``), started and stopped together,
    read on one clock (``start(origin)``, as :class:`~redline.service.monitor.Monitor`)."""

    def __init__(self, watches: Sequence[Watch], interval_s: float = 1.0):
        names: dict[str, list[Watch]] = {}
        for w in watches:
            names.setdefault(w.name, []).append(w)
        self.parts = [Part(n, ws, interval_s) for n, ws in names.items()]
        self.origin = 0.0
        self._started = False

    @classmethod
    def parse(cls, texts: Sequence[str], interval_s: float = 1.0) -> Parts | None:
        """parse reads the ``--watch`` flags (None without any)."""
        if not texts:
            return None
        return cls([Watch.parse(t) for t in texts], interval_s)

    def start(self, origin: float | None = None) -> Parts:
        """start starts every part's monitors (commands first: a watched port may be theirs)."""
        self.origin = time.monotonic() if origin is None else origin
        monitors = [m for p in self.parts for m in p.monitors]
        monitors.sort(key=lambda m: not isinstance(m, CommandMonitor))
        try:
            for m in monitors:
                m.start(self.origin)
        except BaseException:
            self.stop()
            raise
        self._started = True
        return self

    def stop(self) -> None:
        """stop stops every monitor (and every started command), idempotent."""
        for p in self.parts:
            for m in p.monitors:
                m.stop()

    def window(self, t0: float, t1: float) -> dict[str, dict[str, float]]:
        """window: each part's figures over [t0, t1] (seconds since the origin)."""
        return {p.name: p.window(t0, t1) for p in self.parts}

    def intervals(
        self, ends: Sequence[float], start: float = 0.0
    ) -> list[dict[str, dict[str, float]]]:
        """intervals: each part's figures over each interval ending at ``ends`` (the first
        from ``start``; :meth:`Part.intervals`), a part with no sample in one left out."""
        out: list[dict[str, dict[str, float]]] = [{} for _ in ends]
        for p in self.parts:
            for k, figures in enumerate(p.intervals(ends, start)):
                if figures:
                    out[k][p.name] = figures
        return out

    def series(self) -> dict[str, list[dict[str, Any]]]:
        """series: each part's samples, for the JSON result."""
        return {p.name: [s.to_dict() for s in p.samples()] for p in self.parts}

    def specs(self) -> dict[str, list[str]]:
        """specs: how each part was watched, as the flags said it."""
        return {p.name: [f"{w.kind}:{w.target}" for w in p.watches] for p in self.parts}

    def __enter__(self) -> Parts:
        if not self._started:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
