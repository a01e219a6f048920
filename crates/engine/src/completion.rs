//! Streamed completions (OpenAI-compatible `"stream": true`): the tokens of a streamed
//! answer, read from its server-sent events, and the figures the LLM serving benchmarks give
//! (vLLM's benchmark_serving, genai-perf, llmperf): time to first token (TTFT), inter-token
//! latency (ITL) and output tokens a second, per request and over the run.
//!
//! A token is an event whose `data` is a JSON object with a non-empty
//! `choices[0].delta.content` (chat completions) or `choices[0].text` (completions): a server
//! that streams a token a chunk, as the OpenAI-compatible servers do, is counted exactly; the
//! closing chunk (an empty delta, `usage`) and `data: [DONE]` are events, not tokens. Without a
//! tokenizer, a server that puts several tokens in one event is counted an event a token.
//! Any `--stream` run reads its SSE events this way; the figures appear once a token came.

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::hdr::{encode_histogram, new_histogram, record, LatencySummary};

/// MAX_LINE bounds the bytes of one SSE line kept to read it: a longer line is no token.
const MAX_LINE: usize = 1 << 16;

/// TokenScan reads the `data` of each SSE event as the bytes come, to say whether the event
/// was a token.
#[derive(Debug, Clone, Default)]
pub struct TokenScan {
    /// line: the line being read (up to [`MAX_LINE`]).
    line: Vec<u8>,
    /// long: the line went past [`MAX_LINE`].
    long: bool,
    /// data: the event's `data` so far (its lines joined by LF, as the SSE spec joins them).
    data: Vec<u8>,
}

impl TokenScan {
    /// clear starts a new body.
    pub fn clear(&mut self) {
        self.line.clear();
        self.long = false;
        self.data.clear();
    }

    /// byte takes one byte of a line (not its end).
    #[inline]
    pub fn byte(&mut self, b: u8) {
        if self.line.len() < MAX_LINE {
            self.line.push(b);
        } else {
            self.long = true;
        }
    }

    /// line_end ends the line being read: a `data` field's value joins the event's.
    pub fn line_end(&mut self) {
        if !self.long {
            if let Some(value) = self.line.strip_prefix(b"data:") {
                let value = value.strip_prefix(b" ").unwrap_or(value);
                if !self.data.is_empty() {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
            }
        }
        self.line.clear();
        self.long = false;
    }

    /// dispatch ends the event: whether it was a token.
    pub fn dispatch(&mut self) -> bool {
        let token = is_token(&self.data);
        self.data.clear();
        token
    }
}

/// is_token says whether an event's `data` is an OpenAI-compatible chunk carrying a token.
pub fn is_token(data: &[u8]) -> bool {
    let data = data.trim_ascii();
    if !data.starts_with(b"{") || !data.windows(9).any(|w| w == b"\"choices\"") {
        return false;
    }
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return false;
    };
    let choice = &v["choices"][0];
    [&choice["delta"]["content"], &choice["text"]]
        .iter()
        .any(|t| t.as_str().is_some_and(|s| !s.is_empty()))
}

/// CompletionTotals are a thread's (or, merged, the run's) figures of streamed completions.
#[derive(Debug, Clone)]
pub struct CompletionTotals {
    /// responses: answered responses that carried a token.
    pub responses: u64,
    /// tokens: the tokens received.
    pub tokens: u64,
    /// ttft: request start (as the latency) to the first token's arrival, µs.
    pub ttft: Histogram<u64>,
    /// itl: between two tokens in a row, µs.
    pub itl: Histogram<u64>,
    /// request_rate: each response's tokens over its latency, in thousandths of a token a
    /// second (so that the latency's summary, which reads µs as ms, reads it in tokens/s).
    pub request_rate: Histogram<u64>,
}

impl CompletionTotals {
    /// new makes empty totals whose time histograms reach `highest_us`.
    pub fn new(highest_us: u64) -> Self {
        CompletionTotals {
            responses: 0,
            tokens: 0,
            ttft: new_histogram(highest_us),
            itl: new_histogram(highest_us),
            request_rate: new_histogram(highest_us),
        }
    }

    /// merge folds another thread's figures into these.
    pub fn merge(&mut self, o: &CompletionTotals) {
        self.responses += o.responses;
        self.tokens += o.tokens;
        let _ = self.ttft.add(&o.ttft);
        let _ = self.itl.add(&o.itl);
        let _ = self.request_rate.add(&o.request_rate);
    }

