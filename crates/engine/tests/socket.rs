//! WebSocket runs against the test server's echo probe (`/ws`, crates/testserver/src/
//! socket.rs) on 127.0.0.1:0: messages counted as the server counted them, round trips
//! against the probe's delay, and sockets the server ends early counted by class. Every run
//! is bounded by a count or a short duration.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::certs::{self_signed, TempDir};
use redline_engine::socket::{run, SocketConfig, SocketReport};
use redline_engine::{EngineError, RunControl};
use redline_target::{Target, TargetConfig};

fn target() -> Target {
    Target::start(TargetConfig {
        threads: Some(1),
        ..TargetConfig::default()
    })
    .expect("target starts")
}

fn ws_url(target: &Target, path: &str) -> String {
    format!("ws://{}{path}", target.local_addr())
}

fn go(config: SocketConfig) -> SocketReport {
    run(&config, Arc::new(RunControl::new())).expect("the run starts")
}

#[test]
fn closed_model_counts_what_the_server_counted_and_times_its_delay() {
    let server = target();
    let r = go(SocketConfig {
        url: ws_url(&server, "/ws?delay=20ms"),
        sockets: Some(20),
        duration_s: Some(1.0),
        threads: Some(2),
        ..SocketConfig::default()
    });
    let seen = server.stats();
    assert_eq!(r.errors_total, 0, "{:?}", r.errors);
    assert_eq!(r.sockets.opened, 20);
    assert_eq!(seen.ws_sockets, 20);
    assert_eq!(
        r.messages.books.sent, seen.ws_received,
        "sent = what the server read"
    );
    assert_eq!(
        r.messages.books.received, seen.ws_sent,
        "read = what the server wrote"
    );
    assert_eq!(r.messages.books.answered, r.messages.books.sent);
    assert_eq!(
        (r.messages.books.unmatched, r.messages.books.lost_total),
        (0, 0)
    );
    // 20 sockets, one message each per 20 ms round trip, for 1 s: about 1,000.
    assert!(r.messages.books.sent > 300, "{}", r.messages.books.sent);
    let p50 = r.latency_ms.p50;
    assert!(
        not_before(r.latency_ms.min, 20.0),
        "never before the delay: {}",
        r.latency_ms.min
    );
    assert!(p50 <= 21.0, "p50 {p50} ms within 5 % of 20 ms");
    assert_eq!(r.model, "closed");
    assert_eq!(r.match_rule, "next");
    server.stop();
}

#[test]
fn open_model_sends_the_rate_across_sockets_matched_by_field() {
    let server = target();
    let r = go(SocketConfig {
        url: ws_url(&server, "/ws?delay=10ms"),
        sockets: Some(10),
        rate: Some(500.0),
        duration_s: Some(1.0),
        message: Some(r#"{"id": 0, "text": "hi"}"#.into()),
        match_field: Some("id".into()),
        ..SocketConfig::default()
    });
    let seen = server.stats();
    assert_eq!(r.errors_total, 0, "{:?}", r.errors);
    assert_eq!(r.messages.books.sent, seen.ws_received);
    assert_eq!(r.messages.books.received, seen.ws_sent);
    assert_eq!(
        r.messages.books.answered, r.messages.books.sent,
        "each id answered once"
    );
    // 500 a second for 1 s, scheduled: exactly 500 unless the run was starved past its end.
    assert!(
        (490..=500).contains(&r.messages.books.sent),
        "{}",
        r.messages.books.sent
    );
    assert!(not_before(r.latency_ms.min, 10.0), "{}", r.latency_ms.min);
    assert_eq!((r.model, r.match_rule.as_str()), ("open", "field:id"));
    server.stop();
}

#[test]
fn sockets_the_server_drops_or_closes_are_counted_and_reopened() {
    let server = target();
    let r = go(SocketConfig {
        url: ws_url(&server, "/ws?drop=3"),
        sockets: Some(5),
        messages: Some(60),
        ..SocketConfig::default()
    });
    let seen = server.stats();
    assert_eq!(r.messages.books.sent, 60);
    assert_eq!(
        r.messages.books.sent,
        r.messages.books.answered + r.messages.books.lost_total,
        "every message answered or lost"
    );
    assert_eq!(r.errors.get("dropped").copied(), Some(seen.ws_dropped));
    // A socket takes at most 3 answered + 1 lost; the last 5 may end with the count.
    assert!(seen.ws_dropped >= 60 / 4 - 5, "{seen:?}");
    assert_eq!(r.sockets.opened, seen.ws_sockets, "each drop reopened");
    server.stop();

    let server = target();
    let r = go(SocketConfig {
        url: ws_url(&server, "/ws?close_after=2&code=1011"),
        sockets: Some(4),
        messages: Some(40),
        ..SocketConfig::default()
    });
    let seen = server.stats();
    assert_eq!(r.errors.get("close_1011").copied(), Some(seen.ws_closed));
    // A socket takes at most 2 answered + 1 lost; the last 4 may end with the count.
    assert!(seen.ws_closed >= 40 / 3 - 4, "{seen:?}");
    assert_eq!(
        r.messages.books.sent,
        r.messages.books.answered + r.messages.books.lost_total
    );
    server.stop();
}

#[test]
fn a_refused_port_and_a_refused_upgrade_are_errors_not_a_failed_run() {
    let server = target();
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr")
    };
    let r = go(SocketConfig {
        url: format!("ws://{refused}/"),
        sockets: Some(2),
        duration_s: Some(0.3),
        ..SocketConfig::default()
    });
    assert_eq!(r.messages.books.sent, 0);
    assert!(
        r.errors.get("connect").copied().unwrap_or(0) >= 2,
        "{:?}",
        r.errors
    );
    // A path that is not the probe answers 200 to the upgrade: refused.
    let r = go(SocketConfig {
        url: ws_url(&server, "/not-a-socket"),
        sockets: Some(1),
        duration_s: Some(0.3),
        ..SocketConfig::default()
    });
    assert!(
        r.errors.get("handshake").copied().unwrap_or(0) >= 1,
        "{:?}",
        r.errors
    );
    assert_eq!(r.sockets.opened, 0);
    server.stop();
}

