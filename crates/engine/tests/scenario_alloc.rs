//! A scenario's requests reuse their VU's buffers: templated paths, query and headers, checks
//! and header/regex extractions allocate (next to) nothing per request once warmed up, as on
//! the single-URL path (see alloc.rs; JSON checks parse a document and do allocate).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::counting::{allocations, Counting};
use redline_engine::{run, RunConfig, RunControl};
use serde_json::json;

#[global_allocator]
static GLOBAL: Counting = Counting;

/// plan: two GETs per iteration; the second's path carries what the first extracted.
fn plan() -> serde_json::Value {
    json!({"file": "alloc.py", "vars": {"var.K": "v"},
    "data": [{"name": "d", "per": "iteration", "columns": ["c"], "rows": [["a"], ["bb"], ["ccc"]]}],
    "flows": [{"name": "f", "steps": [
      {"step": "request", "name": "first", "method": "GET",
       "path": ["/u/", {"var": "vu"}, "/", {"var": "iteration"}],
       "query": [["q", [{"var": "data.d.c"}]]],
       "headers": [["X-K", [{"var": "var.K"}]]],
       "checks": [{"check": "status", "in": [200]}, {"check": "contains", "text": "ok"},
                  {"check": "latency", "max_ms": 10000.0}],
       "extract": [{"from": "header", "var": "len", "name": "content-length"},
                   {"from": "regex", "var": "o", "pattern": "(o)k", "group": 1}]},
      {"step": "request", "name": "second", "method": "GET",
       "path": ["/n/", {"var": "len"}, "/", {"var": "o"}]}
    ]}]})
}

fn allocations_for(url: &str, iterations: u64) -> u64 {
    let cfg = RunConfig {
        url: url.to_string(),
        connections: 4,
        threads: Some(2),
        requests: Some(i64::try_from(iterations).expect("a small count")),
        interval_s: 60.0,
        plan: Some(plan()),
        ..RunConfig::default()
    };
    let before = allocations();
    let r = run(cfg, Arc::new(RunControl::new()), &mut |_| {}).expect("run");
    assert_eq!(r.requests, 2 * iterations);
    assert_eq!(r.errors_total, 0, "{:?}", r.per_name);
    let it = r
        .scenario
        .as_ref()
        .expect("a scenario report")
        .iterations
        .clone();
    assert_eq!((it.started, it.completed), (iterations, iterations));
    allocations() - before
}

/// MAX_PER_REQUEST: the bound on allocations per extra request. The truth is 0.000; the
/// regression this guards against (one allocation every other request) measured exactly 0.5,
/// which a bound of 0.5 let through. One allocation in 50 requests is still caught.
const MAX_PER_REQUEST: f64 = 0.02;

#[test]
fn flow_requests_do_not_allocate() {
    let server = common::start(common::Mode::Ok {
        delay: Duration::ZERO,
    });
    let url = server.url("/");
    let small = allocations_for(&url, 250);
    let large = allocations_for(&url, 2_750);
    let per_request = large.saturating_sub(small) as f64 / 5_000.0;
    eprintln!("{small} vs {large} allocations, {per_request:.3} per extra request");
    assert!(
        per_request < MAX_PER_REQUEST,
        "{per_request:.3} allocations per request"
    );
}
