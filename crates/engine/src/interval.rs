//! One interval's measurements: what a worker thread ships to the coordinator once per
//! reporting interval ([`IntervalData`]), per request name for scenario runs
//! ([`NameInterval`]), and the scenario iterations begun and ended ([`IterationCounts`]).

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::failure::{ErrorClass, ErrorCounts};
use crate::hdr::new_histogram;
use crate::outage::ThreadWatch;
use crate::scenario::tally::Tally;
use crate::statuses::Statuses;
use crate::stream::StreamTotals;

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
    /// statuses: its answers by status code, with their latency.
    pub statuses: Statuses,
}

impl NameInterval {
    pub(crate) fn new(highest_us: u64) -> Self {
        NameInterval {
            requests: 0,
            errors: 0,
            errors_by_class: ErrorCounts::default(),
            latency: new_histogram(highest_us),
            tally: Tally::default(),
            statuses: Statuses::default(),
        }
    }

    pub(crate) fn fail(&mut self, class: ErrorClass) {
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
    /// statuses: the interval's answers by status code, with their latency.
    pub statuses: Statuses,
    /// names: scenario runs: per request name (indexed like `Plan::names`), its figures in
    /// the interval; empty on the single-request path (its one name's figures are the
    /// interval's own). Bounded: the names are fixed by the compiled plan.
    pub names: Vec<NameInterval>,
    /// stream: with `--stream`, the streamed answers' figures over the interval (first
    /// bytes, gaps, tokens; the measured part of the run only, as the run's), boxed: a run
    /// without `--stream` carries none.
    pub stream: Option<Box<StreamTotals>>,
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
            statuses: Statuses::default(),
            names: Vec::new(),
            stream: None,
        }
    }

    /// recorded says whether anything was counted into this interval: a send, an answer, a
    /// failure, an iteration begun or ended (a name's figures and its tally go with these).
    pub fn recorded(&self) -> bool {
        self.sends + self.requests + self.errors > 0
            || self.iterations != IterationCounts::default()
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
        self.statuses.merge(&o.statuses);
        match (self.stream.as_mut(), o.stream.as_ref()) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.stream = Some(b.clone()),
            _ => {}
        }
        if self.names.is_empty() {
            self.names.clone_from(&o.names);
        } else {
            for (a, b) in self.names.iter_mut().zip(o.names.iter()) {
                a.requests += b.requests;
                a.errors += b.errors;
                a.errors_by_class.merge(&b.errors_by_class);
                let _ = a.latency.add(&b.latency);
                a.tally.merge(&b.tally);
                a.statuses.merge(&b.statuses);
            }
        }
    }

    pub(crate) fn clear(&mut self) {
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
        self.statuses.clear();
        if let Some(s) = self.stream.as_mut() {
            s.reset();
        }
        for n in &mut self.names {
            n.requests = 0;
            n.errors = 0;
            n.errors_by_class = ErrorCounts::default();
            n.latency.reset();
            n.tally.reset();
            n.statuses.clear();
        }
    }
}
