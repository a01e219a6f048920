"""monitor: watching the service while it is under load, one sample a second.

Seed 000's author watched htop in another window and typed the load average into the table;
a monitor records the same figures on the load's own time base, so they line up with the
per-interval snapshots, go into each step, the charts and the leak check.

- :class:`ProcessMonitor` samples a process and its descendants with psutil;
- :class:`CommandMonitor` starts a command, samples it, and stops its whole tree at the end
  (also on an exception or Ctrl-C: use it as a context manager);
- :class:`PrometheusMonitor` scrapes a Prometheus text endpoint (the ``process_*`` metrics
  and any series named).

Every monitor keeps :class:`Sample` records whose ``t_s`` is seconds since ``origin``, a
``time.monotonic()`` reading the caller gives to :meth:`Monitor.start` (by default the moment
it starts): pass the load run's start and the samples share its clock.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import IO, Any

import psutil

from redline.errors import ConfigError
from redline.service.exposition import Pages, fetch, parse
from redline.service.sockets import socket_inodes
from redline.service.tether import tethered

#: FIELDS: the figures every sample may carry; None where the source does not give one.
FIELDS = ("cpu_percent", "load1", "rss_bytes", "fds", "threads", "connections")


@dataclass(frozen=True)
class Sample:
    """Sample is one reading of the service at ``t_s`` seconds since the monitor's origin:
    CPU % summed over its processes (100 = one core), the host's 1-minute load average,
    resident memory, open file descriptors, threads, open sockets, and ``extra`` named
    series (Prometheus). A figure the source cannot give is None."""

    t_s: float
    cpu_percent: float | None = None
    load1: float | None = None
    rss_bytes: float | None = None
    fds: float | None = None
    threads: float | None = None
    connections: float | None = None
    extra: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """to_dict is the sample as the JSON result's ``monitor`` series carries it."""
        return asdict(self)


def window_means(samples: Iterable[Sample], t0: float, t1: float) -> dict[str, float]:
    """window_means averages each figure (and each extra series) over the samples with
    t0 <= t_s <= t1; figures no sample in the window had are left out."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for s in samples:
        if not t0 <= s.t_s <= t1:
            continue
        values = {k: getattr(s, k) for k in FIELDS}
        values.update(s.extra)
        for k, v in values.items():
            if v is not None:
                sums[k] = sums.get(k, 0.0) + float(v)
                counts[k] = counts.get(k, 0) + 1
    return {k: sums[k] / counts[k] for k in sums}


class Monitor:
    """Monitor is the sampling loop shared by every source: a daemon thread that calls
    :meth:`read` every ``interval_s`` seconds and keeps the samples. Subclasses implement
    :meth:`read`; a read that raises is counted in ``failures`` (``last_error`` says why) and
    the loop goes on, unless the source is gone for good (:meth:`gone`)."""

    def __init__(self, interval_s: float = 1.0, clock: Callable[[], float] = time.monotonic):
        if not interval_s > 0:
            raise ConfigError(f"the monitor's interval must be > 0 s, got {interval_s}")
        self.interval_s = interval_s
        self.clock = clock
        self.origin = 0.0
        self.failures = 0
        self.last_error = ""
        self._samples: list[Sample] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- what subclasses provide -----------------------------------------------------------

    def prime(self) -> None:
        """prime takes the first reading that rates (CPU %) are measured from."""

    def read(self, t_s: float) -> Sample:
        """read takes one sample now, stamped ``t_s``."""
        raise NotImplementedError

    def gone(self) -> bool:
        """gone: the source has ended for good (a watched process exited)."""
        return False

    # -- the loop ----------------------------------------------------------------------------

    def start(self, origin: float | None = None) -> Monitor:
        """start primes the source and starts sampling; ``origin`` (a ``time.monotonic()``
        reading, default now) is the zero of every sample's ``t_s``."""
        if self._thread is not None:
            raise RuntimeError("monitor already started")
        self.origin = self.clock() if origin is None else origin
        self.prime()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="redline-monitor", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """stop ends sampling (idempotent); the samples stay."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5 * self.interval_s + 5)

    def sample_now(self) -> Sample | None:
        """sample_now takes one sample at once and keeps it (None if the read failed)."""
        try:
            s = self.read(self.clock() - self.origin)
        except Exception as e:  # a source that fails once must not end the run
            self.failures += 1
            self.last_error = f"{type(e).__name__}: {e}"
            return None
        with self._lock:
            self._samples.append(s)
        return s

    def _loop(self) -> None:
        due = self.clock() + self.interval_s
        while not self._stop.wait(max(0.0, due - self.clock())):
            due += self.interval_s
            if self.sample_now() is None and self.gone():
                return
            # Never try to catch up a backlog of ticks (a suspended laptop): skip ahead.
            due = max(due, self.clock())

    # -- reading the samples ---------------------------------------------------------------

    def samples(self) -> list[Sample]:
        """samples is a copy of every sample taken so far."""
        with self._lock:
            return list(self._samples)

    def latest(self) -> Sample | None:
        """latest is the most recent sample, None before the first."""
        with self._lock:
            return self._samples[-1] if self._samples else None

    def window(self, t0: float, t1: float) -> dict[str, float]:
        """window is each figure's mean over [t0, t1] (seconds since the origin)."""
        return window_means(self.samples(), t0, t1)

    def series(self) -> list[dict[str, Any]]:
        """series is every sample as a dict, for the JSON result."""
        return [s.to_dict() for s in self.samples()]

    def __enter__(self) -> Monitor:
        if self._thread is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _load1() -> float | None:
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


