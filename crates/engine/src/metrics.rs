//! What the workers measure: latency histograms and counters, per thread, merged per interval.
//!
//! Each worker thread owns one [`Recorder`] (no locks, no atomics on the request path). Once per
//! reporting interval the thread ships its [`IntervalData`] to the coordinator and starts a new
//! one; at the end it ships its [`Totals`]. Memory is bounded: histograms have a fixed range and
//! precision, counters are fixed-size arrays, nothing grows with the number of requests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::failure::ErrorClass;
use crate::flight::Sent;
use crate::hdr::{micros, record};
use crate::interval::{IntervalData, NameInterval};
use crate::outage::{ThreadWatch, Watch};
use crate::totals::Totals;

/// ConnectionGauge counts the connections open across all worker threads, and their peak.
///
/// Each thread knows only its own count, and the sum of per-thread peaks overstates the
/// run's peak whenever threads peak at different moments. The connections themselves keep
/// it (see `conn::Conn`), as they open and close, so a connection whose request never comes
/// back still counts. Connections open and close far less
/// often than requests go out (per request only against a server that closes every one, where
/// the connect costs a thousand times more), so one shared atomic add per change is cheap.
#[derive(Debug, Default)]
pub struct ConnectionGauge {
    open: AtomicU64,
    peak: AtomicU64,
    /// fd_refused: connects the kernel refused for want of a file descriptor.
    fd_refused: AtomicU64,
}

