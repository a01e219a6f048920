//! Answers by status code, each code with its latency in a few fixed buckets: what
//! OpenTelemetry's `http.client.request.duration` is split by (`http.response.status_code`)
//! and what Prometheus' `le` buckets count.
//!
//! Fixed buckets rather than an HdrHistogram per code: a code's figures are 20 counters,
//! where a histogram of the run's range is about 130 KB, kept per thread, per request name
//! and per code and merged each interval. The buckets are exact at their bounds, which are
//! the exporters' own ([`DURATION_BOUNDS_US`], read by the Python side through the binding),
//! so nothing is lost: an exporter never asks for a finer split.

/// DURATION_BOUNDS_US are the latency buckets' upper bounds (µs, inclusive: a latency equal
/// to a bound counts in its bucket, as Prometheus' `le`), from 0.5 ms to 1 min.
pub const DURATION_BOUNDS_US: [u64; 16] = [
    500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000,
    2_500_000, 5_000_000, 10_000_000, 30_000_000, 60_000_000,
];

use std::collections::BTreeMap;

use serde::Serialize;

/// BUCKETS: one bucket per bound and one past the last.
const BUCKETS: usize = DURATION_BOUNDS_US.len() + 1;

/// StatusLatency is one status code's answers: how many, their latency per bucket (not
/// cumulative; the last bucket is past every bound), sum, least and greatest (µs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusLatency {
    /// code: the HTTP status code.
    pub code: u16,
    /// count: answers with this code.
    pub count: u64,
    /// buckets: answers per latency bucket (see [`DURATION_BOUNDS_US`]).
    pub buckets: [u64; BUCKETS],
    /// sum_us: their latencies added up.
    pub sum_us: u64,
    /// min_us: the least latency (0 when count is 0).
    pub min_us: u64,
    /// max_us: the greatest latency.
    pub max_us: u64,
}

impl StatusLatency {
    fn new(code: u16) -> Self {
        StatusLatency {
            code,
            count: 0,
            buckets: [0; BUCKETS],
            sum_us: 0,
            min_us: 0,
            max_us: 0,
        }
    }

    fn record(&mut self, us: u64) {
        self.min_us = if self.count == 0 {
            us
        } else {
            self.min_us.min(us)
        };
        self.max_us = self.max_us.max(us);
        self.count += 1;
        self.sum_us = self.sum_us.saturating_add(us);
        self.buckets[DURATION_BOUNDS_US.partition_point(|&b| b < us)] += 1;
    }

    fn merge(&mut self, o: &StatusLatency) {
        if o.count == 0 {
            return;
        }
        self.min_us = if self.count == 0 {
            o.min_us
        } else {
            self.min_us.min(o.min_us)
        };
        self.max_us = self.max_us.max(o.max_us);
        self.count += o.count;
        self.sum_us = self.sum_us.saturating_add(o.sum_us);
        for (a, b) in self.buckets.iter_mut().zip(o.buckets.iter()) {
            *a += b;
        }
    }

    /// cumulative is the answers at or under each bound, in [`DURATION_BOUNDS_US`]'s order.
    pub fn cumulative(&self) -> Vec<u64> {
        let mut run = 0;
        self.buckets[..DURATION_BOUNDS_US.len()]
            .iter()
            .map(|n| {
                run += n;
                run
            })
            .collect()
    }
}

/// Statuses counts answers by status code. A code's entry is made the first time it is seen
/// and kept when the interval is cleared, so recording allocates only on a code's first
/// answer in the thread, not per answer nor per interval.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Statuses {
    codes: Vec<StatusLatency>,
}

impl Statuses {
    /// record counts an answer with `code` that took `us`.
    pub fn record(&mut self, code: u16, us: u64) {
        // A handful of codes at most: a linear search beats any map.
        match self.codes.iter_mut().find(|c| c.code == code) {
            Some(c) => c.record(us),
            None => {
                let mut c = StatusLatency::new(code);
                c.record(us);
                self.codes.push(c);
            }
        }
    }

