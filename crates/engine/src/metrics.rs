//! What the workers measure: latency histograms and counters, per thread, merged per interval.
//!
//! Each worker thread owns one [`Recorder`] (no locks, no atomics on the request path). Once per
//! reporting interval the thread ships its [`IntervalData`] to the coordinator and starts a new
//! one; at the end it ships its [`Totals`]. Memory is bounded: histograms have a fixed range and
//! precision, counters are fixed-size arrays, nothing grows with the number of requests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::failure::{ErrorClass, ErrorCounts};
use crate::flight::Sent;
use crate::outage::{ThreadWatch, Watch};
use crate::scenario::stats::FlowTotals;
use crate::scenario::tally::Tally;

/// SIGFIG is the HdrHistogram precision: 3 significant digits (0.1% value error).
pub const SIGFIG: u8 = 3;

/// MIN_HIGHEST_US is the least upper bound of every histogram: 60 s in microseconds.
pub const MIN_HIGHEST_US: u64 = 60_000_000;

/// new_histogram makes a microsecond histogram from 1 µs to at least `highest_us`. Values
/// above are clamped to the top so a record cannot fail; the recorder counts each clamp
/// ([`Totals::clamped`]) so a clamped figure is never silent. Size it to what the run can
/// produce (see `job::latency_ceiling`).
pub fn new_histogram(highest_us: u64) -> Histogram<u64> {
    let high = highest_us.max(MIN_HIGHEST_US);
    // Only invalid bounds (high < 2, sigfig > 5) make this fail, and ours are fixed and valid:
    // high >= 60 s, SIGFIG = 3 (the unit tests build one).
    Histogram::new_with_bounds(1, high, SIGFIG).expect("histogram bounds are constants and valid")
}

/// micros converts a duration to whole microseconds (at least 1, the histogram's floor).
pub fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

/// record puts `us` into `h`, clamped to its top; returns whether it was clamped.
fn record(h: &mut Histogram<u64>, us: u64) -> bool {
    h.saturating_record(us);
    us > h.high()
}

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
}

/// NameInterval is one request name's figures over one interval (scenario runs).
#[derive(Debug, Clone)]
pub struct NameInterval {
    /// requests: responses received.
    pub requests: u64,
    /// errors: failed requests (all classes, failed checks included).
    pub errors: u64,
    /// errors_by_class: the same failures by class.
    pub errors_by_class: ErrorCounts,
    /// latency: corrected latency of its responses, µs.
    pub latency: Histogram<u64>,
    /// tally: its answers counted by the value at its `tally` path (empty without one).
    pub tally: Tally,
}

impl NameInterval {
    fn new(highest_us: u64) -> Self {
        NameInterval {
            requests: 0,
            errors: 0,
            errors_by_class: ErrorCounts::default(),
            latency: new_histogram(highest_us),
            tally: Tally::default(),
        }
    }

    fn fail(&mut self, class: ErrorClass) {
        self.errors += 1;
        self.errors_by_class.add(class);
    }
}

/// IterationCounts counts scenario iterations over one interval: begun, and ended
/// completed (every step, no failure) or failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct IterationCounts {
    /// started: iterations begun in the interval.
    pub started: u64,
    /// completed: iterations that ended in the interval with every step done and no failure.
    pub completed: u64,
    /// failed: iterations a failure ended in the interval.
    pub failed: u64,
}

/// IntervalData is one thread's measurements over one reporting interval.
#[derive(Debug, Clone)]
pub struct IntervalData {
    /// requests: responses received.
    pub requests: u64,
    /// errors: failed requests (all classes).
    pub errors: u64,
    /// errors_by_class: the same failures by class, for a live view that shows them as they
    /// appear.
    pub errors_by_class: ErrorCounts,
    /// bytes_in: bytes read.
    pub bytes_in: u64,
    /// sends: requests sent (hits started).
    pub sends: u64,
    /// max_send_lag_us: the worst lag between a hit's intended and actual send.
    pub max_send_lag_us: u64,
    /// active_connections: open connections when the interval closed.
    pub active_connections: u64,
    /// in_flight: requests sent and not yet answered (or failed) when the interval closed.
    pub in_flight: u64,
    /// in_flight_mean: the time-weighted mean of requests in flight over the interval (the
    /// count integrated over time, divided by the interval's length); with the interval's
    /// completion rate and mean latency it checks Little's law (L = λW), which the end
    /// sample `in_flight` cannot: a point sample is not a mean. Merged over threads, the
    /// means add (each thread's mean is over its own, nearly equal, interval).
    pub in_flight_mean: f64,
    /// latency: corrected latency of the responses in this interval, µs.
    pub latency: Histogram<u64>,
    /// watch: this thread's outage evidence over the interval (the coordinator keeps each
    /// thread's apart; [`IntervalData::merge`] leaves it alone).
    pub watch: ThreadWatch,
    /// iterations: scenario runs: iterations begun and ended in the interval.
    pub iterations: IterationCounts,
    /// names: scenario runs: per request name (indexed like `Plan::names`), its figures in
    /// the interval; empty on the single-request path (its one name's figures are the
    /// interval's own). Bounded: the names are fixed by the compiled plan.
    pub names: Vec<NameInterval>,
}

