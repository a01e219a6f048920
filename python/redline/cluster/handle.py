"""handle: the driver's side of a distributed run, with the interface of the engine's
RunHandle (``set_target``, ``target``, ``stop``, ``done``, ``next_snapshot``, ``report``),
so ``redline.run``, thresholds, the live view and ``redline find`` drive a cluster as they
drive one process.

Each injector is polled with one outstanding call at a time; its snapshots are numbered in
the order it sent them (the engine sends interval 0, 1, 2, ... each once), and interval k
is merged when every injector still running has sent its k-th. A snapshot that comes after
its interval was handed out (an injector declared lost that spoke again) is merged into
that interval in the report's time series: never dropped, never counted in another one.

The driver keeps one merged snapshot per interval, not every injector's (250 injectors
for an hour at 1 s would be 900,000 histograms), and per injector only running sums.
"""

from __future__ import annotations

import enum
import json
import signal
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from redline.cluster.connection import Connection, Member
from redline.cluster.merge import add_counts, merge_histograms, merge_report, merge_snapshots
from redline.cluster.split import for_rebalance, load_of, split_config, split_value
from redline.cluster.table import injector_rows, merged_generator
from redline.errors import ClusterError, ConfigError, RedlineError, UnreachableError
from redline.runs.config import RunConfig

#: SILENT_INTERVALS: an injector that sends no snapshot for this many intervals is lost.
SILENT_INTERVALS = 3

#: MIN_SILENCE_S: but never sooner than this: a snapshot crosses Ray's object store and a
#: busy node's scheduler, which can take a second with short intervals (find's 0.5 s).
MIN_SILENCE_S = 2.0

#: START_LEAD_S: how far ahead of now the shared start instant is set, so every injector
#: has its run built and waiting before it (the engine's threads start in well under this).
START_LEAD_S = 1.0

#: POLL_S: how long one poll call waits on an injector for its next snapshot.
POLL_S = 0.5

#: REPORT_TIMEOUT_S bounds the wait for the injectors' reports after their runs ended.
REPORT_TIMEOUT_S = 60.0


class OnLoss(enum.Enum):
    """OnLoss is what a run does when an injector dies or falls silent."""

    #: FAIL: stop the run, name the injector, keep the partial result (the default: the
    #: offered load is no longer what was asked).
    FAIL = "fail"
    #: CONTINUE: go on; every interval says how many injectors reported it.
    CONTINUE = "continue"
    #: REBALANCE: go on, the lost share handed to the others (each injector runs live, so
    #: its load can be raised; a constant load for a duration only).
    REBALANCE = "rebalance"

    @classmethod
    def parse(cls, text: str) -> OnLoss:
        """parse reads ``--on-injector-loss``."""
        try:
            return cls(text)
        except ValueError:
            raise ClusterError(
                f"--on-injector-loss {text!r}: choose fail, continue or rebalance"
            ) from None


@dataclass
class Feed:
    """Feed is what the driver knows of one injector's stream."""

    member: Member
    pending: Any = None
    received: int = 0
    finished: bool = False
    lost: str | None = None
    heard_at: float = 0.0
    #: load: its share of the load now (VUs or req/s), as last split.
    load: float = 0.0
    #: lost_at_s: when it was lost, seconds after the shared start instant.
    lost_at_s: float | None = None
    #: lost_share: the part of the load then offered that it carried (0 to 1).
    lost_share: float | None = None
    #: seen: its snapshots after warm-up, summed (its figures if it never reports).
    seen: Seen = field(default_factory=lambda: Seen())


#: COMPACT_AFTER: a Seen merges its histograms into one once it holds this many.
COMPACT_AFTER = 32


@dataclass
class Seen:
    """Seen is what one injector's snapshots after warm-up add up to."""

    requests: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    bytes_in: int = 0
    t_s: float = 0.0
    histograms: list[str] = field(default_factory=list)

    def add(self, snap: dict[str, Any]) -> None:
        """add counts one snapshot (warm-up ones are not in a run's figures)."""
        self.t_s = max(self.t_s, float(snap["t_s"]))
        if snap["warmup"]:
            return
        self.requests += int(snap["requests"])
        self.errors = add_counts([self.errors, snap["errors_by_class"]])
        self.bytes_in += int(snap["bytes_in"])
        self.histograms.append(snap["histogram"])
        if len(self.histograms) >= COMPACT_AFTER:
            self.histograms = [merge_histograms(self.histograms)]


