//! The report's per-name figures: each named request's summary (a scenario's requests).

use std::collections::BTreeMap;

use serde::Serialize;

use super::RunFacts;
use crate::hdr::{encode_histogram, LatencySummary};

/// NameReport is the summary of one request name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NameReport {
    /// requests: responses received.
    pub requests: u64,
    /// errors: failed requests.
    pub errors: u64,
    /// latency_ms: latency distribution.
    pub latency_ms: LatencySummary,
    /// failure_reasons: scenario runs: why its requests failed, reason -> count (the
    /// counts add up to `errors`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub failure_reasons: BTreeMap<String, u64>,
    /// histogram: its latency histogram (µs, encoded as [`super::Histograms::latency`]), so that
    /// several runs' per-name figures merge exactly (a cluster's injectors).
    pub histogram: String,
    /// tally: scenario runs: its measured answers by the value at its `tally` path, value ->
    /// count (absent without one; see [`crate::scenario::tally`]).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tally: BTreeMap<String, u64>,
}

/// per_name is each named request's figures (a scenario's requests, by name).
pub(super) fn per_name(f: &RunFacts<'_>) -> BTreeMap<String, NameReport> {
    let t = &f.totals;
    f.names
        .iter()
        .zip(t.per_name.iter())
        .enumerate()
        .map(|(i, (name, s))| {
            let r = NameReport {
                requests: s.requests,
                errors: s.errors,
                latency_ms: LatencySummary::from_histogram(&s.latency),
                failure_reasons: crate::scenario::summary::reasons(&t.flow, i),
                histogram: encode_histogram(&s.latency),
                tally: s.tally.counts(),
            };
            (name.clone(), r)
        })
        .collect()
}
