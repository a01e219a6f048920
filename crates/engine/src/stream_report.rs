//! What the report says of streamed answers (`--stream`): the first-byte and gap tables, the
//! counts, and the histograms behind them; [`StreamCounts`] is also the block each interval's
//! `stream` begins with (`crate::stream_series`).

use serde::Serialize;

use super::StreamTotals;
use crate::completion::{CompletionHistograms, CompletionReport};
use crate::hdr::{encode_histogram, LatencySummary};

/// StreamReport is what the report says of streamed answers (present with `--stream`):
/// flattened into the report, so `first_byte_ms` and `chunk_gap_ms` sit beside `latency_ms`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamReport {
    /// first_byte_ms: request start (as `latency_ms`) to the body's first byte.
    pub first_byte_ms: LatencySummary,
    /// chunk_gap_ms: between two pieces (SSE events, chunks, or reads) in a row.
    pub chunk_gap_ms: LatencySummary,
    /// stream: the counts.
    pub stream: RunStreamCounts,
    /// completion: streamed completions' figures (TTFT, ITL, tokens a second), once a
    /// token came.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion: Option<CompletionReport>,
}

/// StreamCounts are the counts of streamed answers over a span (the run's measured part, or
/// one interval of its time series) and their rates over it: the block that the report's
/// `stream` and each interval's `stream` both begin with, spelt once.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StreamCounts {
    /// responses: answered responses timed.
    pub responses: u64,
    /// events: SSE events received.
    pub events: u64,
    /// chunks: pieces received (events, chunks or reads; see [`crate::stream`]).
    pub chunks: u64,
    /// body_bytes: body bytes of the responses timed (payload, without framing).
    pub body_bytes: u64,
    /// events_per_s: events a second.
    pub events_per_s: f64,
    /// chunks_per_s: pieces a second.
    pub chunks_per_s: f64,
}

impl StreamCounts {
    /// new reads `t`'s counts over `secs` seconds (rates of 0 over none).
    pub fn new(t: &StreamTotals, secs: f64) -> Self {
        StreamCounts {
            responses: t.responses,
            events: t.events,
            chunks: t.chunks,
            body_bytes: t.body_bytes,
            events_per_s: per_second(t.events, secs),
            chunks_per_s: per_second(t.chunks, secs),
        }
    }
}

/// per_second is `n` over `secs` seconds, 0 over none.
fn per_second(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

/// RunStreamCounts are the report's `stream` block: the [`StreamCounts`] over the measured
/// time, then what the run's block adds to an interval's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RunStreamCounts {
    /// counts: the counts and their rates, flattened.
    #[serde(flatten)]
    pub counts: StreamCounts,
    /// body_bytes_per_s: body bytes a second.
    pub body_bytes_per_s: f64,
    /// clamped: figures beyond the histograms' range, recorded at its top.
    pub clamped: u64,
}

/// StreamHistograms are the mergeable histograms behind [`StreamReport`] (base64
/// HdrHistogram V2, µs), flattened into the report's `histograms`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamHistograms {
    /// first_byte: the first-byte times.
    pub first_byte: String,
    /// chunk_gap: the gaps.
    pub chunk_gap: String,
    /// completion: the completions' histograms, once a token came.
    #[serde(flatten)]
    pub completion: Option<CompletionHistograms>,
}

impl StreamReport {
    /// new summarises a run's stream totals over `secs` measured seconds.
    pub fn new(t: &StreamTotals, secs: f64) -> Self {
        StreamReport {
            first_byte_ms: LatencySummary::from_histogram(&t.first_byte),
            chunk_gap_ms: LatencySummary::from_histogram(&t.chunk_gap),
            stream: RunStreamCounts {
                counts: StreamCounts::new(t, secs),
                body_bytes_per_s: per_second(t.body_bytes, secs),
                clamped: t.clamped,
            },
            completion: CompletionReport::new(&t.completion, secs),
        }
    }
}

impl StreamHistograms {
    /// new encodes a run's stream histograms.
    pub fn new(t: &StreamTotals) -> Self {
        StreamHistograms {
            first_byte: encode_histogram(&t.first_byte),
            chunk_gap: encode_histogram(&t.chunk_gap),
            completion: CompletionHistograms::new(&t.completion),
        }
    }
}
