//! What a run saw over one reporting interval, merged over its threads: the
//! [`IntervalSnapshot`] handed to the caller as the run goes (the live view, a search's
//! steps) and kept in the report's `timeseries`.
//!
//! The JSON shape is a contract with the Python package (docs/schema/result.schema.json);
//! fields may be added, never renamed or removed.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::failure::ErrorCounts;
use crate::hdr::{encode_histogram, IntervalPercentiles};
use crate::interval::{IntervalData, IterationCounts};
use crate::statuses::StatusSnapshot;
use crate::stream_series::StreamSnapshot;

/// IntervalSnapshot is the run's state over one reporting interval, merged over threads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntervalSnapshot {
    /// t_s: end of the interval, seconds since the start.
    pub t_s: f64,
    /// warmup: the interval overlaps the warmup (excluded from the summary).
    pub warmup: bool,
    /// requests: responses received in the interval.
    pub requests: u64,
    /// errors: failed requests in the interval (all classes).
    pub errors: u64,
    /// errors_by_class: those failures by class.
    pub errors_by_class: ErrorCounts,
    /// latency: the responses' latency, flattened (`p50_ms` ... `max_ms`); its `mean_ms`
    /// weighted by `requests` averages over several intervals exactly, as no percentile does
    /// (merge `histogram`s for those).
    #[serde(flatten)]
    pub latency: IntervalPercentiles,
    /// active_connections: connections open at the end of the interval (counted when they
    /// connect, over all threads).
    pub active_connections: u64,
    /// fd_refused: connects the open-file limit (`ulimit -n`) refused since the start.
    pub fd_refused: u64,
    /// in_flight: requests sent and not yet answered at the end of the interval, over all
    /// threads (a point sample; for Little's law use `in_flight_mean`).
    pub in_flight: u64,
    /// in_flight_mean: the time-weighted mean of requests in flight over the interval, over
    /// all threads: Little's law's L, to set against the completion rate times `mean_ms` (W).
    pub in_flight_mean: f64,
    /// intended_rate: open model: the schedule's rate over the interval.
    pub intended_rate: Option<f64>,
    /// achieved_rate: requests sent per second in the interval.
    pub achieved_rate: f64,
    /// send_lag_ms: the worst lag between intended and actual send.
    pub send_lag_ms: f64,
    /// bytes_in: bytes received in the interval.
    pub bytes_in: u64,
    /// histogram: the interval's latency histogram (µs, base64 HdrHistogram V2 deflate), so a
    /// span of intervals gets its percentiles from their merged histogram, not from
    /// percentiles of percentiles.
    pub histogram: String,
    /// down: the target was in an outage at the interval's end: it answered nothing and
    /// every attempt failed since `down_since_s` (see [`crate::outage`]).
    pub down: bool,
    /// down_since_s: when the outage under way began, seconds since the start (None: up).
    pub down_since_s: Option<f64>,
    /// iterations: scenario runs: iterations begun, completed and failed in the interval
    /// (absent on the single-request path, where an iteration is a request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<IterationCounts>,
    /// names: scenario runs: per request name, its figures in the interval, so a throughput
    /// can be measured in one named request. Absent on the single-request path (one name,
    /// whose figures are the interval's own). Bounded: the names are the compiled plan's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub names: Option<BTreeMap<String, NameSnapshot>>,
    /// statuses: the interval's answers by status code, each with its latency in the
    /// exporters' buckets (absent when nothing was answered).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub statuses: BTreeMap<String, StatusSnapshot>,
    /// stream: with `--stream`, the streamed answers over the interval: first byte, gaps,
    /// and a completion's TTFT, ITL and tokens a second (see [`crate::stream_series`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamSnapshot>,
}

/// NameSnapshot is one request name's figures over one interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NameSnapshot {
    /// requests: responses received.
    pub requests: u64,
    /// errors: failed requests (all classes, failed checks included).
    pub errors: u64,
    /// errors_by_class: the same failures by class.
    pub errors_by_class: ErrorCounts,
    /// histogram: latency of its responses (µs), encoded as the interval's `histogram`.
    pub histogram: String,
    /// tally: its answers in the interval by the value at its `tally` path (absent without
    /// one; see [`crate::scenario::tally`]).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tally: BTreeMap<String, u64>,
    /// statuses: its answers by status code (see [`IntervalSnapshot::statuses`]).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub statuses: BTreeMap<String, StatusSnapshot>,
}

