//! Latency histograms: the one precision and range every histogram of a run has, how a
//! latency is recorded into one (clamped, never failing) and how one is summarised and
//! encoded for the report (HdrHistogram's V2 format, mergeable in any language).

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

/// SIGFIG is the HdrHistogram precision: 3 significant digits (0.1% value error).
pub const SIGFIG: u8 = 3;

/// MIN_HIGHEST_US is the least upper bound of every histogram: 60 s in microseconds.
pub const MIN_HIGHEST_US: u64 = 60_000_000;

/// new_histogram makes a microsecond histogram from 1 µs to at least `highest_us`. Values
/// above are clamped to the top so a record cannot fail; the recorder counts each clamp
/// ([`crate::totals::Totals::clamped`]) so a clamped figure is never silent. Size it to what the run can
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
pub fn record(h: &mut Histogram<u64>, us: u64) -> bool {
    h.saturating_record(us);
    us > h.high()
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

/// IntervalPercentiles is the percentile table an interval's figures carry, keyed in
/// milliseconds (`p50_ms` ... `p99_9_ms`, `mean_ms`, `max_ms`): an interval's latency and each
/// of its streamed figures, flattened into them, so the keys are spelt once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct IntervalPercentiles {
    /// p50_ms: median.
    pub p50_ms: f64,
    /// p90_ms: 90th percentile.
    pub p90_ms: f64,
    /// p95_ms: 95th percentile.
    pub p95_ms: f64,
    /// p99_ms: 99th percentile.
    pub p99_ms: f64,
    /// p99_9_ms: 99.9th percentile.
    pub p99_9_ms: f64,
    /// mean_ms: mean; weighted by the values' count it averages over several intervals
    /// exactly, as no percentile does (merge their histograms for those).
    pub mean_ms: f64,
    /// max_ms: largest.
    pub max_ms: f64,
}

impl IntervalPercentiles {
    /// from_histogram reads a microsecond histogram (all zeros when it is empty).
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return IntervalPercentiles::default();
        }
        let q = |p: f64| h.value_at_quantile(p) as f64 / 1000.0;
        IntervalPercentiles {
            p50_ms: q(0.5),
            p90_ms: q(0.9),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
            p99_9_ms: q(0.999),
            mean_ms: h.mean() / 1000.0,
            max_ms: h.max() as f64 / 1000.0,
        }
    }
}

/// table_between tells whether `json` holds the flattened [`IntervalPercentiles`] right
/// between its keys `before` and `after`, in the table's order: the tests' check that a
/// flattened table keeps the keys where they were.
#[cfg(test)]
pub(crate) fn table_between(json: &str, before: &str, after: &str) -> bool {
    let table = [
        "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p99_9_ms", "mean_ms", "max_ms",
    ];
    let keys = std::iter::once(before).chain(table).chain([after]);
    let at: Vec<Option<usize>> = keys.map(|k| json.find(&format!("\"{k}\":"))).collect();
    at.iter().all(Option::is_some) && at.windows(2).all(|w| w[0] < w[1])
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
