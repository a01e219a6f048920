//! https runs against the bundled target with certificates made as users make them: one
//! `openssl req -x509` self-signed certificate (CA:TRUE, no SAN), given with `--cacert`.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::certs::{self_signed, TempDir};

use redline_engine::{run, EngineError, RunConfig, RunControl};
use redline_target::{Target, TargetConfig};

#[test]
fn a_self_signed_certificate_given_as_cacert_is_pinned() {
    let dir = TempDir::new("pinned");
    let served = self_signed(&dir.0, "server");
    let other = self_signed(&dir.0, "other");
    let target = Target::start(TargetConfig {
        threads: Some(1),
        tls: Some(served.clone()),
        ..TargetConfig::default()
    })
    .expect("target starts");
    let url = format!("https://127.0.0.1:{}/pinned", target.local_addr().port());
    let config = |ca: &Path| RunConfig {
        url: url.clone(),
        connections: 4,
        requests: Some(400),
        threads: Some(1),
        ca_file: Some(ca.display().to_string()),
        ..RunConfig::default()
    };
    let before = target.stats().requests;
    let report = run(
        config(&served.cert),
        Arc::new(RunControl::new()),
        &mut |_| {},
    )
    .expect("the pinned certificate is accepted");
    assert_eq!(report.requests, 400);
    assert_eq!(report.errors_total, 0);
    assert_eq!(target.stats().requests - before, 400, "the server saw each");

    // Another self-signed certificate is no pin for this server: refused before any request.
    let before = target.stats().requests;
    let refused = run(
        config(&other.cert),
        Arc::new(RunControl::new()),
        &mut |_| {},
    );
    match refused {
        Err(EngineError::Unreachable(msg)) => {
            assert!(msg.contains("certificate"), "says why: {msg}")
        }
        other => panic!("expected a refused certificate, got {other:?}"),
    }
    assert_eq!(target.stats().requests, before, "nothing sent untrusted");
    target.stop();
}