class ClusterHandle:
    """ClusterHandle runs one RunConfig across a connection's injectors (see module doc)."""

    def __init__(
        self,
        connection: Connection,
        config: RunConfig,
        on_loss: OnLoss = OnLoss.FAIL,
        owns_connection: bool = True,
    ):
        self.conn = connection
        self.ray = connection.ray
        self.on_loss = on_loss
        self.owns_connection = owns_connection
        self.interval_s = float(config.get("interval_s", 1.0))
        self.closed_model = not (config.get("open") or config.get("rate") is not None)
        self.weights = [float(m.cores) for m in connection.members]
        self.start_at = time.time() + START_LEAD_S
        rebalance = on_loss is OnLoss.REBALANCE
        if rebalance:
            config = for_rebalance(config)
        #: total: the load the whole cluster is asked for (what a rebalance hands out again).
        self.total = load_of(config)
        self._rebalance = False
        configs = split_config(config, self.weights, self.start_at, whole_cap=rebalance)
        self.silence_s = max(SILENT_INTERVALS * self.interval_s, MIN_SILENCE_S)
        # The first snapshot is due an interval after the start instant.
        first_due = self.start_at + self.interval_s
        self.feeds = [Feed(m, heard_at=first_due) for m in connection.members]
        #: pending: intervals not yet handed out, by injector; emitted: merged ones.
        self.pending: dict[int, dict[int, dict[str, Any]]] = {}
        self.emitted: dict[int, dict[str, Any]] = {}
        self.next_index = 0
        self.ready: deque[dict[str, Any]] = deque()
        self.failure: str | None = None
        #: refusals: the engine errors (a target that cannot be reached or spoken to) that
        #: ended injectors' runs before they sent anything, by injector index.
        self.refusals: dict[int, RedlineError] = {}
        self.stopped = False
        self._report: str | None = None
        self._done = False
        self._sigint = False
        starts = [f.member.actor.start.remote(c) for f, c in zip(self.feeds, configs, strict=True)]
        try:
            self.ray.get(starts)
        except Exception as e:
            self.close()
            raise ClusterError(f"an injector refused the run: {_first_line(e)}") from None
        for f, c in zip(self.feeds, configs, strict=True):
            f.load = load_of(c)
            f.pending = f.member.actor.poll.remote(POLL_S)

    # The RunHandle interface.

    def set_target(self, value: float, ramp_s: float = 0.0) -> float:
        """set_target splits the new load across the running injectors and returns when the
        change began (seconds since the shared start)."""
        self.total = value
        live = self._running()
        if not live:  # the run is over (every injector stopped or lost): nothing to steer
            return 0.0
        shares = split_value(value, [self.weights[f.member.index] for f in live], self.closed_model)
        for f, share in zip(live, shares, strict=True):
            f.load = share
        refs = [
            f.member.actor.set_target.remote(s, ramp_s) for f, s in zip(live, shares, strict=True)
        ]
        ats = [a for a in self._answers(live, refs) if a is not None]
        return max(float(a) for a in ats) if ats else 0.0

    def target(self) -> float | None:
        """target: the load asked of the running injectors now, summed."""
        live = self._running()
        values = self._answers(live, [f.member.actor.target.remote() for f in live])
        got = [float(v) for v in values if v is not None]
        return sum(got) if got else None

    def stop(self) -> None:
        """stop asks every injector to end its run; the report still comes from report()."""
        self.stopped = True
        for f in self.feeds:  # a silent injector too: it may still be sending
            try:
                f.member.actor.stop.remote()
            except Exception:  # its actor is gone: nothing to stop
                pass

    @property
    def done(self) -> bool:
        """done: every injector's run has ended (or it was lost) and every merged interval
        has been handed out."""
        return self._done

    def next_snapshot(self, timeout_s: float) -> str | None:
        """next_snapshot: the next merged interval (JSON), or None when none is complete
        within ``timeout_s`` or the run is over. Ctrl-C stops every injector and raises."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        previous = self._defer_sigint()
        try:
            while True:
                if self._sigint:
                    # Ctrl-C, taken here rather than in the middle of reading a reply.
                    self._sigint = False
                    self.stop()
                    _deliver_sigint(previous)
                if self.ready:
                    return json.dumps(self.ready.popleft())
                if all(f.finished or f.lost for f in self.feeds):
                    self._flush()
                    if self.ready:
                        continue
                    self._done = True
                    return None
                left = deadline - time.monotonic()
                self._pump(max(0.0, min(left, 0.2)))
                self._emit_ready()
                if left <= 0 and not self.ready:
                    return None
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    def report(self) -> str:
        """report waits for every injector's end and returns the merged report (JSON), with
        the per-injector table and, after a loss, which injector and why. Repeatable."""
        if self._report is not None:
            return self._report
        try:
            while not self._done:
                try:
                    self.next_snapshot(1.0)
                except KeyboardInterrupt:
                    self.stop()  # Ctrl-C while waiting: stop now, still report what ran
            reports = self._reports()
            self._report = json.dumps(self._merge(reports))
        finally:
            self.close()
        return self._report

    def lost_share_of(self, lost: list[str]) -> float | None:
        """lost_share_of: the part of the load the injectors named in ``lost`` (lines of
        ``injectors_lost``) carried when each was lost, taken one after the other."""
        shares = [
            f.lost_share
            for f in self.feeds
            if f.lost and f.lost_share is not None and f"{f.member.name} {f.lost}" in lost
        ]
        if not shares:
            return None
        kept = 1.0
        for s in shares:
            kept *= 1.0 - s
        return round(1.0 - kept, 4)

    def close(self) -> None:
        """close ends the injectors (and the Ray this run started); report() calls it."""
        if self.owns_connection:
            self.conn.close()

    # Driving the injectors.

    def _answers(self, feeds: list[Feed], refs: list[Any]) -> list[Any]:
        """_answers: each call's reply, None for an injector that died meanwhile (lost)."""
        out = []
        for f, ref in zip(feeds, refs, strict=True):
            try:
                out.append(self.ray.get(ref))
            except Exception as e:  # RayActorError and kin
                self._lose(f, f"died ({_first_line(e)})")
                out.append(None)
        return out

    def _defer_sigint(self) -> Any:
        """_defer_sigint notes a Ctrl-C instead of raising it wherever the main thread is (a
        KeyboardInterrupt between a poll's reply and the next poll would lose snapshots);
        next_snapshot acts on it at a safe point. Returns the handler to put back (None off
        the main thread, where signals never land)."""
        if threading.current_thread() is not threading.main_thread():
            return None

        def note(*_: Any) -> None:
            self._sigint = True

        return signal.signal(signal.SIGINT, note)

    def _running(self) -> list[Feed]:
        return [f for f in self.feeds if f.lost is None and not f.finished]

    def _pump(self, wait_s: float) -> None:
        for f in self._running():
            if f.pending is None:  # a poll cut short (Ctrl-C between its reply and the next)
                f.pending = f.member.actor.poll.remote(POLL_S)
        waiting = [f for f in self.feeds if f.pending is not None]
        if waiting:
            refs = [f.pending for f in waiting]
            ready, _ = self.ray.wait(refs, num_returns=1, timeout=wait_s)
            if ready:
                ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
            done = set(ready)
            for f in waiting:
                if f.pending in done:
                    self._take(f)
        now = time.time()
        for f in self._running():
            if now - f.heard_at > self.silence_s:
                self._lose(f, f"sent no snapshot for {self.silence_s:g} s")
        if self._rebalance and not self.stopped and self._running():
            # The lost share, to the others: the whole load split over who is left.
            self._rebalance = False
            self.set_target(self.total, 0.0)

    def _take(self, f: Feed) -> None:
        ref, f.pending = f.pending, None
        try:
            got = self.ray.get(ref)
        except Exception as e:  # RayActorError and kin: the actor died
            self._lose(f, f"died ({_first_line(e)})")
            return
        for raw in got["snapshots"]:
            snap = json.loads(raw)
            if got.get("worker_cpu") is not None:
                snap["worker_cpu"] = {str(f.member.index): got["worker_cpu"]}
            k = f.received
            f.received += 1
            f.heard_at = time.time()
            f.seen.add(snap)
            if k < self.next_index:
                # Late: its interval was handed out without it; it joins it in the report.
                self.emitted[k] = merge_snapshots([self.emitted[k], snap], len(self.feeds))
            else:
                self.pending.setdefault(k, {})[f.member.index] = snap
        if got["done"]:
            f.finished = True
        elif f.lost is None or self.on_loss is not OnLoss.FAIL:
            f.pending = f.member.actor.poll.remote(POLL_S)

    def _lose(self, f: Feed, why: str) -> None:
        if f.lost is not None:
            return
        offered = sum(g.load for g in self._running())
        f.lost = why
        f.lost_at_s = max(0.0, time.time() - self.start_at)
        f.lost_share = min(1.0, f.load / offered) if offered > 0 else None
        if self.on_loss is OnLoss.REBALANCE:
            self._rebalance = True  # done in _pump, not inside a call that noticed the loss
        if self.on_loss is OnLoss.FAIL and self.failure is None:
            self.failure = f"{f.member.name} {why}: run stopped (--on-injector-loss fail)"
            self.stop()

    def _expected(self, k: int) -> list[int]:
        """_expected: the injectors interval k waits for: those not lost that have not
        ended before sending it."""
        return [
            f.member.index
            for f in self.feeds
            if f.lost is None and (not f.finished or f.received > k)
        ]

    def _emit_ready(self) -> None:
        while True:
            k = self.next_index
            got = self.pending.get(k, {})
            want = self._expected(k)
            if not got or any(i not in got for i in want):
                return
            self._emit(k)

    def _flush(self) -> None:
        while self.pending:
            self._emit(min(self.pending))

    def _emit(self, k: int) -> None:
        got = self.pending.pop(k)
        merged = merge_snapshots([got[i] for i in sorted(got)], len(self.feeds))
        lost = [f"{f.member.name} {f.lost}" for f in self.feeds if f.lost]
        if lost:
            # Named in the live view as they happen (redline.view.progress shows it).
            merged["injectors_lost"] = lost
        self.emitted[k] = merged
        self.ready.append(merged)
        self.next_index = k + 1

    # The end.

    def _reports(self) -> dict[int, dict[str, Any]]:
        live = [f for f in self.feeds if f.lost is None]
        refs = [f.member.actor.report.remote() for f in live]
        ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=REPORT_TIMEOUT_S)
        out = {}
        for f, ref in zip(live, refs, strict=True):
            if ref not in ready:
                self._lose(f, f"sent no report within {REPORT_TIMEOUT_S:g}s")
                continue
            try:
                out[f.member.index] = json.loads(self.ray.get(ref))
            except Exception as e:
                refused = _refusal(e)
                if refused is not None:
                    # The engine refused the run (the target, its protocol): not a death.
                    self.refusals[f.member.index] = refused
                self._lose(f, f"died before its report ({_first_line(refused or e)})")
        return out

    def _refused(self, lost: list[Feed]) -> RedlineError:
        """_refused: the error of a run no injector reported anything of: the engine's own
        when each refused it (the same line as on one machine when they all said the same,
        each by name otherwise), else that nothing was reported."""
        why = [self.refusals.get(f.member.index) for f in lost]
        said = [w for w in why if w is not None]
        if not lost or len(said) < len(lost):
            return ClusterError("no injector reported anything")
        if len({(type(w), str(w)) for w in said}) == 1:
            return type(said[0])(str(said[0]))
        each = "; ".join(f"{f.member.name}: {w}" for f, w in zip(lost, said, strict=True))
        return ClusterError(f"every injector refused the run: {each}")

    def _merge(self, reports: dict[int, dict[str, Any]]) -> dict[str, Any]:
        # Every interval, late snapshots included (each merged into its own interval once).
        timeseries = [self.emitted[k] for k in sorted(self.emitted)]
        lost = [f for f in self.feeds if f.member.index not in reports]
        partial = [_partial(f.seen) for f in lost if f.seen.histograms]
        if not reports and not partial:
            raise self._refused(lost)
        merged = merge_report([reports[i] for i in sorted(reports)], timeseries, partial)
        rows = injector_rows(self.feeds, reports)
        merged["generator"] = merged_generator([reports[i] for i in sorted(reports)], rows)
        if self.failure is not None or lost:
            merged["interrupted"] = merged["interrupted"] or self.failure is not None
        merged["cluster"] = {
            "injectors": rows,
            "on_injector_loss": self.on_loss.value,
            "start_at_unix_s": self.start_at,
            "lost": [f"{f.member.name} {f.lost}" for f in self.feeds if f.lost],
            "failure": self.failure,
            "lost_share": self._lost_share(),
            "after_loss": after_loss(self.feeds, timeseries, self.interval_s),
        }
        return merged

    def _lost_share(self) -> float:
        """_lost_share: the part of the asked load that no injector offered at the end,
        the lost injectors' shares not handed on (0 after a rebalance or a new target)."""
        if not any(f.lost for f in self.feeds) or self.total <= 0:
            return 0.0
        kept = sum(f.load for f in self.feeds if f.lost is None)
        return round(min(1.0, max(0.0, 1.0 - kept / self.total)), 4)