impl IntervalData {
    /// new makes an empty interval whose histogram reaches `highest_us`.
    pub fn new(highest_us: u64) -> Self {
        IntervalData {
            requests: 0,
            errors: 0,
            errors_by_class: ErrorCounts::default(),
            bytes_in: 0,
            sends: 0,
            max_send_lag_us: 0,
            active_connections: 0,
            in_flight: 0,
            in_flight_mean: 0.0,
            latency: new_histogram(highest_us),
            watch: ThreadWatch::default(),
            iterations: IterationCounts::default(),
            names: Vec::new(),
        }
    }

    /// merge folds another thread's data for the same interval into this one.
    pub fn merge(&mut self, o: &IntervalData) {
        self.requests += o.requests;
        self.errors += o.errors;
        self.bytes_in += o.bytes_in;
        self.sends += o.sends;
        self.max_send_lag_us = self.max_send_lag_us.max(o.max_send_lag_us);
        self.active_connections += o.active_connections;
        self.in_flight += o.in_flight;
        self.in_flight_mean += o.in_flight_mean;
        self.errors_by_class.merge(&o.errors_by_class);
        // Same bounds on both sides, so adding cannot fail; ignore rather than panic.
        let _ = self.latency.add(&o.latency);
        self.iterations.started += o.iterations.started;
        self.iterations.completed += o.iterations.completed;
        self.iterations.failed += o.iterations.failed;
        if self.names.is_empty() {
            self.names.clone_from(&o.names);
        } else {
            for (a, b) in self.names.iter_mut().zip(o.names.iter()) {
                a.requests += b.requests;
                a.errors += b.errors;
                a.errors_by_class.merge(&b.errors_by_class);
                let _ = a.latency.add(&b.latency);
                a.tally.merge(&b.tally);
            }
        }
    }

    fn clear(&mut self) {
        self.requests = 0;
        self.errors = 0;
        self.errors_by_class = ErrorCounts::default();
        self.bytes_in = 0;
        self.sends = 0;
        self.max_send_lag_us = 0;
        self.active_connections = 0;
        self.in_flight = 0;
        self.in_flight_mean = 0.0;
        self.latency.reset();
        self.iterations = IterationCounts::default();
        for n in &mut self.names {
            n.requests = 0;
            n.errors = 0;
            n.errors_by_class = ErrorCounts::default();
            n.latency.reset();
            n.tally.reset();
        }
    }
}

/// NameStats is the summary of one request name.
#[derive(Debug, Clone)]
pub struct NameStats {
    /// requests: responses received.
    pub requests: u64,
    /// errors: failed requests.
    pub errors: u64,
    /// latency: corrected latency, µs.
    pub latency: Histogram<u64>,
    /// tally: its answers counted by the value at its `tally` path (empty without one).
    pub tally: Tally,
}

/// Totals is one thread's (or, merged, the run's) post-warmup summary.
///
/// A request belongs to the measured part of the run when it was *meant* to start after the
/// warm-up (the open model's due time, the closed model's send), whatever its outcome, so the
/// books balance: `requests + transport failures + unfinished + unsent = started + unsent`,
/// each started request ending as exactly one of the first three.
#[derive(Debug, Clone)]
pub struct Totals {
    /// requests: responses received (HTTP error statuses included).
    pub requests: u64,
    /// started: requests that went out (each ends answered, failed or unfinished).
    pub started: u64,
    /// unfinished: requests still out when the run cut them off (grace over, or stopped);
    /// in the latency histograms at their age at the cut-off, a lower bound.
    pub unfinished: u64,
    /// unsent: open-model hits due before the end that never went out (pool full, generator
    /// behind); in the latency histogram at their age at the end, a lower bound.
    pub unsent: u64,
    /// retries: requests sent again on a fresh connection after a reused one failed.
    pub retries: u64,
    /// clamped: latencies above the histograms' range, recorded at its top.
    pub clamped: u64,
    /// late_at_cap: open-model hits sent late while the thread's pool was at its cap (the
    /// hit waited for a busy connection, and no new one could be opened).
    pub late_at_cap: u64,
    /// cap_reached: hits fell due while every connection the cap allows was busy.
    pub cap_reached: bool,
    /// coarse_timer: the open model's precise timer (timerfd) could not be made and sends
    /// were timed by the runtime's millisecond timer.
    pub coarse_timer: bool,
    /// sends: hits sent within the send window.
    pub sends: u64,
    /// bytes_in: bytes read.
    pub bytes_in: u64,
    /// bytes_out: bytes written.
    pub bytes_out: u64,
    /// errors: failures by class.
    pub errors: ErrorCounts,
    /// status: response counts by status code (index = code, 0..1000).
    pub status: Box<[u64]>,
    /// connects: TCP connects made over the whole run, warmup included.
    pub connects: u64,
    /// late_sends: open-model hits sent later than their intended time.
    pub late_sends: u64,
    /// max_send_lag_us: the worst send lag.
    pub max_send_lag_us: u64,
    /// peak_connections: the most connections open at once (one thread's; merged totals
    /// hold the sum of thread peaks until the run puts the [`ConnectionGauge`] peak here).
    pub peak_connections: u64,
    /// latency: corrected latency (from the intended send in the open model), µs.
    pub latency: Histogram<u64>,
    /// uncorrected: service time from the actual send (open model only), µs.
    pub uncorrected: Option<Histogram<u64>>,
    /// per_name: statistics per request name, indexed like `Plan::names`.
    pub per_name: Vec<NameStats>,
    /// flow: scenario statistics (failure reasons, iterations, groups); empty otherwise.
    pub flow: FlowTotals,
}