#[test]
fn a_stop_ends_the_run_with_what_it_counted() {
    let server = target();
    let control = Arc::new(RunControl::new());
    let stopper = Arc::clone(&control);
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        stopper.stop();
    });
    let r = run(
        &SocketConfig {
            url: ws_url(&server, "/ws?delay=5ms"),
            sockets: Some(4),
            duration_s: Some(30.0),
            ..SocketConfig::default()
        },
        control,
    )
    .expect("runs");
    let _ = t.join();
    assert!(r.interrupted);
    assert!(r.duration_s < 5.0, "{}", r.duration_s);
    assert_eq!(r.messages.books.sent, server.stats().ws_received);
    assert_eq!(r.messages.books.answered, r.messages.books.sent);
    server.stop();
}

#[test]
fn wss_runs_over_tls_with_the_engines_trust_options() {
    let dir = TempDir::new("wss");
    let cert = self_signed(&dir.0, "server");
    let server = Target::start(TargetConfig {
        threads: Some(1),
        tls: Some(cert.clone()),
        ..TargetConfig::default()
    })
    .expect("target starts");
    let url = format!("wss://{}/ws?delay=5ms", server.local_addr());
    let wss = |edit: &dyn Fn(&mut SocketConfig)| {
        let mut c = SocketConfig {
            url: url.clone(),
            sockets: Some(3),
            messages: Some(60),
            ..SocketConfig::default()
        };
        edit(&mut c);
        run(&c, Arc::new(RunControl::new()))
    };
    // Not trusted: one line in words before any load, as for https.
    let err = wss(&|_| {}).expect_err("an untrusted certificate");
    assert!(matches!(err, EngineError::Unreachable(_)), "{err:?}");
    assert!(err.to_string().contains("TLS handshake with"), "{err}");
    assert!(err.to_string().contains("--cacert"), "{err}");
    assert_eq!(server.stats().ws_sockets, 0);
    for (label, r) in [
        (
            "pinned by --cacert",
            wss(&|c| c.ca_file = Some(cert.cert.display().to_string())),
        ),
        ("--insecure", wss(&|c| c.insecure = true)),
    ] {
        let r = r.expect(label);
        assert_eq!(r.errors_total, 0, "{label}: {:?}", r.errors);
        assert_eq!(
            (r.messages.books.sent, r.messages.books.answered),
            (60, 60),
            "{label}"
        );
        assert!(
            not_before(r.latency_ms.min, 5.0),
            "{label}: {}",
            r.latency_ms.min
        );
    }
    let seen = server.stats();
    assert_eq!(seen.ws_sockets, 6, "three sockets a run, over TLS");
    assert_eq!((seen.ws_received, seen.ws_sent), (120, 120));
    server.stop();
}

#[test]
fn stagger_spreads_the_closed_models_first_messages() {
    let server = target();
    // 20 sockets, a 200 ms echo, their first messages spread over 200 ms: the echoes come
    // back spread too, so the run sends (about) 20 messages every 200 ms, one every 10 ms.
    let r = go(SocketConfig {
        url: ws_url(&server, "/ws?delay=200ms"),
        sockets: Some(20),
        messages: Some(20),
        stagger_s: Some(0.2),
        ..SocketConfig::default()
    });
    assert_eq!((r.messages.books.sent, r.messages.books.answered), (20, 20));
    assert_eq!(server.stats().ws_received, 20);
    // All 20 at once would have sent them within a few ms of the start; spread over 200 ms,
    // the last leaves 190 ms in (the window a message count ends the rates at).
    assert!(
        r.duration_s >= 0.18,
        "last send {:.3} s in: the first sends were not spread",
        r.duration_s
    );
    assert!(not_before(r.latency_ms.min, 200.0), "{}", r.latency_ms.min);
    server.stop();
}

/// not_before says a round trip's reported minimum is no shorter than the echo's delay. The
/// histogram keeps 3 significant digits and reports a bucket's lowest value, so a round trip
/// of 200.01 ms reads 199.936 ms (a 128 µs bucket): the bound allows that 0.1 %, no more.
fn not_before(min_ms: f64, delay_ms: f64) -> bool {
    min_ms >= delay_ms * (1.0 - 1e-3)
}
