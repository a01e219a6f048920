//! The scenario part of a run's report: iterations and groups, from the merged
//! [`FlowTotals`]. (Per-name failure reasons go into each `per_name` entry.)

use std::collections::BTreeMap;

use serde::Serialize;

use super::stats::FlowTotals;
use super::Script;
use crate::hdr::LatencySummary;

/// IterationReport counts iterations: a started one ends completed or failed, or is still
/// under way when the run ends (`started - completed - failed` of them).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IterationReport {
    /// started: iterations begun after the warm-up.
    pub started: u64,
    /// completed: iterations that ran every step with no failure.
    pub completed: u64,
    /// failed: iterations a failure ended.
    pub failed: u64,
    /// rate: iterations per second over the measured window.
    pub rate: f64,
    /// latency_ms: iteration durations, from each iteration's intended start.
    pub latency_ms: LatencySummary,
}

/// GroupReport summarises one group: each pass through it is one sample.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupReport {
    /// requests: passes through the group that ended.
    pub requests: u64,
    /// errors: passes a failure cut short.
    pub errors: u64,
    /// rps: passes per second.
    pub rps: f64,
    /// latency_ms: how long each pass took.
    pub latency_ms: LatencySummary,
}

/// ScenarioReport is the report's `scenario` object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScenarioReport {
    /// flows: the flows and their weights.
    pub flows: BTreeMap<String, u32>,
    /// iterations: iteration counts.
    pub iterations: IterationReport,
    /// groups: per group name.
    pub groups: BTreeMap<String, GroupReport>,
    /// data: per data set, the rows held and handed out (absent without data sets).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub data: BTreeMap<String, super::data::DataReport>,
    /// python: what the Python steps cost (absent without any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python: Option<super::host::PythonReport>,
    /// sockets: per WebSocket step name, its messages both ways (absent without any).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub sockets: BTreeMap<String, crate::socket::books::SocketBooks>,
}

fn per_s(n: u64, s: f64) -> f64 {
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}

/// summarize builds the scenario report of a run of `script` whose measured window lasted
/// `measured_s` seconds.
pub fn summarize(flow: &FlowTotals, script: &Script, measured_s: f64) -> ScenarioReport {
    let groups = script
        .groups
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let g = flow.groups.get(i).and_then(Option::as_ref);
            let r = GroupReport {
                requests: g.map_or(0, |g| g.count),
                errors: g.map_or(0, |g| g.errors),
                rps: per_s(g.map_or(0, |g| g.count), measured_s),
                latency_ms: g.map_or_else(LatencySummary::default, |g| {
                    LatencySummary::from_histogram(&g.latency)
                }),
            };
            (name.clone(), r)
        })
        .collect();
    ScenarioReport {
        flows: script
            .flows
            .iter()
            .map(|f| (f.name.clone(), f.weight))
            .collect(),
        iterations: IterationReport {
            started: flow.iterations_started,
            completed: flow.iterations_completed,
            failed: flow.iterations_failed,
            rate: per_s(flow.iterations_started, measured_s),
            latency_ms: flow
                .iteration_latency
                .as_ref()
                .map_or_else(LatencySummary::default, LatencySummary::from_histogram),
        },
        groups,
        data: script
            .data
            .iter()
            .map(|d| (d.name.clone(), d.report()))
            .collect(),
        python: None,
        sockets: script
            .sockets
            .iter()
            .map(|w| {
                let books = flow.sockets.get(w.stat).cloned().flatten();
                (script.names[w.stat].clone(), books.unwrap_or_default())
            })
            .collect(),
    }
}

/// reasons: the failure reasons of request name `stat`.
pub fn reasons(flow: &FlowTotals, stat: usize) -> BTreeMap<String, u64> {
    flow.reasons.get(stat).cloned().unwrap_or_default()
}
