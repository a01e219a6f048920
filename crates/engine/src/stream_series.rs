//! The streamed answers' figures over one reporting interval (`--stream`): what each
//! [`crate::snapshot::IntervalSnapshot`] carries as `stream`, so the time series, the live view
//! and a capacity search's steps read first bytes, gaps between pieces, time to first token and
//! inter-token latency interval by interval, and a step's percentiles come from its intervals'
//! merged histograms (as its latency's do), not from percentiles of percentiles.

use serde::Serialize;

use crate::completion::CompletionTotals;
use crate::hdr::{encode_histogram, IntervalPercentiles};
use crate::stream::{StreamCounts, StreamTotals};
use hdrhistogram::Histogram;

/// FigureSnapshot is one timed figure over an interval (first byte, gap, TTFT, ITL), keyed as
/// the interval's latency is (`p50_ms` ... `max_ms`, `histogram`), with `count` the values
/// recorded (the responses for a first byte or a TTFT, the gaps for a gap or an ITL).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureSnapshot {
    /// count: values recorded in the interval.
    pub count: u64,
    /// percentiles: the values' table, flattened (`p50_ms` ... `max_ms`); its `mean_ms`
    /// weighted by `count` averages over intervals exactly.
    #[serde(flatten)]
    pub percentiles: IntervalPercentiles,
    /// histogram: the values (µs, base64 HdrHistogram V2 deflate), to merge over a span.
    pub histogram: String,
}

impl FigureSnapshot {
    /// new reads a µs histogram (zeros when it is empty, as an empty interval's latency).
    pub fn new(h: &Histogram<u64>) -> Self {
        FigureSnapshot {
            count: h.len(),
            percentiles: IntervalPercentiles::from_histogram(h),
            histogram: encode_histogram(h),
        }
    }
}

/// StreamSnapshot is the streamed answers over one interval: counts, rates and the two
/// figures of every stream, and a completion's once a token came in the interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamSnapshot {
    /// counts: responses, events, pieces and body bytes over the interval, and their rates
    /// (flattened: the keys the report's `stream` block begins with).
    #[serde(flatten)]
    pub counts: StreamCounts,
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
        StreamSnapshot {
            counts: StreamCounts::new(t, len_s),
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
        assert_eq!((s.counts.events_per_s, s.counts.chunks_per_s), (60.0, 60.0));
        assert_eq!(s.first_byte.count, 3);
        let near = |got: f64, want: f64| (got - want).abs() <= want * 0.001;
        let first_byte = s.first_byte.percentiles;
        assert!(near(first_byte.p50_ms, 200.0), "{}", first_byte.p50_ms);
        assert!(near(first_byte.mean_ms, 200.0));
        assert!(near(s.chunk_gap.percentiles.max_ms, 20.0));
        // The keys, in order: `count`, the table flattened, `histogram`.
        let json = serde_json::to_string(&s.chunk_gap).expect("serialises");
        assert!(
            crate::hdr::table_between(&json, "count", "histogram"),
            "{json}"
        );
        assert!(s.completion.is_none(), "no token, no completion block");

        t.completion.tokens = 40;
        t.completion.responses = 2;
        t.completion.ttft.record(50_000).expect("in range");
        let s = StreamSnapshot::new(&t, 2.0);
        let c = s.completion.expect("a token came");
        assert_eq!((c.output_tokens, c.output_tokens_per_s), (40, 20.0));
        assert!(near(c.ttft.percentiles.p99_ms, 50.0));
        assert_eq!(c.itl.count, 0);
        assert_eq!(
            c.itl.percentiles,
            IntervalPercentiles::default(),
            "empty: zeros"
        );
    }

    /// keys_in_order says whether `json` names `keys`, each once, in this order.
    fn keys_in_order(json: &str, keys: &[&str]) -> bool {
        let at: Vec<Option<usize>> = (keys.iter())
            .map(|k| json.find(&format!("\"{k}\":")))
            .collect();
        at.iter().all(Option::is_some) && at.windows(2).all(|w| w[0] < w[1])
    }

    #[test]
    fn the_counts_block_keeps_its_keys_in_the_report_and_in_an_interval() {
        let mut t = StreamTotals::new(0);
        (t.responses, t.events, t.chunks, t.body_bytes, t.clamped) = (2, 8, 9, 40, 1);
        let counts = [
            "responses",
            "events",
            "chunks",
            "body_bytes",
            "events_per_s",
            "chunks_per_s",
        ];
        let interval = serde_json::to_string(&StreamSnapshot::new(&t, 2.0)).expect("json");
        let tail = ["first_byte", "chunk_gap"];
        assert!(
            keys_in_order(&interval, &[&counts[..], &tail[..]].concat()),
            "{interval}"
        );
        assert!(!interval.contains("clamped") && !interval.contains("body_bytes_per_s"));
        let report = crate::stream::StreamReport::new(&t, 2.0);
        let run = serde_json::to_string(&report.stream).expect("json");
        let tail = ["body_bytes_per_s", "clamped"];
        assert!(
            keys_in_order(&run, &[&counts[..], &tail[..]].concat()),
            "{run}"
        );
        assert!(run.contains("\"events_per_s\":4.0") && run.contains("\"clamped\":1"));
        assert!(interval.contains("\"chunks_per_s\":4.5"), "{interval}");
    }
}