impl ConnectionGauge {
    /// opened counts one more open connection.
    pub fn opened(&self) {
        let now = self.open.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    /// closed counts one connection fewer.
    pub fn closed(&self) {
        let _ = self
            .open
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    /// peak is the most connections open at once so far, over all threads.
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    /// failed_connect counts a connect that failed with `e` when the cause is the open-file
    /// limit (EMFILE: this process's `ulimit -n`; ENFILE: the system's): no request can
    /// tell that from a server that refused, and the report must name it.
    pub fn failed_connect(&self, e: &std::io::Error) {
        if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) {
            self.fd_refused.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// open is how many connections are open now, over all threads (counted at the connect,
    /// not at the first answer: a connection whose request is still out counts).
    pub fn open(&self) -> u64 {
        self.open.load(Ordering::Relaxed)
    }

    /// fd_refused is how many connects the open-file limit refused so far.
    pub fn fd_refused(&self) -> u64 {
        self.fd_refused.load(Ordering::Relaxed)
    }
}

/// Response is what the recorder needs to know about one completed response.
#[derive(Debug, Clone, Copy)]
pub struct Response {
    /// intended: when the request was meant to start (decides warm-up or measured).
    pub intended: Instant,
    /// stat: per-name statistics index.
    pub stat: usize,
    /// status: HTTP status code.
    pub status: u16,
    /// latency: from the intended send (== service time in the closed model).
    pub latency: Duration,
    /// service: from the actual send.
    pub service: Duration,
    /// bytes_in: bytes read for this response.
    pub bytes_in: u64,
    /// expected: a 4xx/5xx (a gRPC call's status other than OK) the scenario asked for
    /// (`status=404`), not an error.
    pub expected: bool,
    /// grpc: `status` is a gRPC call's status code (0: OK; see [`crate::grpc`]).
    pub grpc: bool,
    /// at: when the thread saw it end.
    pub at: Instant,
    /// ended: when its last bytes arrived, where its latency ends (`at`, or earlier: the
    /// kernel's receive stamp when the thread napped through the arrival); its request
    /// stops counting as in flight then, so that the in-flight mean and λW (Little's law)
    /// measure one and the same span.
    pub ended: Instant,
}

impl Response {
    /// failure is the class of error this answer is, if it is one: a gRPC status other than
    /// OK, or an HTTP status of 400 or more, that the flow did not expect.
    pub fn failure(&self) -> Option<ErrorClass> {
        if self.grpc {
            (self.status != 0 && !self.expected).then_some(ErrorClass::Grpc)
        } else {
            (self.status >= 400 && !self.expected).then_some(ErrorClass::Status)
        }
    }
}

/// FlightClock counts the requests in flight on one thread and integrates that count over
/// time, for the interval's time-weighted mean ([`IntervalData::in_flight_mean`]).
///
/// Each send and each end moves the count and adds `count x time since the last change` to
/// the area: one subtraction and one multiply per event, with the timestamp the request
/// path reads anyway (no clock read of its own). Events may come slightly out of order (a
/// lane reuses its last completion time as "now"); an event earlier than the last one does
/// not move the clock back. A request that began or ended before it was seen (the open
/// model's intended send, a kernel-stamped arrival) has its area added or taken back, within
/// the current integration only: the part that fell in an interval already closed stays as
/// that interval counted it.
#[derive(Debug, Clone, Copy)]
struct FlightClock {
    count: u64,
    last: Instant,
    /// since: when the current interval's integration began.
    since: Instant,
    /// area_ns: requests x nanoseconds in flight since `since`.
    area_ns: u128,
}

impl FlightClock {
    fn new(start: Instant) -> Self {
        FlightClock {
            count: 0,
            last: start,
            since: start,
            area_ns: 0,
        }
    }

    fn advance(&mut self, at: Instant) {
        if at > self.last {
            self.area_ns += u128::from(self.count) * (at - self.last).as_nanos();
            self.last = at;
        }
    }

    fn up(&mut self, at: Instant) {
        self.advance(at);
        self.count += 1;
    }

    /// up_from counts a request seen going out at `at` as in flight since `from` (earlier:
    /// the open model's intended send, which its latency is timed from): the area it missed
    /// since then is added, within the current integration.
    fn up_from(&mut self, at: Instant, from: Instant) {
        self.up(at);
        // Nothing missed when it went out when seen (the closed model): no subtraction then.
        if from < self.last {
            let missed = self.last.saturating_duration_since(from.max(self.since));
            self.area_ns += missed.as_nanos();
        }
    }

    fn down(&mut self, at: Instant) {
        self.advance(at);
        self.count = self.count.saturating_sub(1);
    }

    /// down_at ends a request seen at `at` that really ended at `ended` (earlier: the
    /// kernel's stamp of its arrival): the area it was counted for since then is taken back,
    /// within the current integration.
    fn down_at(&mut self, at: Instant, ended: Instant) {
        self.down(at);
        // Nothing to take back when it ended when seen (no kernel stamp): no subtraction then.
        if ended < self.last {
            let over = self.last.saturating_duration_since(ended.max(self.since));
            self.area_ns = self.area_ns.saturating_sub(over.as_nanos());
        }
    }

    /// mean closes the integration at `at`: the mean count since the last close (the count
    /// itself over an empty span), and starts the next one.
    fn mean(&mut self, at: Instant) -> f64 {
        self.advance(at);
        let span = self.last.saturating_duration_since(self.since).as_nanos();
        let mean = if span == 0 {
            self.count as f64
        } else {
            self.area_ns as f64 / span as f64
        };
        self.since = self.last;
        self.area_ns = 0;
        mean
    }
}

/// Recorder is a worker thread's measurement state: the current interval and the totals.
#[derive(Debug)]
pub struct Recorder {
    warmup_end: Instant,
    /// send_end: end of the send window (timed runs); sends after it (late hits sent during
    /// the end-of-run grace) are not counted as achieved rate.
    pub send_end: Option<Instant>,
    /// interval: the interval being filled.
    pub interval: IntervalData,
    /// boundary: where that interval ends (None: it takes everything until it is taken).
    /// What happens at or after it goes into `next`, so that a reporter that wakes late (a
    /// thread starved of CPU) takes an interval holding only its own time's answers: taken
    /// whole, the late interval held more than an interval's answers under the interval's
    /// time, and a rate over it read as a burst the server never served.
    boundary: Option<Instant>,
    /// next: what came in at or after `boundary`, the start of the next interval.
    next: IntervalData,
    /// last: when the last answer or failure was booked: a check, a tally or an iteration,
    /// which carry no clock of their own, go into that answer's interval.
    last: Instant,
    /// totals: post-warmup summary.
    pub totals: Totals,
    open_connections: u64,
    /// flight: requests sent and not yet ended, and their time integral; a counter (one add
    /// per send, one subtract per end), so the interval reads it without walking the lanes.
    flight: FlightClock,
    /// open: the open model, whose requests are timed (and counted in flight) from their
    /// intended send.
    open: bool,
    /// watch: answers and failures, for the run's outages (see [`crate::outage`]).
    watch: Watch,
}

impl Recorder {
    /// new makes a recorder for a run whose clock started at `start`; requests meant to start
    /// before `warmup_end` stay out of the totals (the interval data sees everything).
    pub fn new(
        start: Instant,
        warmup_end: Instant,
        highest_us: u64,
        names: usize,
        open: bool,
    ) -> Self {
        Recorder {
            warmup_end,
            send_end: None,
            interval: IntervalData::new(highest_us),
            boundary: None,
            next: IntervalData::new(highest_us),
            last: start,
            totals: Totals::new(highest_us, names, open),
            open_connections: 0,
            flight: FlightClock::new(start),
            open,
            watch: Watch::new(start),
        }
    }

    /// track_names keeps per-name figures in each interval for `names` request names (a
    /// scenario run; see [`IntervalData::names`]).
    pub fn track_names(&mut self, names: usize) {
        let high = self.interval.latency.high();
        self.interval.names = (0..names).map(|_| NameInterval::new(high)).collect();
        self.next.names = (0..names).map(|_| NameInterval::new(high)).collect();
    }

    /// track_scenario keeps a scenario run's figures per request name in each interval (see
    /// [`Recorder::track_names`]), and per host in the totals, the run's own (`origin`)
    /// first (see [`crate::hosts`]).
    pub fn track_scenario(&mut self, names: usize, origin: String) {
        self.track_names(names);
        let high = self.totals.latency.high();
        let stats = crate::hosts::HostStats::new(origin, high);
        self.totals.per_host.push(stats);
    }

    /// bound_interval ends the interval being filled at `boundary`: what happens from then
    /// on is booked in the next one.
    pub fn bound_interval(&mut self, boundary: Instant) {
        self.boundary = Some(boundary);
    }

    /// unbound books what came in past the boundary into the interval being filled, and
    /// lifts the boundary (a thread's last, partial interval takes everything).
    pub fn unbound(&mut self) {
        if self.boundary.take().is_some() {
            self.interval.merge(&self.next);
            self.next.clear();
        }
    }

    /// slot is the interval an event at `t` belongs to.
    #[inline]
    fn slot(&mut self, t: Instant) -> &mut IntervalData {
        match self.boundary {
            Some(b) if t >= b => &mut self.next,
            _ => &mut self.interval,
        }
    }

    /// iteration_started counts a scenario iteration begun (in the interval, whatever its
    /// part of the run).
    pub fn iteration_started(&mut self) {
        let last = self.last;
        self.slot(last).iterations.started += 1;
    }

    /// iteration_ended counts a scenario iteration ended, completed (`ok`) or failed.
    pub fn iteration_ended(&mut self, ok: bool) {
        let last = self.last;
        let it = &mut self.slot(last).iterations;
        if ok {
            it.completed += 1;
        } else {
            it.failed += 1;
        }
    }

    /// tally counts an answer of name `stat` by `value` (see [`crate::scenario::tally`]): in
    /// the interval whatever its part of the run, in the totals when measured.
    pub fn tally(&mut self, intended: Instant, stat: usize, value: &str) {
        let last = self.last;
        if let Some(n) = self.slot(last).names.get_mut(stat) {
            n.tally.add(value, 1);
        }
        if self.measured(intended) {
            if let Some(n) = self.totals.per_name.get_mut(stat) {
                n.tally.add(value, 1);
            }
        }
    }

    pub(crate) fn measured(&self, intended: Instant) -> bool {
        intended >= self.warmup_end
    }

    /// response records a completed response.
    pub fn response(&mut self, r: &Response) {
        let lat = micros(r.latency);
        let class = r.failure();
        let failed = class.is_some();
        self.flight.down_at(r.at, r.ended);
        self.watch.answered(r.at);
        self.last = r.at;
        let iv = self.slot(r.at);
        iv.requests += 1;
        iv.bytes_in += r.bytes_in;
        iv.errors += u64::from(failed);
        if let Some(c) = class {
            iv.errors_by_class.add(c);
        }
        iv.latency.saturating_record(lat);
        iv.statuses.record(r.status, lat);
        if let Some(n) = iv.names.get_mut(r.stat) {
            n.requests += 1;
            if let Some(c) = class {
                n.fail(c);
            }
            n.latency.saturating_record(lat);
            n.statuses.record(r.status, lat);
        }
        if !self.measured(r.intended) {
            return;
        }
        let t = &mut self.totals;
        t.requests += 1;
        t.bytes_in += r.bytes_in;
        t.clamped += u64::from(record(&mut t.latency, lat));
        if let Some(u) = t.uncorrected.as_mut() {
            u.saturating_record(micros(r.service));
        }
        if let Some(slot) = t.status.get_mut(usize::from(r.status)) {
            *slot += 1;
        }
        if let Some(c) = class {
            t.errors.add(c);
        }
        if let Some(n) = t.per_name.get_mut(r.stat) {
            n.requests += 1;
            n.errors += u64::from(failed);
            n.latency.saturating_record(lat);
        }
    }

    /// lag records the generator's own lag of an answered request meant to start at
    /// `intended` (see [`Totals::lag`]); `stamped`: its send time is the kernel's.
    pub fn lag(&mut self, intended: Instant, lag: Duration, stamped: bool) {
        if self.measured(intended) {
            self.totals.lag.saturating_record(micros(lag));
            self.totals.unstamped += u64::from(!stamped);
        }
    }

    /// host_answered books a response from origin `host` (a scenario's) in its figures:
    /// `failed` when its status is an error the flow did not expect.
    pub fn host_answered(
        &mut self,
        host: usize,
        intended: Instant,
        latency: Duration,
        failed: bool,
    ) {
        if self.measured(intended) {
            if let Some(h) = self.totals.per_host.get_mut(host) {
                h.answered(latency, failed);
            }
        }
    }

    /// host_failed books a failed request to origin `host` (a scenario's: no response, or a
    /// failed check) in its figures.
    pub fn host_failed(&mut self, host: usize, intended: Instant) {
        if self.measured(intended) {
            if let Some(h) = self.totals.per_host.get_mut(host) {
                h.errors += 1;
            }
        }
    }

    /// check_failed records that an answered scenario request of name `stat` failed a check
    /// or an extraction; its response is already counted, so this adds only the error (the
    /// caller adds the reason to `totals.flow`).
    pub fn check_failed(&mut self, intended: Instant, stat: usize) {
        let last = self.last;
        let iv = self.slot(last);
        iv.errors += 1;
        iv.errors_by_class.add(ErrorClass::Check);
        if let Some(n) = iv.names.get_mut(stat) {
            n.fail(ErrorClass::Check);
        }
        if !self.measured(intended) {
            return;
        }
        self.totals.errors.add(ErrorClass::Check);
        if let Some(n) = self.totals.per_name.get_mut(stat) {
            n.errors += 1;
        }
    }

    /// error records a request (`sent`) that failed without a response, seen at `at`.
    pub fn error(&mut self, sent: &Sent, class: ErrorClass, at: Instant) {
        let (intended, stat) = (sent.intended, sent.stat);
        self.flight.down(at);
        self.watch.failed(sent.sent_at, class);
        self.last = at;
        let iv = self.slot(at);
        iv.errors += 1;
        iv.errors_by_class.add(class);
        if let Some(n) = iv.names.get_mut(stat) {
            n.fail(class);
        }
        if !self.measured(intended) {
            return;
        }
        self.totals.errors.add(class);
        if let Some(n) = self.totals.per_name.get_mut(stat) {
            n.errors += 1;
        }
    }

    /// send records a request going out at `now`, meant to start at `intended`; `late` when
    /// it missed its slot (open model), `at_cap` when it waited with the pool at its cap.
    pub fn send(
        &mut self,
        now: Instant,
        intended: Instant,
        bytes_out: u64,
        late: bool,
        at_cap: bool,
    ) {
        // The closed model sends when it means to: no lag, and no subtraction to find that.
        let lag_us = if now > intended {
            u64::try_from(now.duration_since(intended).as_micros()).unwrap_or(u64::MAX)
        } else {
            0
        };
        // In flight from where its latency starts: the intended send in the open model (a
        // hit the generator sent late waited in it), the actual send in the closed one.
        let from = if self.open { intended.min(now) } else { now };
        self.flight.up_from(now, from);
        let iv = self.slot(now);
        iv.sends += 1;
        iv.max_send_lag_us = iv.max_send_lag_us.max(lag_us);
        if !self.measured(intended) {
            return;
        }
        let in_window = self.send_end.is_none_or(|e| now < e);
        let t = &mut self.totals;
        t.started += 1;
        t.sends += u64::from(in_window);
        if let (false, Some(end)) = (in_window, self.send_end) {
            // A scenario's iterations under way at the end go on sending: the report counts
            // them and covers the time they took (`RunFacts::measured_s`).
            t.after_end += 1;
            let past = u64::try_from(now.duration_since(end).as_micros()).unwrap_or(u64::MAX);
            t.after_end_us = t.after_end_us.max(past);
        }
        t.bytes_out += bytes_out;
        t.late_sends += u64::from(late);
        t.late_at_cap += u64::from(late && at_cap);
        t.max_send_lag_us = t.max_send_lag_us.max(lag_us);
    }

    /// wrote adds `bytes` that a request meant to start at `intended` wrote after its send
    /// counted it (`Wire::wrote`: HTTP/2's frames) to the run's bytes out.
    pub fn wrote(&mut self, intended: Instant, bytes: u64) {
        if bytes > 0 && self.measured(intended) {
            self.totals.bytes_out += bytes;
        }
    }

    /// retried records `n` resends of a request meant to start at `intended`.
    pub fn retried(&mut self, intended: Instant, n: u32) {
        if self.measured(intended) {
            self.totals.retries += u64::from(n);
        }
    }

    /// unfinished records a request still out at `cutoff`: its latency so far goes into the
    /// histograms, a lower bound of the true one.
    pub fn unfinished(&mut self, cutoff: Instant, f: &Sent) {
        // Cut off: no longer in flight, whatever its part of the run.
        self.flight.down(cutoff);
        if !self.measured(f.intended) {
            return;
        }
        let lat = micros(cutoff.saturating_duration_since(f.from));
        let t = &mut self.totals;
        t.unfinished += 1;
        t.clamped += u64::from(record(&mut t.latency, lat));
        if let Some(u) = t.uncorrected.as_mut() {
            u.saturating_record(micros(cutoff.saturating_duration_since(f.sent_at)));
        }
        if let Some(n) = t.per_name.get_mut(f.stat) {
            n.latency.saturating_record(lat);
        }
    }

    /// unsent records `n` open-model hits due at `due` (or later, for a batch: the batch's
    /// latest due time, so the age stays a lower bound) that never went out, at their age at
    /// `cutoff`. They have no service time: only the corrected histogram holds them.
    pub fn unsent(&mut self, cutoff: Instant, due: Instant, n: u64, stat: Option<usize>) {
        if n == 0 || !self.measured(due) {
            return;
        }
        let lat = micros(cutoff.saturating_duration_since(due));
        let t = &mut self.totals;
        t.unsent += n;
        let _ = t.latency.record_n(lat.min(t.latency.high()), n);
        if lat > t.latency.high() {
            t.clamped += n;
        }
        if let Some(h) = stat.and_then(|i| t.per_name.get_mut(i)) {
            let _ = h.latency.record_n(lat.min(h.latency.high()), n);
        }
    }

    /// connections records `connects` new TCP connections and whether the lane's
    /// connection was open before and after (to track how many are open at once).
    pub fn connections(&mut self, connects: u32, was_open: bool, is_open: bool) {
        self.totals.connects += u64::from(connects);
        if is_open && !was_open {
            self.open_connections += 1;
            self.totals.peak_connections = self.totals.peak_connections.max(self.open_connections);
        } else if was_open && !is_open {
            self.open_connections = self.open_connections.saturating_sub(1);
        }
    }

    /// take_interval returns the interval that ends at `at` and starts the next one.
    pub fn take_interval(&mut self, at: Instant) -> IntervalData {
        self.interval.active_connections = self.open_connections;
        self.interval.in_flight = self.flight.count;
        self.interval.in_flight_mean = self.flight.mean(at);
        let iv = &self.interval;
        self.interval.watch = ThreadWatch {
            active: iv.sends + iv.requests + iv.errors > 0,
            ..self.watch.take()
        };
        let out = self.interval.clone();
        self.interval.clear();
        // What came in past the boundary starts the next interval (nothing, without one).
        std::mem::swap(&mut self.interval, &mut self.next);
        out
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
