//! What each virtual user does: a [`Plan`] of [`Flow`]s made of [`Step`]s.
//!
//! Today a flow is a single request, but the worker loop already walks steps, so later step
//! kinds (extract, check, poll, think time) and flow weights slot in here without touching the
//! loop. Everything static is prepared once: a request step holds its bytes rendered up front.

use std::rc::Rc;

use crate::config::Checked;
use crate::http::render_request;

/// RequestStep is one HTTP request, rendered to bytes once.
#[derive(Debug, Clone)]
pub struct RequestStep {
    /// name: the label statistics are kept under, `METHOD /path` by default.
    pub name: String,
    /// stat: index of this step's per-name statistics.
    pub stat: usize,
    /// bytes: the full request (head and body) as sent on the wire.
    pub bytes: Rc<[u8]>,
    /// head: whether this is a HEAD request (its response has no body).
    pub head: bool,
    /// idempotent: whether sending it twice does no more than sending it once (RFC 9110
    /// 9.2.2), so it may be resent after a kept-alive connection closed under it.
    pub idempotent: bool,
}

/// idempotent says whether `method` is idempotent (RFC 9110 9.2.2): POST, PATCH, CONNECT and
/// unknown methods are not.
pub fn idempotent(method: &str) -> bool {
    matches!(
        method,
        "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE"
    )
}

/// Step is one thing a flow does.
#[derive(Debug, Clone)]
pub enum Step {
    /// Request: send a request and read its response.
    Request(RequestStep),
}

/// Flow is an ordered list of steps one VU runs per iteration (one iteration is one "hit").
#[derive(Debug, Clone)]
pub struct Flow {
    /// name: the flow's label.
    pub name: String,
    /// steps: what the flow does, in order.
    pub steps: Vec<Step>,
}

/// Plan is everything the VUs of a run do.
#[derive(Debug, Clone)]
pub struct Plan {
    /// flows: the flows; every hit runs the first one for now.
    pub flows: Vec<Flow>,
    /// names: the per-name statistics labels, indexed by `RequestStep::stat`.
    pub names: Vec<String>,
}

impl Plan {
    /// single_request builds the one-request plan of a plain `redline run URL`.
    pub fn single_request(cfg: &Checked) -> Plan {
        let name = format!("{} {}", cfg.method, cfg.target.path);
        let bytes = render_request(&cfg.method, &cfg.target, &cfg.headers, &cfg.body);
        let step = RequestStep {
            name: name.clone(),
            stat: 0,
            bytes: bytes.into(),
            head: cfg.method == "HEAD",
            idempotent: idempotent(&cfg.method),
        };
        Plan {
            flows: vec![Flow {
                name: name.clone(),
                steps: vec![Step::Request(step)],
            }],
            names: vec![name],
        }
    }

    /// flow picks the flow for a hit (weights come later; today there is one).
    pub fn flow(&self, _hit: u64) -> Option<&Flow> {
        self.flows.first()
    }
}
