//! End-to-end runs of the engine against an in-test server on 127.0.0.1:0. Every run is
//! bounded by a request count or a short duration; asserts compare the engine's report with
//! what the server saw, with tolerances derived from the test's physics.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{start, Mode};
use redline_engine::{run, EngineError, IntervalSnapshot, Report, RunConfig, RunControl};

fn go(cfg: RunConfig) -> (Report, Vec<IntervalSnapshot>) {
    let mut snaps = Vec::new();
    let report = run(cfg, Arc::new(RunControl::new()), &mut |s| {
        snaps.push(s.clone())
    })
    .expect("run succeeds");
    (report, snaps)
}

/// codes adds up the snapshots' answers by status code.
fn codes(snaps: &[IntervalSnapshot]) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for (code, f) in snaps.iter().flat_map(|s| s.statuses.iter()) {
        *out.entry(code.clone()).or_insert(0) += f.count;
    }
    out
}

fn cfg(url: String) -> RunConfig {
    RunConfig {
        url,
        threads: Some(2),
        interval_s: 0.25,
        ..RunConfig::default()
    }
}

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
fn duration_run_waits_for_the_requests_in_flight() {
    let server = start(Mode::Ok {
        delay: Duration::from_millis(2),
    });
    let (r, _) = go(RunConfig {
        connections: 4,
        duration_s: Some(0.6),
        ..cfg(server.url("/"))
    });
    // Requests in flight at the end get a grace period, so nothing the server answered is lost.
    assert_eq!(server.requests(), r.requests);
    assert!(r.requests > 0);
    assert!(
        (0.55..0.65).contains(&r.duration_s),
        "duration {}",
        r.duration_s
    );
}

#[test]
fn open_model_grows_the_pool_when_the_server_stalls() {
    // 200 req/s and a 500 ms stall: about 100 requests are held at once, so the pool must
    // grow from its initial connection to ~100 while the stall lasts, keeping sends on time.
    let server = start(Mode::Stall {
        from: Duration::from_millis(300),
        to: Duration::from_millis(800),
    });
    let (r, _) = go(RunConfig {
        rate: Some(200.0),
        duration_s: Some(1.2),
        ..cfg(server.url("/"))
    });
    assert_eq!(
        r.requests,
        server.requests(),
        "the stalled requests finish within the grace"
    );
    assert!(r.connections >= 80, "pool grew to {}", r.connections);
    let g = &r.generator;
    // Each connection added during the stall sends its first hit LATE_SLACK (2 ms) late plus
    // the connect time; nothing should wait for the stall to end.
    let lag = g.max_send_lag_ms.expect("open model");
    assert!(lag < 100.0, "send lag {lag} ms");
    let u = r.uncorrected_latency_ms.expect("open model");
    assert!(
        u.max > 400.0,
        "the server held requests ~500 ms: max {}",
        u.max
    );
}

#[test]
fn fixed_latency_shows_in_the_median() {
    let delay = Duration::from_millis(20);
    let server = start(Mode::Ok { delay });
    let (r, snaps) = go(RunConfig {
        connections: 4,
        requests: Some(80),
        ..cfg(server.url("/"))
    });
    assert_eq!(r.requests, 80);
    // Each status code's latency buckets: nothing at or under 10 ms (every answer took
    // 20 ms or more), everything under the last bound, the sum the mean's.
    let per_code: Vec<_> = snaps.iter().filter_map(|s| s.statuses.get("200")).collect();
    let at = |i: usize| per_code.iter().map(|f| f.buckets[i]).sum::<u64>();
    assert_eq!((at(4), at(15)), (0, 80), "{per_code:?}");
    let sum_ms = per_code.iter().map(|f| f.sum_s).sum::<f64>() * 1000.0;
    assert!(
        (sum_ms / 80.0 - r.latency_ms.mean).abs() < 0.1,
        "mean {} vs the buckets' {}",
        r.latency_ms.mean,
        sum_ms / 80.0
    );
    // The server cannot answer faster than its delay; the slack covers timer granularity
    // and a busy CI box.
    assert!(
        r.latency_ms.p50 >= 20.0 && r.latency_ms.p50 < 30.0,
        "p50 {}",
        r.latency_ms.p50
    );
    assert!(r.latency_ms.min >= 20.0, "min {}", r.latency_ms.min);
}

