//! Scenario runs' per-interval figures: iterations and per-name counts in each snapshot add up
//! to the run's totals and to what the server saw.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::{start, Mode};
use redline_engine::{run, RunConfig, RunControl};
use serde_json::json;

/// plan: a GET that passes its check, then one whose check always fails (ending the iteration
/// as failed), so both the counts and the errors by class have something to add.
fn plan() -> serde_json::Value {
    json!({"file": "names.py",
    "flows": [{"name": "f", "steps": [
      {"step": "request", "name": "first", "method": "GET", "path": ["/a"],
       "checks": [{"check": "status", "in": [200]}]},
      {"step": "request", "name": "second", "method": "GET", "path": ["/b"],
       "checks": [{"check": "contains", "text": "never there"}]}
    ]}]})
}

#[test]
fn per_interval_names_and_iterations_add_up_to_the_totals() {
    let server = start(Mode::Ok {
        delay: Duration::from_millis(1),
    });
    let iterations = 600u64;
    let cfg = RunConfig {
        url: server.url("/"),
        connections: 4,
        threads: Some(2),
        requests: Some(iterations as i64),
        interval_s: 0.1,
        plan: Some(plan()),
        ..RunConfig::default()
    };
    let mut snaps = Vec::new();
    let r = run(cfg, Arc::new(RunControl::new()), &mut |s| {
        snaps.push(s.clone())
    })
    .expect("run");
    assert_eq!(
        server.requests(),
        2 * iterations,
        "server saw both requests of each"
    );
    assert!(snaps.len() >= 2, "several intervals: {}", snaps.len());
    let mut sums: BTreeMap<String, (u64, u64, u64, u64, u64)> = BTreeMap::new();
    let (mut started, mut completed, mut failed) = (0, 0, 0);
    for s in &snaps {
        let it = s.iterations.expect("a scenario snapshot counts iterations");
        started += it.started;
        completed += it.completed;
        failed += it.failed;
        for (name, n) in s.names.as_ref().expect("a scenario snapshot has names") {
            let e = sums.entry(name.clone()).or_default();
            e.0 += n.requests;
            e.1 += n.errors;
            e.2 += n.errors_by_class.check;
            e.3 += histogram_len(&n.histogram);
            e.4 += n.statuses.values().map(|f| f.count).sum::<u64>();
        }
    }
    for (name, stats) in &r.per_name {
        let (requests, errors, check, recorded, coded) = sums[name];
        assert_eq!(
            (requests, errors),
            (stats.requests, stats.errors),
            "{name}: the intervals add up to the summary"
        );
        assert_eq!(recorded, requests, "{name}: one latency per response");
        assert_eq!(coded, requests, "{name}: one status code per response");
        if name.contains("/b") {
            assert_eq!(check, requests, "every /b fails its check");
        }
    }
    assert_eq!(
        r.per_name.values().map(|n| n.requests).sum::<u64>(),
        server.requests()
    );
    let it = &r.scenario.as_ref().expect("scenario").iterations;
    assert_eq!(
        (started, completed, failed),
        (it.started, it.completed, it.failed)
    );
    assert_eq!((it.started, it.failed), (iterations, iterations));
    let json = serde_json::to_value(&snaps[0]).expect("serialises");
    assert!(json["iterations"]["completed"].is_u64() && json["names"].is_object());
}

fn histogram_len(b64: &str) -> u64 {
    use base64::Engine as _;
    use hdrhistogram::serialization::Deserializer;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("base64");
    let h: hdrhistogram::Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .expect("V2 deflate");
    h.len()
}
