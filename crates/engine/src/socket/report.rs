//! What a WebSocket run hands back ([`SocketReport`], serialised to JSON for Python;
//! docs/schema/socket.schema.json).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::hdr::{encode_histogram, LatencySummary};
use crate::socket::books::MessageBooks;
use crate::socket::config::Plan;
use crate::socket::tally::Tally;

/// SOCKET_REPORT_VERSION is bumped when a field changes meaning or goes away.
pub const SOCKET_REPORT_VERSION: u32 = 1;

/// SocketReport is a WebSocket run's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct SocketReport {
    /// version: [`SOCKET_REPORT_VERSION`].
    pub version: u32,
    /// protocol: always `websocket`.
    pub protocol: &'static str,
    /// url: the target.
    pub url: String,
    /// model: `closed` (each socket sends after its last reply) or `open` (`rate`).
    pub model: &'static str,
    /// rate: the open model's messages a second across sockets.
    pub rate: Option<f64>,
    /// stagger_s: the closed model's first messages were spread over this long (None: at once).
    pub stagger_s: Option<f64>,
    /// threads: threads the sockets were spread over.
    pub threads: u32,
    /// match_rule: `next` or `field:NAME`.
    pub match_rule: String,
    /// interrupted: the run was stopped before its end.
    pub interrupted: bool,
    /// duration_s: the time messages were sent over (the rates' denominator).
    pub duration_s: f64,
    /// sockets: how the sockets went.
    pub sockets: Sockets,
    /// messages: messages both ways, and the ones that had no reply.
    pub messages: Messages,
    /// errors: early socket ends by class (`connect`, `handshake`, `dropped`, `close_CODE`,
    /// `timeout`, `protocol`).
    pub errors: BTreeMap<String, u64>,
    /// errors_total: the sum of `errors`.
    pub errors_total: u64,
    /// latency_ms: round trips, from a message's send (the closed model) or its intended send
    /// (the open model) to its reply's arrival.
    pub latency_ms: LatencySummary,
    /// clamped: round trips above the histogram's top.
    pub clamped: u64,
    /// histograms: `latency` as base64 HdrHistogram V2 (mergeable).
    pub histograms: BTreeMap<&'static str, String>,
}

/// Sockets is how the run's sockets went.
#[derive(Debug, Clone, Serialize)]
pub struct Sockets {
    /// wanted: sockets kept open at once.
    pub wanted: u64,
    /// opened: upgrades that succeeded (a socket that ended early is opened again).
    pub opened: u64,
}

/// Messages counts data messages (text or binary) both ways, with their rates and bytes.
#[derive(Debug, Clone, Serialize)]
pub struct Messages {
    /// books: sent, received, answered, unmatched and lost (flattened: `sent`, ...,
    /// `lost_total`).
    #[serde(flatten)]
    pub books: MessageBooks,
    /// sent_per_s: `sent` over `duration_s`.
    pub sent_per_s: f64,
    /// received_per_s: `received` over `duration_s`.
    pub received_per_s: f64,
    /// bytes_out: the sent messages' payload bytes.
    pub bytes_out: u64,
    /// bytes_in: the read messages' payload bytes.
    pub bytes_in: u64,
}

impl SocketReport {
    /// new sums a run's merged tally up.
    pub(crate) fn new(plan: &Plan, tally: &Tally, duration_s: f64, interrupted: bool) -> Self {
        let per_s = |n: u64| {
            if duration_s > 0.0 {
                n as f64 / duration_s
            } else {
                0.0
            }
        };
        let m = &tally.books.messages;
        SocketReport {
            version: SOCKET_REPORT_VERSION,
            protocol: "websocket",
            url: plan.url.clone(),
            model: if plan.rate.is_some() {
                "open"
            } else {
                "closed"
            },
            rate: plan.rate,
            stagger_s: plan.stagger.map(|s| s.as_secs_f64()),
            threads: u32::try_from(plan.threads).unwrap_or(u32::MAX),
            match_rule: plan.rule.name(),
            interrupted,
            duration_s,
            sockets: Sockets {
                wanted: plan.sockets,
                opened: tally.books.opened,
            },
            messages: Messages {
                books: m.clone(),
                sent_per_s: per_s(m.sent),
                received_per_s: per_s(m.received),
                bytes_out: tally.bytes_out,
                bytes_in: tally.bytes_in,
            },
            errors: tally.errors.clone(),
            errors_total: tally.errors.values().sum(),
            latency_ms: LatencySummary::from_histogram(&tally.latency),
            clamped: tally.clamped,
            histograms: BTreeMap::from([("latency", encode_histogram(&tally.latency))]),
        }
    }
}