#[test]
fn in_flight_mean_obeys_littles_law() {
    // Ten VUs against a server that answers in 20 ms: each VU is out all the time but the
    // microseconds between its answer and its next send, so L is just under 10, and L = λW
    // with λ the interval's completions per second and W its mean latency. The VUs start
    // together and the server's delay is exact, so completions come in bursts of ten every
    // 20 ms: an interval holds a whole number of bursts, ±1 of 50 at 1 s (2 %), which is why
    // the intervals are 1 s and not shorter.
    let delay = Duration::from_millis(20);
    let server = start(Mode::Ok { delay });
    let interval = 1.0;
    let (r, snaps) = go(RunConfig {
        connections: 10,
        duration_s: Some(6.0),
        interval_s: interval,
        ..cfg(server.url("/"))
    });
    assert_eq!(r.requests, server.requests(), "server saw what we counted");
    // Whole intervals after the first (connects) and well before the send window closes at
    // 6 s: four of them, of which three are asked for, so one snapshot late or early on a busy
    // box does not leave too few. L is each interval's own; λW is judged over them together,
    // from their measured ends: a window's completions include time spent before it and leave
    // out time of requests still out at its end, and a busy box delays a snapshot by tens of
    // milliseconds, so a single second is off by several percent where several are not.
    let spans: Vec<_> = snaps
        .windows(2)
        .map(|w| (w[0].t_s, &w[1]))
        .filter(|(t0, s)| *t0 >= interval - 0.1 && s.t_s <= 5.5)
        .collect();
    assert!(spans.len() >= 3, "{} steady intervals", spans.len());
    let (mut time, mut done, mut waited, mut area) = (0.0, 0.0, 0.0, 0.0);
    for (t0, s) in &spans {
        let l = s.in_flight_mean;
        assert!((9.5..=10.0 + 1e-9).contains(&l), "t {}: L {l}", s.t_s);
        time += s.t_s - t0;
        done += s.requests as f64;
        waited += s.requests as f64 * s.mean_ms / 1000.0;
        area += l * (s.t_s - t0);
    }
    let (l, lambda_w) = (area / time, done / time * (waited / done));
    assert!(
        (l - lambda_w).abs() <= 0.05 * lambda_w,
        "L {l} vs λW {lambda_w} over {time:.2} s"
    );
}

#[test]
fn open_model_with_a_stalled_server_corrects_for_coordinated_omission() {
    let server = start(Mode::Stall {
        from: Duration::from_millis(500),
        to: Duration::from_millis(1000),
    });
    let rate = 200.0;
    let (r, _) = go(RunConfig {
        rate: Some(rate),
        requests: Some(300),
        max_connections: Some(4),
        ..cfg(server.url("/"))
    });
    assert_eq!(r.requests, 300);
    assert_eq!(server.requests(), 300);
    let corrected = r.latency_ms;
    let uncorrected = r
        .uncorrected_latency_ms
        .expect("open model keeps service time");
    // A third of the hits (100, 5 ms apart) fall due in the 500 ms stall; timed from their
    // intended start the 30 slowest (the top 10%) waited at least 500 - 30 x 5 = 350 ms,
    // while the server served all but the 4 held ones fast. 340: the histogram's precision.
    assert!(corrected.p90 >= 340.0, "corrected p90 {}", corrected.p90);
    assert!(
        uncorrected.p90 < 100.0,
        "uncorrected p90 {}",
        uncorrected.p90
    );
    assert!(corrected.p90 > uncorrected.p90 * 2.0);
    assert!(
        r.generator.late_sends > 0,
        "hits had to wait for a connection"
    );
    assert!(r.connections <= 4, "pool capped, got {}", r.connections);
}

#[test]
fn open_model_paces_at_the_rate() {
    let server = start(Mode::Ok {
        delay: Duration::ZERO,
    });
    let t0 = Instant::now();
    let (r, _) = go(RunConfig {
        rate: Some(400.0),
        requests: Some(200),
        ..cfg(server.url("/"))
    });
    let took = t0.elapsed().as_secs_f64();
    assert_eq!(r.requests, 200);
    assert_eq!(server.requests(), 200);
    // Hit 199 is due at 199/400 s: the run cannot end sooner (hits may leave up to 200 µs
    // early, batched with their neighbours).
    assert!(took >= 199.0 / 400.0 - 0.0002, "took {took}");
    // Nor much later: at half the rate hit 199 would be due at 0.995 s. The run's own clock
    // starts after the preflight, so only scheduling noise separates it from 0.4975 s.
    assert!(
        r.duration_s < 0.75,
        "the run took {} s: paced slower than 400/s",
        r.duration_s
    );
    assert!(r.generator.intended_rate.is_some());
}