    /// reset empties the figures, keeping the histograms' memory.
    pub fn reset(&mut self) {
        self.responses = 0;
        self.tokens = 0;
        self.ttft.reset();
        self.itl.reset();
        self.request_rate.reset();
    }

    /// answered books a response of `tokens` tokens, the first `ttft_us` after its start, the
    /// whole of it `latency_us`; returns how many figures were clamped.
    pub fn answered(&mut self, tokens: u64, ttft_us: u64, latency_us: u64) -> u64 {
        self.responses += 1;
        let rate = tokens as f64 * 1e9 / latency_us.max(1) as f64;
        u64::from(record(&mut self.ttft, ttft_us))
            + u64::from(record(&mut self.request_rate, rate.round().max(1.0) as u64))
    }
}

/// CompletionReport is what the report says of streamed completions (present once a token
/// came): the figures of the LLM serving benchmarks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompletionReport {
    /// responses: answered responses that carried a token.
    pub responses: u64,
    /// output_tokens: the tokens received.
    pub output_tokens: u64,
    /// output_tokens_per_s: tokens a second over the measured time (all requests).
    pub output_tokens_per_s: f64,
    /// ttft_ms: time to first token, from the request's start (as `latency_ms`).
    pub ttft_ms: LatencySummary,
    /// itl_ms: inter-token latency, between two tokens of a response in a row.
    pub itl_ms: LatencySummary,
    /// request_tokens_per_s: each response's tokens over its whole latency (tokens a
    /// second, as genai-perf's and llmperf's per-request output throughput).
    pub request_tokens_per_s: LatencySummary,
}

/// CompletionHistograms are the mergeable histograms behind [`CompletionReport`] (base64
/// HdrHistogram V2; `request_tokens_per_s` in thousandths of a token a second).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompletionHistograms {
    /// ttft: the times to first token, µs.
    pub ttft: String,
    /// itl: the inter-token latencies, µs.
    pub itl: String,
    /// request_tokens_per_s: each response's tokens a second, × 1000.
    pub request_tokens_per_s: String,
}

impl CompletionReport {
    /// new summarises a run's completion totals over `secs` measured seconds; None when no
    /// token came.
    pub fn new(t: &CompletionTotals, secs: f64) -> Option<Self> {
        if t.tokens == 0 {
            return None;
        }
        Some(CompletionReport {
            responses: t.responses,
            output_tokens: t.tokens,
            output_tokens_per_s: if secs > 0.0 {
                t.tokens as f64 / secs
            } else {
                0.0
            },
            ttft_ms: LatencySummary::from_histogram(&t.ttft),
            itl_ms: LatencySummary::from_histogram(&t.itl),
            request_tokens_per_s: LatencySummary::from_histogram(&t.request_rate),
        })
    }
}

impl CompletionHistograms {
    /// new encodes a run's completion histograms; None when no token came.
    pub fn new(t: &CompletionTotals) -> Option<Self> {
        (t.tokens > 0).then(|| CompletionHistograms {
            ttft: encode_histogram(&t.ttft),
            itl: encode_histogram(&t.itl),
            request_tokens_per_s: encode_histogram(&t.request_rate),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_events_with_content() {
        // (label, data, a token)
        let cases: &[(&str, &[u8], bool)] = &[
            (
                "chat delta",
                br#"{"choices":[{"delta":{"content":"lorem"}}]}"#,
                true,
            ),
            (
                "completion text",
                br#"{"choices":[{"text":" ipsum","index":0}]}"#,
                true,
            ),
            (
                "role only",
                br#"{"choices":[{"delta":{"role":"assistant"}}]}"#,
                false,
            ),
            (
                "empty content",
                br#"{"choices":[{"delta":{"content":""}}]}"#,
                false,
            ),
            (
                "closing chunk",
                br#"{"choices":[],"usage":{"completion_tokens":2}}"#,
                false,
            ),
            ("done", b"[DONE]", false),
            ("an SSE probe's", br#"{"n":3}"#, false),
            (
                "broken JSON",
                br#"{"choices":[{"delta":{"content":"x"#,
                false,
            ),
        ];
        for (label, data, want) in cases {
            assert_eq!(is_token(data), *want, "{label}");
        }
    }
}