def after_loss(
    feeds: list[Feed], timeseries: list[dict[str, Any]], interval_s: float
) -> dict[str, Any] | None:
    """after_loss: the run from the first whole interval after the first loss on, which
    counts the injectors left only (what ``--on-injector-loss continue`` measured with
    them): its start, the injectors that reported, requests and rate. None without a loss
    or without such an interval (the run stopped on it)."""
    times = [f.lost_at_s for f in feeds if f.lost_at_s is not None]
    if not times:
        return None
    first = min(times)
    after = [s for s in timeseries if float(s["t_s"]) - interval_s >= first - 1e-9]
    if not after:
        return None
    span = float(after[-1]["t_s"]) - (float(after[0]["t_s"]) - interval_s)
    requests = sum(int(s["requests"]) for s in after)
    return {
        "from_s": round(float(after[0]["t_s"]) - interval_s, 3),
        "injectors": min(int(s["injectors_reported"]) for s in after[:-1] or after),
        "requests": requests,
        "rps": round(requests / span, 3) if span > 0 else None,
    }


def _partial(seen: Seen) -> dict[str, Any]:
    """_partial is a lost injector's figures from its snapshots after warm-up: what it was
    answered before it was lost (its intended and unsent are unknown: counted as answered
    plus failed, so its part of the books holds what the server can have seen)."""
    transport = sum(v for k, v in seen.errors.items() if k not in ("status", "check"))
    return {
        "requests": seen.requests,
        "intended": seen.requests + transport,
        "errors": seen.errors,
        "errors_total": sum(seen.errors.values()),
        "bytes_in": seen.bytes_in,
        "duration_s": seen.t_s,
        "histograms": {"latency": merge_histograms(seen.histograms), "uncorrected": None},
        "per_name": {},
    }


def _deliver_sigint(previous: Any) -> None:
    """_deliver_sigint hands a deferred Ctrl-C to the handler it was deferred from (Python's
    own raises KeyboardInterrupt)."""
    if previous is signal.SIG_IGN:
        return
    if callable(previous) and previous is not signal.default_int_handler:
        previous(signal.SIGINT, None)
        return
    raise KeyboardInterrupt


#: _ENGINE_ERRORS: the engine's error types by name. One that crossed from an injector's
#: process comes back as a class of the extension module loaded there under another name
#: (``_engine.UnreachableError``), which isinstance does not match: its name does.
_ENGINE_ERRORS: dict[str, type[RedlineError]] = {
    c.__name__: c for c in (UnreachableError, ConfigError, RedlineError)
}


def _refusal(e: BaseException) -> RedlineError | None:
    """_refusal: the engine's own error (one line for the user) behind what an injector's
    call raised (Ray wraps it, its text a traceback), as this process's type; else None."""
    cause = getattr(e, "cause", None)
    if cause is None:
        return e if isinstance(e, RedlineError) else None
    for k in type(cause).__mro__:
        if k.__name__ in _ENGINE_ERRORS:
            return _ENGINE_ERRORS[k.__name__](str(cause))
    return None


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
