//! Scenarios across hosts, against real servers on 127.0.0.1: each origin gets its own
//! kept-alive connections (one per VU), its figures in `per_host` equal what its server
//! counted, a request's own `timeout_s` cuts it short, and the origins a run may reach are
//! bounded.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use redline_engine::{run, Report, RunConfig, RunControl};
use serde_json::json;

fn scenario(url: &str, vus: i64, threads: i64, iterations: i64, plan: serde_json::Value) -> Report {
    let cfg = RunConfig {
        url: url.to_string(),
        connections: vus,
        threads: Some(threads),
        requests: Some(iterations),
        interval_s: 60.0,
        plan: Some(plan),
        // The servers count connections: no preflight's among them.
        preflight: false,
        ..RunConfig::default()
    };
    run(cfg, Arc::new(RunControl::new()), &mut |_| {}).expect("run")
}

fn origin(server: &common::Server) -> String {
    server.url("").trim_end_matches('/').to_string()
}

/// Each VU keeps one connection per origin: two servers each see as many connections as
/// there are VUs, however many requests went to them, and count what per_host says.
#[test]
fn each_origin_has_its_own_kept_alive_pool() {
    let ok = common::Mode::Ok {
        delay: Duration::ZERO,
    };
    let (a, b) = (common::start(ok), common::start(ok));
    let plan = json!({"file": "h.py", "vars": {"var.B": origin(&b)}, "flows": [{"name": "f", "steps": [
        {"step": "request", "name": "home", "method": "GET", "path": ["/a"]},
        {"step": "request", "name": "other", "method": "GET", "path": [{"var": "var.B"}, "/b"]},
        {"step": "request", "name": "again", "method": "GET", "path": [format!("{}/c", origin(&a))]}
    ]}]});
    let n = 300;
    let r = scenario(&a.url("/"), 4, 2, n, plan);
    assert_eq!(r.errors_total, 0, "{:?}", r.per_name);
    let (ua, ub) = (n as u64 * 2, n as u64);
    assert_eq!((a.requests(), b.requests()), (ua, ub));
    assert_eq!(
        (a.connections(), b.connections()),
        (4, 4),
        "one per VU and origin"
    );
    let hosts = &r.per_host;
    assert_eq!(hosts.len(), 2, "{:?}", hosts.keys());
    assert_eq!(hosts[&origin(&a)].requests, ua);
    assert_eq!(hosts[&origin(&b)].requests, ub);
    assert_eq!(hosts[&origin(&b)].errors, 0);
    assert_eq!(r.connects, 8);
}

/// A request's own timeout ends it as a timeout long before the run's 30 s, on its host's
/// books and under its name.
#[test]
fn a_request_timeout_overrides_the_runs() {
    let ok = common::Mode::Ok {
        delay: Duration::ZERO,
    };
    let (a, silent) = (common::start(ok), common::start(common::Mode::Silent));
    let plan = json!({"file": "h.py", "flows": [{"name": "f", "steps": [
        {"step": "request", "name": "slow", "method": "GET", "timeout_s": 0.2,
         "path": [format!("{}/never", origin(&silent))]}
    ]}]});
    let began = Instant::now();
    let r = scenario(&a.url("/"), 2, 1, 4, plan);
    let took = began.elapsed();
    assert_eq!(r.errors.timeout, 4, "{:?}", r.errors);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(silent.requests(), 4);
    assert_eq!(a.requests(), 0);
    let h = &r.per_host[&origin(&silent)];
    assert_eq!((h.requests, h.errors), (0, 4));
    assert_eq!(r.per_name["slow"].failure_reasons["timeout"], 4);
}

/// A run reaches at most 64 origins: past them a request fails with the reason, and nothing
/// grows (connection refused by the ports nobody listens on is the other hosts' answer).
#[test]
fn origins_are_bounded() {
    let ok = common::Mode::Ok {
        delay: Duration::ZERO,
    };
    let a = common::start(ok);
    let mut ports: Vec<u16> = (0..70).map(|_| common::free_port()).collect();
    ports.sort_unstable();
    ports.dedup();
    let n = ports.len() as u64;
    let rows: Vec<Vec<String>> = ports.iter().map(|p| vec![p.to_string()]).collect();
    let plan = json!({"file": "h.py",
      "data": [{"name": "d", "per": "iteration", "columns": ["port"], "rows": rows}],
      "flows": [{"name": "f", "steps": [
        {"step": "request", "name": "far", "method": "GET",
         "path": ["http://127.0.0.1:", {"var": "data.d.port"}, "/x"]}
    ]}]});
    let r = scenario(&a.url("/"), 1, 1, n as i64, plan);
    let reasons = &r.per_name["far"].failure_reasons;
    let over: u64 = reasons
        .iter()
        .filter(|(k, _)| k.starts_with("more than 64 hosts in one run"))
        .map(|(_, n)| n)
        .sum();
    // The run's own host is the first of the 64.
    assert_eq!(over, n - 63, "{reasons:?}");
    assert_eq!(reasons["connect error"], 63, "{reasons:?}");
    assert_eq!(r.per_host.len(), 64);
    assert_eq!(r.errors_total, n);
}
