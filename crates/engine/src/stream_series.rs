//! The streamed answers' figures over one reporting interval (`--stream`): what each
//! [`crate::snapshot::IntervalSnapshot`] carries as `stream`, so the time series, the live view
//! and a capacity search's steps read first bytes, gaps between pieces, time to first token and
//! inter-token latency interval by interval, and a step's percentiles come from its intervals'
//! merged histograms (as its latency's do), not from percentiles of percentiles.

use serde::Serialize;

use crate::completion::CompletionTotals;
use crate::hdr::encode_histogram;
use crate::stream::StreamTotals;
use hdrhistogram::Histogram;

/// FigureSnapshot is one timed figure over an interval (first byte, gap, TTFT, ITL), keyed as
/// the interval's latency is (`p50_ms` ... `max_ms`, `histogram`), with `count` the values
/// recorded (the responses for a first byte or a TTFT, the gaps for a gap or an ITL).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureSnapshot {
    /// count: values recorded in the interval.
    pub count: u64,
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
    /// mean_ms: mean; weighted by `count` it averages over intervals exactly.
    pub mean_ms: f64,
    /// max_ms: largest.
    pub max_ms: f64,
    /// histogram: the values (µs, base64 HdrHistogram V2 deflate), to merge over a span.
    pub histogram: String,
}

impl FigureSnapshot {
    /// new reads a µs histogram (zeros when it is empty, as an empty interval's latency).
    pub fn new(h: &Histogram<u64>) -> Self {
        let q = |p: f64| {
            if h.is_empty() {
                0.0
            } else {
                h.value_at_quantile(p) as f64 / 1000.0
            }
        };
        FigureSnapshot {
            count: h.len(),
            p50_ms: q(0.5),
            p90_ms: q(0.9),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
            p99_9_ms: q(0.999),
            mean_ms: if h.is_empty() { 0.0 } else { h.mean() / 1000.0 },
            max_ms: if h.is_empty() {
                0.0
            } else {
                h.max() as f64 / 1000.0
            },
            histogram: encode_histogram(h),
        }
    }
}

/// StreamSnapshot is the streamed answers over one interval: counts, rates and the two
/// figures of every stream, and a completion's once a token came in the interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamSnapshot {
    /// responses: streamed responses answered in the interval.
    pub responses: u64,
    /// events: SSE events received.
    pub events: u64,
    /// chunks: pieces received (events, chunks or reads).
    pub chunks: u64,
    /// body_bytes: body bytes of the responses answered.
    pub body_bytes: u64,
    /// events_per_s: events a second over the interval.
    pub events_per_s: f64,
    /// chunks_per_s: pieces a second over the interval.
    pub chunks_per_s: f64,
    /// first_byte: request start to the body's first byte (as the report's `first_byte_ms`).
    pub first_byte: FigureSnapshot,
    /// chunk_gap: between two pieces in a row (as the report's `chunk_gap_ms`).
    pub chunk_gap: FigureSnapshot,
    /// completion: the tokens of streamed completions, when one came in the interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion: Option<CompletionSnapshot>,
}

/// CompletionSnapshot is streamed completions over one interval: TTFT, ITL and output tokens
/// a second, as the run's `completion` block gives them over the whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompletionSnapshot {
    /// responses: answered responses that carried a token.
    pub responses: u64,
    /// output_tokens: tokens received in the interval.
    pub output_tokens: u64,
    /// output_tokens_per_s: tokens a second over the interval.
    pub output_tokens_per_s: f64,
    /// ttft: time to first token of the responses answered.
    pub ttft: FigureSnapshot,
    /// itl: inter-token latency.
    pub itl: FigureSnapshot,
}

impl StreamSnapshot {
    /// new reads an interval's stream figures over its `len_s` seconds.
    pub fn new(t: &StreamTotals, len_s: f64) -> Self {
        let rate = |n: u64| n as f64 / len_s.max(1e-9);
        StreamSnapshot {
            responses: t.responses,
            events: t.events,
            chunks: t.chunks,
            body_bytes: t.body_bytes,
            events_per_s: rate(t.events),
            chunks_per_s: rate(t.chunks),
            first_byte: FigureSnapshot::new(&t.first_byte),
            chunk_gap: FigureSnapshot::new(&t.chunk_gap),
            completion: completion(&t.completion, len_s),
        }
    }
}

fn completion(c: &CompletionTotals, len_s: f64) -> Option<CompletionSnapshot> {
    (c.tokens > 0 || c.responses > 0).then(|| CompletionSnapshot {
        responses: c.responses,
        output_tokens: c.tokens,
        output_tokens_per_s: c.tokens as f64 / len_s.max(1e-9),
        ttft: FigureSnapshot::new(&c.ttft),
        itl: FigureSnapshot::new(&c.itl),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_reads_its_figures_and_rates() {
        let mut t = StreamTotals::new(0);
        for ms in [100u64, 200, 300] {
            t.first_byte.record(ms * 1000).expect("in range");
        }
        t.chunk_gap.record(20_000).expect("in range");
        t.events = 30;
        t.chunks = 30;
        t.responses = 3;
        let s = StreamSnapshot::new(&t, 0.5);
        assert_eq!((s.events_per_s, s.chunks_per_s), (60.0, 60.0));
        assert_eq!(s.first_byte.count, 3);
        let near = |got: f64, want: f64| (got - want).abs() <= want * 0.001;
        assert!(near(s.first_byte.p50_ms, 200.0), "{}", s.first_byte.p50_ms);
        assert!(near(s.first_byte.mean_ms, 200.0));
        assert!(near(s.chunk_gap.max_ms, 20.0));
        assert!(s.completion.is_none(), "no token, no completion block");

        t.completion.tokens = 40;
        t.completion.responses = 2;
        t.completion.ttft.record(50_000).expect("in range");
        let s = StreamSnapshot::new(&t, 2.0);
        let c = s.completion.expect("a token came");
        assert_eq!((c.output_tokens, c.output_tokens_per_s), (40, 20.0));
        assert!(near(c.ttft.p99_ms, 50.0));
        assert_eq!(c.itl.count, 0);
        assert_eq!(c.itl.p99_ms, 0.0, "empty: zeros");
    }
}