#[test]
fn stop_returns_promptly_with_a_report() {
    let server = start(Mode::Ok {
        delay: Duration::from_millis(1),
    });
    let control = Arc::new(RunControl::new());
    let c2 = control.clone();
    let t0 = Instant::now();
    let mut stopped_at = None;
    let r = run(
        RunConfig {
            connections: 4,
            duration_s: Some(30.0),
            interval_s: 0.1,
            ..cfg(server.url("/"))
        },
        control,
        &mut |_| {
            if stopped_at.is_none() {
                c2.stop();
                stopped_at = Some(Instant::now());
            }
        },
    )
    .expect("run");
    let after_stop = stopped_at.map(|s| s.elapsed()).unwrap_or_default();
    assert!(r.interrupted);
    assert!(r.requests > 0);
    assert!(
        after_stop < Duration::from_secs(2),
        "stopping took {after_stop:?}"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "the 30 s run was cut short"
    );
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
fn closed_stages_ramp_connections_up_and_down() {
    let server = start(Mode::Ok {
        delay: Duration::from_millis(2),
    });
    let stages = vec![
        redline_engine::Stage {
            duration_s: 0.4,
            target: 6.0,
        },
        redline_engine::Stage {
            duration_s: 0.4,
            target: 6.0,
        },
        redline_engine::Stage {
            duration_s: 0.4,
            target: 0.0,
        },
    ];
    let (r, snaps) = go(RunConfig {
        stages: Some(stages),
        interval_s: 0.2,
        ..cfg(server.url("/"))
    });
    assert_eq!(r.connections, 6);
    assert!(
        r.connects <= 6,
        "each VU keeps its connection, got {}",
        r.connects
    );
    let peak = snaps
        .iter()
        .map(|s| s.active_connections)
        .max()
        .unwrap_or(0);
    assert_eq!(peak, 6, "all VUs active on the plateau: {snaps:?}");
    let first = snaps.first().map_or(0, |s| s.active_connections);
    assert!(first < 6, "ramping up from 0, first interval had {first}");
    assert!(
        (1.1..2.5).contains(&snaps.last().map_or(0.0, |s| s.t_s)),
        "ends with the stages"
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
fn resends_on_an_idle_closed_connection_are_counted_and_never_repeat_a_post() {
    // 20 req/s on one connection against a server that closes connections idle for 10 ms:
    // every kept-alive connection is closed under the next request.
    for (method, idempotent) in [("GET", true), ("POST", false)] {
        let server = start(Mode::IdleClose {
            after: Duration::from_millis(10),
        });
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
        assert!(
            server.stale() > 0,
            "{method}: the server closed idle connections"
        );
        assert_eq!(
            server.requests(),
            r.requests,
            "{method}: every answer the server gave is counted once"
        );
        if idempotent {
            // Each request the server got on a closed connection was sent again, and counted.
            assert_eq!(r.retries, server.stale(), "{method}: {r:?}");
            assert_eq!(
                (r.requests, r.errors_total),
                (10, 0),
                "{method}: {:?}",
                r.errors
            );
        } else {
            // A POST the server may have received is not repeated: it fails as a reset.
            assert_eq!(r.retries, 0, "{method}");
            assert_eq!(r.errors.reset, server.stale(), "{method}: {:?}", r.errors);
            assert_eq!(r.errors_total, r.errors.reset, "{method}: {:?}", r.errors);
        }
    }
}

#[test]
fn a_start_instant_holds_the_load_until_the_wall_clock_reaches_it() {
    // Two runs told to start 0.6 s from now (a cluster's injectors given one instant) send
    // nothing before it: the server stamps each connection's first request, and none is
    // earlier than the instant; both start within a few tens of milliseconds of it.
    let seen = Arc::new(common::Seen::tracking());
    let server = common::start_killable(
        0,
        Mode::Ok {
            delay: Duration::ZERO,
        },
        seen.clone(),
    );
    let lead = Duration::from_millis(600);
    let at = std::time::SystemTime::now() + lead;
    let at_s = at
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs_f64();
    let called = Instant::now();
    let runs: Vec<_> = (0..2)
        .map(|_| {
            let url = server.url("/");
            std::thread::spawn(move || {
                go(RunConfig {
                    connections: 2,
                    requests: Some(200),
                    preflight: false,
                    start_at_unix_s: Some(at_s),
                    ..cfg(url)
                })
            })
        })
        .collect();
    for r in runs {
        let (report, _) = r.join().expect("run thread");
        assert_eq!(report.requests, 200);
    }
    let firsts = seen.first_requests();
    assert_eq!(firsts.len(), 4, "two connections per run");
    let due = called + lead;
    let earliest = firsts.iter().min().copied().expect("requests seen");
    let latest = firsts.iter().max().copied().expect("requests seen");
    // Instant and SystemTime are read a few microseconds apart: allow 5 ms.
    assert!(
        earliest + Duration::from_millis(5) >= due,
        "a request went out {:?} before the start instant",
        due.saturating_duration_since(earliest)
    );
    assert!(
        latest.saturating_duration_since(due) < Duration::from_millis(300),
        "the last run started {:?} after the instant",
        latest.saturating_duration_since(due)
    );
    assert_eq!(seen.requests.load(std::sync::atomic::Ordering::SeqCst), 400);
}
