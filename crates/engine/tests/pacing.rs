//! End-to-end runs of the engine against an in-test server on 127.0.0.1:0: how the load
//! models pace and time the load (durations, the open model's rate and pool, stages, a
//! scheduled start, a stop, latency and the time in flight). Every run is bounded by a
//! request count or a short duration; asserts compare the engine's report with what the
//! server saw, with tolerances derived from the test's physics. The report's books are in
//! `run.rs`.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::runs::{cfg, go};
use common::{start, Mode};
use redline_engine::{run, RunConfig, RunControl};

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
        waited += s.requests as f64 * s.latency.mean_ms / 1000.0;
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