    /// merge adds another thread's (or interval's) counts.
    pub fn merge(&mut self, o: &Statuses) {
        for b in o.codes.iter().filter(|b| b.count > 0) {
            match self.codes.iter_mut().find(|c| c.code == b.code) {
                Some(c) => c.merge(b),
                None => self.codes.push(b.clone()),
            }
        }
    }

    /// clear zeroes the counts, keeping each code's entry.
    pub fn clear(&mut self) {
        for c in &mut self.codes {
            *c = StatusLatency::new(c.code);
        }
    }

    /// seen is the codes answered (count > 0), in the order first seen.
    pub fn seen(&self) -> impl Iterator<Item = &StatusLatency> {
        self.codes.iter().filter(|c| c.count > 0)
    }
}

/// StatusSnapshot is one status code's answers over one interval: how many, how many took
/// at most each of [`DURATION_BOUNDS_US`] (cumulative, as Prometheus'
/// `le`), their latencies' sum, least and greatest, in seconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatusSnapshot {
    /// count: answers with this code.
    pub count: u64,
    /// buckets: answers at or under each bound, in the bounds' order.
    pub buckets: Vec<u64>,
    /// sum_s: their latencies added up, seconds.
    pub sum_s: f64,
    /// min_s: the least, seconds.
    pub min_s: f64,
    /// max_s: the greatest, seconds.
    pub max_s: f64,
}

impl Statuses {
    /// snapshots is the codes answered, keyed by code, as the interval snapshots carry them.
    pub fn snapshots(&self) -> BTreeMap<String, StatusSnapshot> {
        self.seen()
            .map(|c| {
                let snap = StatusSnapshot {
                    count: c.count,
                    buckets: c.cumulative(),
                    sum_s: c.sum_us as f64 / 1e6,
                    min_s: c.min_us as f64 / 1e6,
                    max_s: c.max_us as f64 / 1e6,
                };
                (c.code.to_string(), snap)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latency_on_a_bound_counts_under_it_and_past_the_last_in_the_overflow() {
        let mut s = Statuses::default();
        for us in [1, 500, 501, 1_000, 60_000_000, 60_000_001] {
            s.record(200, us);
        }
        let c = s.seen().next().unwrap();
        assert_eq!(c.count, 6);
        assert_eq!(c.buckets[0], 2, "1 and 500 are <= 0.5 ms");
        assert_eq!(c.buckets[1], 2, "501 and 1000 are <= 1 ms");
        assert_eq!(c.buckets[15], 1, "60 s is <= 60 s");
        assert_eq!(c.buckets[16], 1, "past 60 s");
        assert_eq!(c.cumulative()[1], 4);
        assert_eq!(c.cumulative()[15], 5);
        assert_eq!((c.min_us, c.max_us), (1, 60_000_001));
        assert_eq!(c.sum_us, 1 + 500 + 501 + 1_000 + 60_000_000 + 60_000_001);
    }

    #[test]
    fn codes_are_kept_apart_merged_and_cleared_without_losing_their_entry() {
        let (mut a, mut b) = (Statuses::default(), Statuses::default());
        a.record(200, 700);
        a.record(503, 90);
        b.record(503, 3_000);
        b.record(429, 10);
        a.merge(&b);
        let got: Vec<(u16, u64, u64, u64)> = a
            .seen()
            .map(|c| (c.code, c.count, c.min_us, c.max_us))
            .collect();
        assert_eq!(
            got,
            [(200, 1, 700, 700), (503, 2, 90, 3_000), (429, 1, 10, 10)]
        );
        a.clear();
        assert_eq!(a.seen().count(), 0);
        assert_eq!(a.codes.len(), 3, "entries survive a clear");
        a.record(503, 5);
        let c = a.seen().next().unwrap();
        assert_eq!(
            (c.code, c.count, c.min_us, c.max_us, c.sum_us),
            (503, 1, 5, 5, 5)
        );
    }

    #[test]
    fn merging_an_empty_code_changes_nothing() {
        let mut a = Statuses::default();
        a.record(200, 10);
        let mut b = Statuses::default();
        b.record(404, 10);
        b.clear();
        a.merge(&b);
        assert_eq!(a.codes.len(), 1);
    }
}
