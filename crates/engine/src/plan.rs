//! What each virtual user does: a [`Plan`] of [`Flow`]s made of [`Step`]s, or a scenario.
//!
//! A plain `redline run URL` is one flow of one request, made once in each protocol's form (the
//! fast path: nothing is built per request). A scenario run carries its resolved
//! [`Script`] instead, which the lanes execute with [`crate::scenario::executor`]; its
//! request names are the per-name statistics.

use std::rc::Rc;

use std::sync::Arc;

use crate::config::Checked;
use crate::http::{idempotent, USER_AGENT};
use crate::message::Request;
use crate::prepared::Prepared;
use crate::proxy::Proxy;
use crate::scenario::Script;

/// RequestStep is one HTTP request, made once in each protocol's form.
#[derive(Debug, Clone)]
pub struct RequestStep {
    /// name: the label statistics are kept under, `METHOD /path` by default.
    pub name: String,
    /// stat: index of this step's per-name statistics.
    pub stat: usize,
    /// request: the request, as each protocol sends it.
    pub(crate) request: Rc<Prepared>,
    /// head: whether this is a HEAD request (its response has no body).
    pub head: bool,
    /// idempotent: whether sending it twice does no more than sending it once (RFC 9110
    /// 9.2.2), so it may be resent after a kept-alive connection closed under it.
    pub idempotent: bool,
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
    /// scenario: the scenario the lanes run instead of `flows`, if any.
    pub scenario: Option<Arc<Script>>,
}

impl Plan {
    /// for_run builds the plan of a run: its scenario, or the single request.
    pub fn for_run(cfg: &Checked) -> Plan {
        match &cfg.scenario {
            Some(script) => Plan {
                flows: Vec::new(),
                names: script.names.clone(),
                scenario: Some(script.clone()),
            },
            None => Plan::single_request(cfg),
        }
    }

    /// single_request builds the one-request plan of a plain `redline run URL`.
    pub fn single_request(cfg: &Checked) -> Plan {
        let name = format!("{} {}", cfg.method, cfg.target.path);
        // Through a proxy, plain http names its origin in the request (https tunnels instead).
        let proxy = cfg.proxy.as_ref().filter(|_| !cfg.target.https);
        let via = proxy.map(|_| format!("http://{}", cfg.target.authority));
        let req = request(cfg, proxy);
        let step = RequestStep {
            name: name.clone(),
            stat: 0,
            request: Rc::new(Prepared::new(&req, cfg.target.https, via.as_deref())),
            head: cfg.method == "HEAD",
            idempotent: idempotent(&cfg.method),
        };
        Plan {
            flows: vec![Flow {
                name: name.clone(),
                steps: vec![Step::Request(step)],
            }],
            names: vec![name],
            scenario: None,
        }
    }

    /// flow picks the flow for a hit (weights come later; today there is one).
    pub fn flow(&self, _hit: u64) -> Option<&Flow> {
        self.flows.first()
    }
}

/// request is a plain run's request as its options give it: method and target, `Host` (the
/// user's, else the URL's authority), the user's headers, [`USER_AGENT`] unless they hold one,
/// `Content-Length` when there is a body (unless given), the credentials of the `proxy` it goes
/// through (unless given), then the body.
fn request(cfg: &Checked, proxy: Option<&Proxy>) -> Request {
    let named = |name: &str| {
        (cfg.headers.iter())
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let host = named("host").unwrap_or(cfg.target.authority.as_str());
    let mut req = Request::default();
    req.begin(&cfg.method, &cfg.target.path_and_query, host);
    for (k, v) in cfg.headers.iter() {
        if !k.eq_ignore_ascii_case("host") {
            req.header(k.as_bytes(), v.as_bytes());
        }
    }
    if named("user-agent").is_none() {
        req.header(b"User-Agent", USER_AGENT.as_bytes());
    }
    let body = &cfg.body;
    let sized = !body.is_empty() || matches!(cfg.method.as_str(), "POST" | "PUT" | "PATCH");
    if sized && named("content-length").is_none() {
        req.header(b"Content-Length", body.len().to_string().as_bytes());
    }
    let credentials = proxy.and_then(|p| p.authorization.as_deref());
    if let (Some(auth), None) = (credentials, named("proxy-authorization")) {
        req.header(b"Proxy-Authorization", auth.as_bytes());
    }
    req.body.extend_from_slice(body);
    req
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