def descendants(pid: int) -> list[int] | None:
    """descendants are the pids under ``pid``, read from each thread's
    ``/proc/PID/task/TID/children`` (the tree's own files: psutil's ``children`` reads the
    stat of every process on the machine); None where the kernel has no such file."""
    if os.path.isdir(f"/proc/{pid}") and not os.path.exists(f"/proc/{pid}/task/{pid}/children"):
        return None
    out: list[int] = []
    todo = [pid]
    for _ in range(100_000):  # bounded: a tree is finite, each pid taken once
        if not todo:
            break
        p = todo.pop()
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue  # it ended meanwhile
        for tid in tids:
            try:
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    kids = [int(x) for x in f.read().split()]
            except (OSError, ValueError):
                continue  # the thread ended meanwhile
            fresh = [k for k in kids if k not in out]
            out += fresh
            todo += fresh
    return out


class ProcessMonitor(Monitor):
    """ProcessMonitor samples process ``pid`` and all its descendants: CPU % summed over the
    tree (from CPU-time deltas, so short-lived children between samples still count), RSS
    summed (pages shared between forks count once per process), fds, threads and inet
    sockets summed (its socket files: TCP, UDP and Unix-domain alike: psutil's inet count
    parses every socket of the machine, 50 ms of CPU on a busy box, bench/results/watch.md),
    and the host's load average. It
    stops when the process exits."""

    def __init__(
        self,
        pid: int,
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        super().__init__(interval_s, clock)
        self.pid = pid
        self._root: psutil.Process | None = None
        self._cpu: dict[tuple[int, float], float] = {}
        self._last_mono = 0.0
        self._last_epoch = 0.0
        #: _known: the tree's processes by pid (a psutil.Process keeps its identity).
        self._known: dict[int, psutil.Process] = {}
        #: procs: the tree as the last sample read it.
        self.procs: list[psutil.Process] = []

    def _tree(self) -> list[psutil.Process]:
        if self._root is None:
            self._root = psutil.Process(self.pid)
        pids = descendants(self._root.pid)
        if pids is None:
            try:
                return [self._root, *self._root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return []
        known: dict[int, psutil.Process] = {}
        for pid in pids:
            try:
                known[pid] = self._known.get(pid) or psutil.Process(pid)
            except psutil.NoSuchProcess:
                continue
        self._known = known
        return [self._root, *known.values()]

    def _cpu_seconds(self, procs: list[psutil.Process]) -> float:
        """_cpu_seconds is the CPU time the tree used since the last call: per process the
        growth of user+system time, or all of it for a process born since then."""
        used = 0.0
        seen: dict[tuple[int, float], float] = {}
        for p in procs:
            try:
                key = (p.pid, p.create_time())
                t = p.cpu_times()
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            total = t.user + t.system
            seen[key] = total
            prev = self._cpu.get(key)
            if prev is not None:
                used += max(0.0, total - prev)
            elif key[1] >= self._last_epoch:
                used += total
        self._cpu = seen
        return used

    def prime(self) -> None:
        try:
            procs = self._tree()
        except psutil.NoSuchProcess:
            raise ConfigError(f"--monitor-pid: no process with pid {self.pid}") from None
        self._last_epoch = 0.0
        self._cpu_seconds(procs)
        self._last_mono, self._last_epoch = self.clock(), time.time()

    def read(self, t_s: float) -> Sample:
        procs = self._tree()
        if not procs or self.gone():
            raise ProcessLookupError(f"process {self.pid} has exited")
        now, epoch = self.clock(), time.time()
        used = self._cpu_seconds(procs)
        elapsed = now - self._last_mono
        self._last_mono, self._last_epoch = now, epoch
        rss = fds = threads = 0.0
        for p in procs:
            try:
                with p.oneshot():
                    rss += p.memory_info().rss
                    fds += p.num_fds() if hasattr(p, "num_fds") else p.num_handles()
                    threads += p.num_threads()
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        conns = float(sum(len(socket_inodes(p.pid)) for p in procs))
        self.procs = procs
        return Sample(
            t_s=t_s,
            cpu_percent=100.0 * used / elapsed if elapsed > 0 else None,
            load1=_load1(),
            rss_bytes=rss,
            fds=fds,
            threads=threads,
            connections=conns,
        )

    def gone(self) -> bool:
        return self._root is None or not _alive(self._root)


def _alive(p: psutil.Process) -> bool:
    """_alive: running and not a zombie waiting to be reaped."""
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def stop_tree(proc: subprocess.Popen[Any], grace_s: float = 5.0) -> None:
    """stop_tree ends ``proc`` and every descendant: SIGTERM to its process group and to each
    descendant (one may have left the group), then SIGKILL to whatever is still there after
    ``grace_s`` seconds. It returns when they are gone, and reaps ``proc``."""
    try:
        root = psutil.Process(proc.pid)
        family = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for p in family:
            try:
                p.send_signal(sig)
            except psutil.NoSuchProcess:
                pass
        _, alive = psutil.wait_procs(family, timeout=grace_s if sig == signal.SIGTERM else 5)
        family = alive
        if not family:
            break
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


class CommandMonitor(ProcessMonitor):
    """CommandMonitor starts ``cmd`` (a string split like a shell would, or an argv list) in a
    session of its own, samples its process tree, and on :meth:`stop` ends the whole tree
    (SIGTERM, then SIGKILL after ``grace_s``). Its output goes to ``log`` (a path; default a
    temporary file, ``log_path``, kept only if the command ends by itself), so a service that
    dies early can say why. As a context
    manager it stops the command however the block ends, Ctrl-C included."""

    def __init__(
        self,
        cmd: str | Sequence[str],
        interval_s: float = 1.0,
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        log: str | None = None,
        grace_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        super().__init__(0, interval_s, clock)
        try:
            self.argv = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
        except ValueError as e:
            raise ConfigError(f"--monitor-cmd: {e} in {cmd!r}") from None
        if not self.argv:
            raise ConfigError("--monitor-cmd: the command is empty")
        self.env = env
        self.cwd = cwd
        self.grace_s = grace_s
        self._own_log = log is None
        if log is None:
            fd, log = tempfile.mkstemp(prefix="redline-monitor-", suffix=".log")
            os.close(fd)
        self.log_path = log
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._ended = False

    def start(self, origin: float | None = None) -> Monitor:
        """start launches the command, then samples it (see :meth:`Monitor.start`)."""
        self._ended = False
        try:
            argv = tethered(self.argv, cwd=self.cwd, env=self.env)  # dies with redline
        except ConfigError as e:
            raise ConfigError(f"--monitor-cmd: {e}") from None
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (closed in stop)
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
            )
        except OSError as e:
            self._log.close()
            raise ConfigError(
                f"--monitor-cmd: cannot start {self.argv[0]!r}: {e.strerror or e}"
            ) from None
        self.pid = self.proc.pid
        try:
            return super().start(origin)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """stop ends sampling and the command's whole process tree (idempotent). A temporary
        log is removed, unless the command had ended by itself (its log says why). Only
        the first call signals: once the command is reaped its pid may belong to another
        process, which a second stop_tree would kill (the search stops its monitor, and the
        caller that started the command stops it again however the search ended)."""
        super().stop()
        if self._ended:
            return
        self._ended = True
        died = self.proc is not None and self.proc.poll() is not None
        if self.proc is not None:
            stop_tree(self.proc, self.grace_s)
        if self._log is not None:
            self._log.close()
        if self._own_log and not died and os.path.exists(self.log_path):
            os.unlink(self.log_path)

    @property
    def returncode(self) -> int | None:
        """returncode is the command's exit status, None while it runs."""
        return None if self.proc is None else self.proc.poll()

    def log_tail(self, lines: int = 20) -> str:
        """log_tail is the last ``lines`` lines of the command's output."""
        try:
            with open(self.log_path, "rb") as f:
                text = f.read().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


_SELECTOR = re.compile(r"^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{(.*)\})?\s*$")
_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


def parse_selector(text: str) -> tuple[str, dict[str, str]]:
    """parse_selector reads a series selector, ``name`` or ``name{label="value",...}``
    (equality matchers only), into the metric name and the labels to match."""
    m = _SELECTOR.match(text)
    if not m:
        raise ConfigError(_not_selector(text))
    labels: dict[str, str] = {}
    rest = m.group(2) or ""
    pos = 0
    while pos < len(rest.strip()):
        lm = _MATCHER.match(rest, pos)
        if not lm:
            raise ConfigError(_not_selector(text))
        labels[lm.group(1)] = lm.group(2)
        pos = lm.end()
    return m.group(1), labels


def _not_selector(text: str) -> str:
    return f'--metric: expected name or name{{label="value",...}}, got {text!r}'


def parse_exposition(text: str) -> list[tuple[str, dict[str, str], float]]:
    """parse_exposition reads Prometheus text exposition into (name, labels, value) samples
    with prometheus_client's own parser."""
    return parse(text).samples


class PrometheusMonitor(Monitor):
    """PrometheusMonitor scrapes ``url`` (Prometheus text format) each interval. The standard
    process collector's series give the figures: ``process_cpu_seconds_total`` (its growth
    over wall time, as CPU %), ``process_resident_memory_bytes``, ``process_open_fds``;
    ``metrics`` are selectors (``name`` or ``name{label="v"}``) whose matching samples are
    summed into ``extra`` under the selector's text. A failed scrape is counted, not fatal."""

    def __init__(
        self,
        url: str,
        metrics: Sequence[str] = (),
        interval_s: float = 1.0,
        *,
        timeout_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        super().__init__(interval_s, clock)
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"--monitor-prometheus: an http(s) URL, got {url!r}")
        self.url = url
        self.selectors = {m: parse_selector(m) for m in metrics}
        self.timeout_s = timeout_s if timeout_s is not None else max(0.1, 0.8 * interval_s)
        self._last_cpu: tuple[float, float] | None = None
        #: pages: the endpoint's pages, parsed once per shape (:class:`Pages`).
        self.pages = Pages()

    def scrape(self) -> list[tuple[str, dict[str, str], float]]:
        """scrape fetches and parses the endpoint once."""
        return self.pages.parse(fetch(self.url, self.timeout_s)).samples

    def prime(self) -> None:
        try:
            self._cpu_percent(self.scrape())
        except Exception as e:  # the service may not be up yet; the loop will say
            self.failures += 1
            self.last_error = f"{type(e).__name__}: {e}"

    def _cpu_percent(self, samples: list[tuple[str, dict[str, str], float]]) -> float | None:
        return self._cpu_rate(_first(samples, "process_cpu_seconds_total"))

    def _cpu_rate(self, cpu: float | None) -> float | None:
        """_cpu_rate: the growth of the process's CPU seconds since the last reading, as CPU %
        (None without one, or when the process restarted)."""
        if cpu is None:
            return None
        now = self.clock()
        last, self._last_cpu = self._last_cpu, (now, cpu)
        if last is None or now <= last[0] or cpu < last[1]:
            return None  # no earlier reading, or the process restarted
        return 100.0 * (cpu - last[1]) / (now - last[0])

    def read(self, t_s: float) -> Sample:
        samples = self.scrape()
        extra = {}
        for text, (name, labels) in self.selectors.items():
            hits = [
                v
                for n, lb, v in samples
                if n == name and all(lb.get(k) == want for k, want in labels.items())
            ]
            if hits:
                extra[text] = float(sum(hits))
        return Sample(
            t_s=t_s,
            cpu_percent=self._cpu_percent(samples),
            rss_bytes=_first(samples, "process_resident_memory_bytes"),
            fds=_first(samples, "process_open_fds"),
            extra=extra,
        )


def _first(samples: list[tuple[str, dict[str, str], float]], name: str) -> float | None:
    return next((v for n, _, v in samples if n == name), None)