impl Totals {
    /// new makes empty totals for `names` request names.
    pub fn new(highest_us: u64, names: usize, open: bool) -> Self {
        Totals {
            requests: 0,
            started: 0,
            unfinished: 0,
            unsent: 0,
            retries: 0,
            clamped: 0,
            late_at_cap: 0,
            cap_reached: false,
            coarse_timer: false,
            sends: 0,
            bytes_in: 0,
            bytes_out: 0,
            errors: ErrorCounts::default(),
            status: vec![0; 1000].into_boxed_slice(),
            connects: 0,
            late_sends: 0,
            max_send_lag_us: 0,
            peak_connections: 0,
            latency: new_histogram(highest_us),
            uncorrected: open.then(|| new_histogram(highest_us)),
            per_name: (0..names)
                .map(|_| NameStats {
                    requests: 0,
                    errors: 0,
                    latency: new_histogram(highest_us),
                    tally: Tally::default(),
                })
                .collect(),
            flow: FlowTotals::default(),
        }
    }

    /// merge folds another thread's totals into these.
    pub fn merge(&mut self, o: &Totals) {
        self.requests += o.requests;
        self.started += o.started;
        self.unfinished += o.unfinished;
        self.unsent += o.unsent;
        self.retries += o.retries;
        self.clamped += o.clamped;
        self.late_at_cap += o.late_at_cap;
        self.cap_reached |= o.cap_reached;
        self.coarse_timer |= o.coarse_timer;
        self.sends += o.sends;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.errors.merge(&o.errors);
        for (a, b) in self.status.iter_mut().zip(o.status.iter()) {
            *a += b;
        }
        self.connects += o.connects;
        self.late_sends += o.late_sends;
        self.max_send_lag_us = self.max_send_lag_us.max(o.max_send_lag_us);
        // A sum of per-thread peaks, an upper bound; the run reports the gauge's peak.
        self.peak_connections += o.peak_connections;
        let _ = self.latency.add(&o.latency);
        if let (Some(a), Some(b)) = (self.uncorrected.as_mut(), o.uncorrected.as_ref()) {
            let _ = a.add(b);
        }
        for (a, b) in self.per_name.iter_mut().zip(o.per_name.iter()) {
            a.requests += b.requests;
            a.errors += b.errors;
            let _ = a.latency.add(&b.latency);
            a.tally.merge(&b.tally);
        }
        self.flow.merge(&o.flow);
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
    /// expected: a 4xx/5xx the scenario asked for (`status=404`), not an error.
    pub expected: bool,
    /// at: when the thread saw it end.
    pub at: Instant,
    /// ended: when its last bytes arrived, where its latency ends (`at`, or earlier: the
    /// kernel's receive stamp when the thread napped through the arrival); its request
    /// stops counting as in flight then, so that the in-flight mean and λW (Little's law)
    /// measure one and the same span.
    pub ended: Instant,
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
        let missed = self.last.saturating_duration_since(from.max(self.since));
        self.area_ns += missed.as_nanos();
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
        let over = self.last.saturating_duration_since(ended.max(self.since));
        self.area_ns = self.area_ns.saturating_sub(over.as_nanos());
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
    }

    /// iteration_started counts a scenario iteration begun (in the interval, whatever its
    /// part of the run).
    pub fn iteration_started(&mut self) {
        self.interval.iterations.started += 1;
    }