impl IntervalSnapshot {
    /// from_data builds a snapshot of interval `[t0, t1]` from merged thread data.
    pub fn from_data(
        d: &IntervalData,
        t0: f64,
        t1: f64,
        warmup: bool,
        intended_rate: Option<f64>,
    ) -> Self {
        let len = (t1 - t0).max(1e-9);
        let h = &d.latency;
        IntervalSnapshot {
            t_s: t1,
            warmup,
            requests: d.requests,
            errors: d.errors,
            errors_by_class: d.errors_by_class,
            latency: IntervalPercentiles::from_histogram(h),
            active_connections: d.active_connections,
            fd_refused: 0,
            in_flight: d.in_flight,
            in_flight_mean: d.in_flight_mean,
            intended_rate,
            achieved_rate: d.sends as f64 / len,
            send_lag_ms: d.max_send_lag_us as f64 / 1000.0,
            bytes_in: d.bytes_in,
            histogram: encode_histogram(h),
            down: false,
            down_since_s: None,
            iterations: None,
            names: None,
            statuses: d.statuses.snapshots(),
            stream: d.stream.as_deref().map(|s| StreamSnapshot::new(s, len)),
        }
    }

    /// with_scenario adds a scenario run's iterations and per-name figures, `names` being
    /// the plan's request names (no-op on the single-request path).
    pub fn with_scenario(mut self, d: &IntervalData, names: &[String]) -> Self {
        if d.names.is_empty() {
            return self;
        }
        self.iterations = Some(d.iterations);
        let per_name = names
            .iter()
            .zip(d.names.iter())
            .map(|(name, n)| {
                let s = NameSnapshot {
                    requests: n.requests,
                    errors: n.errors,
                    errors_by_class: n.errors_by_class,
                    histogram: encode_histogram(&n.latency),
                    tally: n.tally.counts(),
                    statuses: n.statuses.snapshots(),
                };
                (name.clone(), s)
            })
            .collect();
        self.names = Some(per_name);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_snapshot_carries_mean_tail_in_flight_and_its_histogram() {
        use base64::Engine as _;
        use hdrhistogram::serialization::Deserializer;
        use hdrhistogram::Histogram;
        let decode = |text: &str| -> Histogram<u64> {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .expect("base64");
            Deserializer::new()
                .deserialize(&mut bytes.as_slice())
                .expect("V2 deflate")
        };
        // 1..=1000 ms, one response each: mean 500.5 ms, p99.9 999 ms.
        let mut d = crate::interval::IntervalData::new(0);
        for ms in 1..=1000u64 {
            d.latency.record(ms * 1000).expect("in range");
        }
        d.requests = 1000;
        d.in_flight = 7;
        let s = IntervalSnapshot::from_data(&d, 0.0, 1.0, false, None);
        let near = |got: f64, want: f64| (got - want).abs() <= want * 0.001;
        let l = s.latency;
        assert!(near(l.mean_ms, 500.5), "mean {}", l.mean_ms);
        assert!(near(l.p99_9_ms, 999.0), "p99.9 {}", l.p99_9_ms);
        assert!(near(l.p99_ms, 990.0), "p99 {}", l.p99_ms);
        assert_eq!(s.in_flight, 7);
        let h = decode(&s.histogram);
        assert_eq!(h.len(), 1000, "the histogram holds every response");
        assert_eq!(
            h.value_at_quantile(0.999),
            d.latency.value_at_quantile(0.999)
        );
        let v = serde_json::to_value(&s).expect("serialises");
        // The percentiles stand where they always did: after `errors_by_class`, before
        // `active_connections`, in this order.
        let json = serde_json::to_string(&s).expect("serialises");
        assert!(
            crate::hdr::table_between(&json, "errors_by_class", "active_connections"),
            "{json}"
        );
        for key in ["in_flight", "in_flight_mean", "histogram"] {
            assert!(v.get(key).is_some(), "missing {key}");
        }

        // An empty interval: zeros, and a histogram that decodes empty (merges as nothing).
        let e = IntervalSnapshot::from_data(
            &crate::interval::IntervalData::new(0),
            0.0,
            1.0,
            false,
            None,
        );
        assert_eq!(
            (e.latency.mean_ms, e.latency.p99_9_ms, e.in_flight),
            (0.0, 0.0, 0)
        );
        assert!(decode(&e.histogram).is_empty());
    }
}
