//! What a VU costs: the heap a run of a flow holds grows by a bounded amount per VU, so ten
//! thousand VUs of the seed-000 flow fit in the memory issue 35 set (<= 150 MB for the whole
//! `redline run` process; bench/scenarios/vus.py measures that). The truth here is the
//! engine's own heap, counted by the allocator (the test server's threads are left out), at
//! its peak with every VU connected and waiting on the server, the case of a large run.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::counting::{live_bytes, peak_bytes, reset_peak, Counting};
use redline_engine::{run, RunConfig, RunControl};
use serde_json::json;

#[global_allocator]
static GLOBAL: Counting = Counting;

/// ONE_AT_A_TIME: the heap counts are the process's, so the tests here take turns.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

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
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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

/// THINK: how long each VU of [`rested`] thinks after its answer: longer than the test
/// takes, so every VU still thinks when the heap is read (the run is then stopped).
const THINK: f64 = 60.0;

/// MAX_KEPT_PER_VU: the bound on the heap a thinking VU holds more after a 3,000-byte answer
/// than after a 500-byte one. What stays is the body the next steps' conditions may read
/// (`parsed.body`, 2.5 KB more, less the small answer's 0.5 KB copy kept for reuse): 1,962 B
/// measured; a VU that kept its widened read buffer and its response copy holds about 12 KB
/// more.
const MAX_KEPT_PER_VU: i64 = 4 * 1024;

/// rested: read one answer whose end a check looks for, then think.
fn rested() -> serde_json::Value {
    json!({"file": "rest.py", "flows": [{"name": "read", "steps": [
      {"step": "request", "name": "result", "method": "GET", "path": ["/tasks/1"],
       "checks": [{"check": "contains", "text": "\"end\":1}"}]},
      {"step": "think", "dist": "constant", "s": THINK}
    ]}]})
}

/// held_while_thinking runs [`rested`] with `vus` VUs against a server answering a body of
/// `size` bytes and returns the least heap the run held (over its start) in the half second
/// from 0.3 s after the server saw every VU's request: every VU then has its answer and
/// thinks. The run is stopped once the heap is read.
fn held_while_thinking(size: usize, vus: u32) -> i64 {
    let body = format!(r#"{{"pad":"{}","end":1}}"#, "x".repeat(size - 18));
    assert_eq!(body.len(), size);
    let server = common::start(common::Mode::Body(Box::leak(body.into_boxed_str())));
    let cfg = RunConfig {
        url: server.url("/"),
        connections: i64::from(vus),
        threads: Some(2),
        interval_s: 60.0,
        timeout_s: 30.0,
        plan: Some(rested()),
        ..RunConfig::default()
    };
    let control = Arc::new(RunControl::new());
    let before = live_bytes();
    let (seen, stop) = (server.seen.clone(), control.clone());
    let sampler = std::thread::spawn(move || {
        let all = || seen.requests.load(std::sync::atomic::Ordering::SeqCst) >= u64::from(vus);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !all() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let least = all().then(|| {
            std::thread::sleep(Duration::from_millis(300));
            let samples = (0..50).map(|_| {
                std::thread::sleep(Duration::from_millis(10));
                live_bytes()
            });
            samples.min().unwrap_or(i64::MAX)
        });
        stop.stop();
        least
    });
    let r = run(cfg, control, &mut |_| {}).expect("run");
    let least = sampler.join().expect("sampler");
    let least = least.expect("the server saw every VU's request within 30 s");
    assert_eq!(r.errors_total, 0, "{:?} {:?}", r.errors, r.per_name);
    assert_eq!(r.per_name["result"].requests, u64::from(vus));
    assert_eq!(server.requests(), u64::from(vus), "one request a VU");
    least - before
}

#[test]
fn a_thinking_vu_gives_back_what_a_large_answer_grew() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let vus = 1_000;
    let small = held_while_thinking(500, vus);
    let large = held_while_thinking(3_000, vus);
    let kept = (large - small) / i64::from(vus);
    eprintln!("heap while thinking: {small} B after 500-byte answers, {large} B after 3,000: {kept} B more a VU");
    // A floor: the larger bodies the VUs keep for their conditions are in the count.
    assert!(
        kept >= 1_000,
        "{kept} B more a VU: the count missed the VUs"
    );
    assert!(
        kept <= MAX_KEPT_PER_VU,
        "{kept} B more a VU after a large answer (bound {MAX_KEPT_PER_VU})"
    );
}
