//! End-to-end runs of the engine against an in-test server on 127.0.0.1:0: the report's
//! books. Every run is bounded by a request count or a short duration; asserts compare the
//! engine's report with what the server saw (answers, errors by class, reconnects, resends,
//! warmup, requests cut off or never sent), with tolerances derived from the test's physics.
//! The load models' pacing and timing are in `pacing.rs`.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::runs::{cfg, codes, go};
use common::{start, Mode};
use redline_engine::{run, EngineError, Report, RunConfig, RunControl};

#[test]
fn closed_model_count_matches_what_the_server_saw() {
    let server = start(Mode::Ok {
        delay: Duration::ZERO,
    });
    let (r, snaps) = go(RunConfig {
        connections: 8,
        requests: Some(3000),
        ..cfg(server.url("/hello?x=1"))
    });
    assert_eq!(r.requests, 3000);
    assert_eq!(server.requests(), 3000, "server saw every request once");
    assert_eq!(r.errors_total, 0);
    assert_eq!(r.status_codes.get("200"), Some(&3000));
    assert_eq!(r.connects, 8, "one keep-alive connection per VU");
    assert_eq!(server.connections(), 8 + 1, "plus the preflight connect");
    assert_eq!(r.per_name["GET /hello"].requests, 3000);
    assert_eq!(
        snaps.iter().map(|s| s.requests).sum::<u64>(),
        3000,
        "the time series adds up"
    );
    assert_eq!(
        r.timeseries, snaps,
        "the report carries the snapshots the callback saw"
    );
    assert_eq!(
        codes(&snaps),
        [("200".to_string(), 3000)].into(),
        "the snapshots' answers by status code add up to the report's"
    );
    assert!(
        snaps
            .iter()
            .all(|s| s.names.is_none() && s.iterations.is_none()),
        "a plain run's one name is the interval itself: no per-name figures"
    );
    assert!(r.latency_ms.min > 0.0 && r.latency_ms.max >= r.latency_ms.p50);
    assert!(
        r.uncorrected_latency_ms.is_none(),
        "closed model: no separate service time"
    );
    assert!(!r.interrupted);
    let json = serde_json::to_value(&r).expect("serialises");
    assert_eq!(json["model"], "closed");
    assert!(json["histograms"]["latency"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
}

#[test]
fn errors_are_classified() {
    let silent = start(Mode::Silent);
    let (r, _) = go(RunConfig {
        connections: 2,
        requests: Some(4),
        timeout_s: 0.2,
        ..cfg(silent.url("/"))
    });
    assert_eq!(
        (r.errors.timeout, r.requests),
        (4, 0),
        "timeouts: {:?}",
        r.errors
    );

    let reset = start(Mode::Reset);
    let (r, _) = go(RunConfig {
        connections: 2,
        requests: Some(6),
        ..cfg(reset.url("/"))
    });
    assert_eq!(r.errors.reset, 6, "resets: {:?}", r.errors);
    assert_eq!(reset.requests(), 6);

    // A reset on a reused keep-alive connection is the server's doing: counted, not retried.
    let reused = start(Mode::ResetReused);
    let (r, _) = go(RunConfig {
        connections: 2,
        requests: Some(20),
        ..cfg(reused.url("/"))
    });
    assert_eq!((r.requests, r.errors.reset), (10, 10), "{:?}", r.errors);
    assert_eq!(reused.requests(), 20);

    let failing = start(Mode::Status(500));
    let (r, snaps) = go(RunConfig {
        connections: 2,
        requests: Some(10),
        ..cfg(failing.url("/"))
    });
    assert_eq!((r.errors.status, r.non_2xx, r.requests), (10, 10, 10));
    assert_eq!(r.status_codes.get("500"), Some(&10));
    assert_eq!(codes(&snaps), [("500".to_string(), 10)].into());

    let port = common::free_port();
    let url = format!("http://127.0.0.1:{port}/");
    let (r, _) = go(RunConfig {
        connections: 2,
        requests: Some(5),
        preflight: false,
        ..cfg(url.clone())
    });
    assert_eq!(r.errors.connect, 5, "refused: {:?}", r.errors);
    match run(
        RunConfig {
            requests: Some(1),
            ..cfg(url)
        },
        Arc::new(RunControl::new()),
        &mut |_| {},
    ) {
        Err(EngineError::Unreachable(msg)) => assert!(msg.contains(&port.to_string()), "{msg}"),
        other => panic!("preflight should fail, got {other:?}"),
    }
}

#[test]
fn reconnects_when_the_server_closes() {
    for (label, mode) in [
        ("connection: close", Mode::Close),
        ("silent close", Mode::Drop),
    ] {
        let server = start(mode);
        let (r, _) = go(RunConfig {
            connections: 2,
            requests: Some(40),
            ..cfg(server.url("/"))
        });
        assert_eq!(
            (r.requests, r.errors_total),
            (40, 0),
            "{label}: {:?}",
            r.errors
        );
        assert_eq!(
            server.requests(),
            40,
            "{label}: no request sent twice to the server"
        );
        // Each connection serves one response; a silently closed one is found dead (EOF)
        // on reuse and the request is resent on a fresh connection, not counted as an error.
        assert!(r.connects >= 40, "{label}: connects {}", r.connects);
        assert_eq!(
            server.connections(),
            r.connects + 1,
            "{label}: plus the preflight"
        );
    }
}

#[test]
fn warmup_is_flagged_and_left_out_of_the_summary() {
    let server = start(Mode::Ok {
        delay: Duration::from_millis(1),
    });
    let (r, snaps) = go(RunConfig {
        connections: 2,
        duration_s: Some(1.0),
        warmup_s: 0.5,
        ..cfg(server.url("/"))
    });
    let warm: u64 = snaps.iter().filter(|s| s.warmup).map(|s| s.requests).sum();
    assert!(
        snaps.first().is_some_and(|s| s.warmup),
        "first interval is warmup"
    );
    assert!(
        snaps.last().is_some_and(|s| !s.warmup),
        "last interval is measured"
    );
    assert!(warm > 0);
    assert!(
        r.requests < server.requests(),
        "warmup requests are not in the summary"
    );
    assert!(
        (0.45..1.0).contains(&r.duration_s),
        "measured {} s after warmup",
        r.duration_s
    );
}

#[test]
fn timeouts_count_from_each_requests_own_send() {
    // Back-to-back 120 ms requests with a 200 ms timeout: the lane's one timer, armed for the
    // first request, fires in the middle of later ones and must re-arm, not time them out.
    let server = start(Mode::Ok {
        delay: Duration::from_millis(120),
    });
    let (r, _) = go(RunConfig {
        connections: 1,
        threads: Some(1),
        requests: Some(6),
        timeout_s: 0.2,
        ..cfg(server.url("/"))
    });
    assert_eq!((r.requests, r.errors.timeout), (6, 0), "{:?}", r.errors);
    assert_eq!(r.connects, 1, "no timeout, so no reconnect");
}

/// assert_books checks the report's accounting: every request the run intended is answered,
/// failed, unfinished or unsent, exactly once.
fn assert_books(r: &Report, label: &str) {
    // A failed check, like an error status, is an answered request (in `requests`).
    let transport = r.errors_total - r.errors.status - r.errors.check;
    assert_eq!(
        r.requests + transport + r.unfinished + r.unsent,
        r.intended,
        "{label}: requests {} + transport failures {transport} + unfinished {} + unsent {} \
         != intended {}",
        r.requests,
        r.unfinished,
        r.unsent,
        r.intended
    );
}

/// A server that answers `answered` requests and then holds every later one for longer than
/// the end-of-run grace (5 s; the timeout is longer): the held requests are neither answers
/// nor errors, and must still be in the report, at their age at the cut-off.
fn stall_at_the_end(label: &str, config: RunConfig, answered: u64) -> Report {
    let server = start(Mode::HangAfter(answered));
    let t0 = Instant::now();
    let (r, _) = go(RunConfig {
        duration_s: Some(1.0),
        timeout_s: 30.0,
        ..RunConfig {
            url: server.url("/"),
            ..config
        }
    });
    let took = t0.elapsed();
    assert_eq!(r.requests, answered, "{label}");
    assert!(r.unfinished > 0, "{label}: nothing held? {r:?}");
    assert_eq!(
        server.requests(),
        r.requests + r.unfinished,
        "{label}: every request the server received is in the report"
    );
    assert_books(&r, label);
    // Held from before the 1 s send window closed until the cut-off 5 s after it.
    assert!(
        r.latency_ms.max >= 5_000.0 && r.latency_ms.max < took.as_secs_f64() * 1000.0,
        "{label}: the held requests are in the tail at their age: max {} ms",
        r.latency_ms.max
    );
    assert!(
        r.generator
            .verdict
            .contains(&format!("{} requests were unfinished", r.unfinished)),
        "{label}: {}",
        r.generator.verdict
    );
    r
}

#[test]
fn closed_run_counts_requests_stalled_past_the_grace() {
    let r = stall_at_the_end(
        "closed",
        RunConfig {
            connections: 4,
            ..cfg(String::new())
        },
        200,
    );
    assert_eq!((r.unfinished, r.unsent), (4, 0), "one held request per VU");
    assert_eq!(r.intended, 204);
}

#[test]
fn open_run_counts_requests_stalled_past_the_grace() {
    // 200 req/s for 1 s: hits 0-99 are answered, each later one holds a connection until the
    // cap of 50 is reached (at ~0.75 s); the hits due after that have no connection to go out on.
    let r = stall_at_the_end(
        "open",
        RunConfig {
            rate: Some(200.0),
            max_connections: Some(50),
            ..cfg(String::new())
        },
        100,
    );
    assert_eq!(r.intended, 200, "the schedule: 200 req/s for 1 s");
    assert_eq!((r.unfinished, r.unsent), (50, 50));
    assert_eq!(r.connections, 50);
    assert_eq!(r.generator.limit, redline_engine::report::Limit::Pool);
}

#[test]
fn open_run_with_too_small_a_pool_counts_the_hits_never_sent() {
    // 400 req/s against 50 ms responses needs ~20 connections; 4 carry ~80 req/s.
    let server = start(Mode::Ok {
        delay: Duration::from_millis(50),
    });
    let (r, _) = go(RunConfig {
        rate: Some(400.0),
        duration_s: Some(1.0),
        max_connections: Some(4),
        ..cfg(server.url("/"))
    });
    assert_eq!(r.intended, 400, "the schedule: 400 req/s for 1 s");
    assert_books(&r, "pool cap");
    assert_eq!(server.requests(), r.requests + r.unfinished);
    assert_eq!(r.errors_total, 0, "{:?}", r.errors);
    // 4 connections x 1 s / 50 ms = 80 answered at most; the rest were never sent.
    assert!(
        (60..=84).contains(&r.requests),
        "answered {} (4 connections at 50 ms)",
        r.requests
    );
    assert!(r.unsent >= 300, "unsent {}", r.unsent);
    assert_eq!(r.connections, 4, "the peak of the sum across threads");
    let g = &r.generator;
    assert_eq!(
        g.limit,
        redline_engine::report::Limit::Pool,
        "{}",
        g.verdict
    );
    assert!(!g.saturated, "not the generator: {}", g.verdict);
    assert!(
        g.verdict.contains(&format!(
            "{} hits due before the end were never sent",
            r.unsent
        )),
        "{}",
        g.verdict
    );
    // Never-sent hits are in the latency figures at their age at the end: the median hit
    // waited hundreds of milliseconds at least.
    assert!(r.latency_ms.p50 > 200.0, "p50 {}", r.latency_ms.p50);
}

#[test]
fn a_connection_closed_as_a_request_arrives_resends_only_what_is_idempotent() {
    // The server answers each connection's first request and closes (FIN) on its second,
    // unanswered: the close crosses the request, which no look before sending can see.
    for (method, idempotent) in [("GET", true), ("POST", false)] {
        let server = start(Mode::CloseReused);
        let (r, _) = go(RunConfig {
            method: method.to_string(),
            rate: Some(20.0),
            requests: Some(10),
            max_connections: Some(1),
            threads: Some(1),
            ..cfg(server.url("/"))
        });
        assert_books(&r, method);
        assert_eq!(r.intended, 10, "{method}");
        // The run can end before the server has read the last request it closed under.
        let stale = r.retries + r.errors.reset;
        let waited = Instant::now();
        while server.stale() < stale && waited.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            server.requests(),
            r.requests,
            "{method}: every answer the server gave is counted once"
        );
        if idempotent {
            // Each request the server got on a closing connection was sent again, and counted.
            assert_eq!((r.retries, server.stale()), (9, 9), "{method}: {r:?}");
            assert_eq!(
                (r.requests, r.errors_total),
                (10, 0),
                "{method}: {:?}",
                r.errors
            );
        } else {
            // A POST the server may have received is not repeated: it fails as a reset.
            assert_eq!(r.retries, 0, "{method}");
            assert_eq!(
                (r.requests, r.errors.reset),
                (5, 5),
                "{method}: {:?}",
                r.errors
            );
            assert_eq!(server.stale(), 5, "{method}");
            assert_eq!(r.errors_total, r.errors.reset, "{method}: {:?}", r.errors);
        }
    }
}

#[test]
fn a_connection_the_server_closed_while_idle_is_replaced_before_sending() {
    // A server that closes a kept-alive connection idle for 10 ms (a keep-alive timeout, as
    // uvicorn's 5 s), and requests 62 ms and 250 ms apart: each finds its connection closed.
    // Under IDLE_PEEK (100 ms) tokio's readiness tells; past it, a peek at the socket. Without
    // either look, every request was written into the close (a POST then failed as a reset).
    for (method, rate, requests) in [("POST", 16.0, 16u64), ("POST", 4.0, 8), ("GET", 4.0, 8)] {
        let label = format!("{method} at {rate}/s");
        let server = start(Mode::IdleClose {
            after: Duration::from_millis(10),
        });
        let (r, _) = go(RunConfig {
            method: method.to_string(),
            rate: Some(rate),
            requests: i64::try_from(requests).ok(),
            max_connections: Some(1),
            threads: Some(1),
            ..cfg(server.url("/"))
        });
        assert_books(&r, &label);
        let stale = r.retries + r.errors.reset;
        let waited = Instant::now();
        while server.stale() < stale && waited.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(server.requests(), r.requests, "{label}: each answer once");
        // Found before sending: at most a quarter met the close (every one did before the
        // look; none does on an idle machine).
        assert!(
            server.stale() * 4 <= server.idle_closed(),
            "{label}: {} of {} idle closes met by a request",
            server.stale(),
            server.idle_closed()
        );
        assert!(
            server.idle_closed() + 1 >= requests,
            "{label}: the server closed the connection between requests: {} closes",
            server.idle_closed()
        );
        // A request that still met the close (a server descheduled past the gap closes as it
        // arrives) is resent if idempotent, a reset if not, never both.
        assert_eq!(stale, server.stale(), "{label}: {r:?}");
        assert_eq!(r.errors_total, r.errors.reset, "{label}: {:?}", r.errors);
        assert_eq!(r.requests + r.errors.reset, requests, "{label}");
    }
}
