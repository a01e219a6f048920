//! What a VU costs: the heap a run of a flow holds grows by a bounded amount per VU, so ten
//! thousand VUs of the seed-000 flow fit in the memory issue 35 set (<= 150 MB for the whole
//! `redline run` process; bench/scenarios/vus.py measures that). The truth here is the
//! engine's own heap, counted by the allocator (the test server's threads are left out), at
//! its peak with every VU connected and waiting on the server, the case of a large run.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::counting::{peak_bytes, reset_peak, Counting};
use redline_engine::{run, RunConfig, RunControl};
use serde_json::json;

#[global_allocator]
static GLOBAL: Counting = Counting;

/// DELAY: how long the server holds each answer, so every VU is out with a request at once.
const DELAY: Duration = Duration::from_millis(50);

/// MAX_PER_VU: the bound on the heap one more VU holds, in bytes. Measured 17,775 before
/// issue 35's cut (an 8 KiB read buffer each, and a lane future of 8.4 KiB that carried the
/// HTTP/2 and TLS handshakes' state) and 3,484 after; 10,000 VUs at this bound are 80 MB of
/// heap, which with the interpreter and the library keeps `redline run` under 150 MB.
const MAX_PER_VU: i64 = 8 * 1024;

/// plan: the seed-000 flow's shape in GETs the test server answers: submit (an extraction),
/// poll the status until it holds, read the result, think. The think keeps each VU alive
/// after its iteration, so all of them are at once.
fn plan() -> serde_json::Value {
    json!({"file": "vus.py", "flows": [{"name": "task", "steps": [
      {"step": "request", "name": "submit", "method": "GET", "path": ["/tasks/submissions"],
       "headers": [["X-User", [{"var": "vu"}]]],
       "checks": [{"check": "status", "in": [200]}],
       "extract": [{"from": "header", "var": "id", "name": "content-length"}]},
      {"step": "poll", "interval_s": 0.01, "timeout_s": 5.0, "request":
        {"name": "status", "method": "GET", "path": ["/tasks/submissions/", {"var": "id"}]},
       "until": [{"check": "status", "in": [200]}],
       "checks": [{"check": "contains", "text": "ok"}]},
      {"step": "request", "name": "result", "method": "GET", "path": ["/tasks/", {"var": "id"}]},
      {"step": "think", "dist": "constant", "s": 0.5}
    ]}]})
}

/// peak_of runs one iteration for each of `vus` VUs and returns the most heap the run held.
fn peak_of(url: &str, vus: u32) -> i64 {
    let cfg = RunConfig {
        url: url.to_string(),
        connections: i64::from(vus),
        threads: Some(2),
        requests: Some(i64::from(vus)),
        interval_s: 60.0,
        timeout_s: 30.0,
        plan: Some(plan()),
        ..RunConfig::default()
    };
    reset_peak();
    let before = peak_bytes();
    let r = run(cfg, Arc::new(RunControl::new()), &mut |_| {}).expect("run");
    assert_eq!(r.errors_total, 0, "{:?} {:?}", r.errors, r.per_name);
    assert_eq!(r.connections, u64::from(vus), "every VU ran");
    assert_eq!(r.per_name["submit"].requests, u64::from(vus));
    peak_bytes() - before
}

#[test]
fn a_vu_holds_a_few_kilobytes() {
    let server = common::start(common::Mode::Ok { delay: DELAY });
    let url = server.url("/");
    // The run's fixed costs (histograms, threads, the plan) are in both; the difference is
    // what the extra VUs held.
    let (few, many) = (100, 1_100);
    let small = peak_of(&url, few);
    let large = peak_of(&url, many);
    let per_vu = (large - small) / i64::from(many - few);
    eprintln!("peak heap: {small} B for {few} VUs, {large} B for {many}: {per_vu} B per VU");
    // Every request reached the server: the VUs were real.
    assert!(server.requests() >= 3 * u64::from(few + many));
    assert!(
        per_vu <= MAX_PER_VU,
        "{per_vu} bytes of heap per VU (bound {MAX_PER_VU})"
    );
    // A floor too: a VU holds at least its read buffer, so a count that missed the engine's
    // threads would not pass as small.
    assert!(
        per_vu >= 1024,
        "{per_vu} bytes per VU: the count missed the VUs"
    );
}