    /// iteration_ended counts a scenario iteration ended, completed (`ok`) or failed.
    pub fn iteration_ended(&mut self, ok: bool) {
        let it = &mut self.interval.iterations;
        if ok {
            it.completed += 1;
        } else {
            it.failed += 1;
        }
    }

    /// tally counts an answer of name `stat` by `value` (see [`crate::scenario::tally`]): in
    /// the interval whatever its part of the run, in the totals when measured.
    pub fn tally(&mut self, intended: Instant, stat: usize, value: &str) {
        if let Some(n) = self.interval.names.get_mut(stat) {
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
        let failed = r.status >= 400 && !r.expected;
        self.flight.down_at(r.at, r.ended);
        self.watch.answered(r.at);
        let iv = &mut self.interval;
        iv.requests += 1;
        iv.bytes_in += r.bytes_in;
        iv.errors += u64::from(failed);
        if failed {
            iv.errors_by_class.add(ErrorClass::Status);
        }
        iv.latency.saturating_record(lat);
        if let Some(n) = iv.names.get_mut(r.stat) {
            n.requests += 1;
            if failed {
                n.fail(ErrorClass::Status);
            }
            n.latency.saturating_record(lat);
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
        if failed {
            t.errors.add(ErrorClass::Status);
        }
        if let Some(n) = t.per_name.get_mut(r.stat) {
            n.requests += 1;
            n.errors += u64::from(failed);
            n.latency.saturating_record(lat);
        }
    }

    /// check_failed records that an answered scenario request of name `stat` failed a check
    /// or an extraction; its response is already counted, so this adds only the error (the
    /// caller adds the reason to `totals.flow`).
    pub fn check_failed(&mut self, intended: Instant, stat: usize) {
        self.interval.errors += 1;
        self.interval.errors_by_class.add(ErrorClass::Check);
        if let Some(n) = self.interval.names.get_mut(stat) {
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
        self.interval.errors += 1;
        self.interval.errors_by_class.add(class);
        if let Some(n) = self.interval.names.get_mut(stat) {
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
        let lag = now.saturating_duration_since(intended);
        let lag_us = u64::try_from(lag.as_micros()).unwrap_or(u64::MAX);
        // In flight from where its latency starts: the intended send in the open model (a
        // hit the generator sent late waited in it), the actual send in the closed one.
        let from = if self.open { intended.min(now) } else { now };
        self.flight.up_from(now, from);
        self.interval.sends += 1;
        self.interval.max_send_lag_us = self.interval.max_send_lag_us.max(lag_us);
        if !self.measured(intended) {
            return;
        }
        let in_window = self.send_end.is_none_or(|e| now < e);
        let t = &mut self.totals;
        t.started += 1;
        t.sends += u64::from(in_window);
        t.bytes_out += bytes_out;
        t.late_sends += u64::from(late);
        t.late_at_cap += u64::from(late && at_cap);
        t.max_send_lag_us = t.max_send_lag_us.max(lag_us);
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
        out
    }
}

/// LatencySummary is the latency distribution in milliseconds, as the report prints it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    /// min: fastest.
    pub min: f64,
    /// mean: average.
    pub mean: f64,
    /// stdev: standard deviation.
    pub stdev: f64,
    /// p50: median.
    pub p50: f64,
    /// p75: 75th percentile.
    pub p75: f64,
    /// p90: 90th percentile.
    pub p90: f64,
    /// p95: 95th percentile (Locust's and JMeter's tables show it).
    pub p95: f64,
    /// p99: 99th percentile.
    pub p99: f64,
    /// p99_9: 99.9th percentile.
    pub p99_9: f64,
    /// p99_99: 99.99th percentile.
    pub p99_99: f64,
    /// max: slowest.
    pub max: f64,
}

impl LatencySummary {
    /// from_histogram summarises a microsecond histogram (all zeros when it is empty).
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencySummary::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        let q = |p: f64| ms(h.value_at_quantile(p));
        LatencySummary {
            min: ms(h.min()),
            mean: h.mean() / 1000.0,
            stdev: h.stdev() / 1000.0,
            p50: q(0.50),
            p75: q(0.75),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            p99_9: q(0.999),
            p99_99: q(0.9999),
            max: ms(h.max()),
        }
    }
}

/// encode_histogram serialises a histogram as base64 of the V2 deflate format, which
/// HdrHistogram libraries in every language can decode and merge.
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    use base64::Engine as _;
    use hdrhistogram::serialization::Serializer as _;
    let mut buf = Vec::new();
    let mut ser = hdrhistogram::serialization::V2DeflateSerializer::new();
    match ser.serialize(h, &mut buf) {
        Ok(_) => base64::engine::general_purpose::STANDARD.encode(&buf),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
