//! Contention mode against a real server: N closed-loop clients get X(N) = N / (S·f(N)) with
//! f(N) = 1 + σ(N − 1) + κN(N − 1), rising to the peak at N* = √((1 − σ)/κ) and falling past
//! it, each request taking S·f(N) (Little's law); open-loop arrivals past the peak collapse
//! the server, and it stays collapsed when the load drops back.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::within;
use redline_target::{Contention, Target, TargetConfig, TargetError};

/// The reference example: S = 10 ms, κ = 0.01, σ = 0: peak 526 req/s at N = 10.
fn reference() -> Contention {
    Contention {
        service: Duration::from_millis(10),
        crosstalk: 0.01,
        serial: 0.0,
    }
}

/// ONE_AT_A_TIME: the timed tests take turns. Run side by side (the test harness's threads
/// on a 2-core box), one's clients and server take the CPU the other's ± 5 % assumes: a full
/// `cargo test` once failed `closed_loop_throughput_follows_the_usl`, which passed alone.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    // A test that failed holding it poisons it; the next still runs alone.
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn start(model: Contention) -> Target {
    Target::start(TargetConfig {
        threads: Some(2),
        contention: Some(model),
        ..TargetConfig::default()
    })
    .expect("target starts")
}

/// At the power optimum (6), the peak (10) and past it (20). Tolerance: a client's turnaround
/// z (answer written late, client thread woken late: ≈ 0.1 ms, up to ~1 ms on a loaded box)
/// leaves one fewer in service for z out of each S·f(N) ≥ 13 ms, and X moves by
/// d ln X / d ln N = 1 − N f'(N)/f(N) of that share: 0.49 at 6 users, 0 at the peak, −0.9 at
/// 20, so ≤ 4 % at 6 users with z = 1 ms; the window edges cost at most N answers out of
/// ≥ 800. 5 % holds both.
#[test]
fn closed_loop_throughput_follows_the_usl() {
    let _turn = one_at_a_time();
    let model = reference();
    for users in [6usize, 10, 20] {
        let target = start(model);
        let load = common::closed_loop(
            &target,
            users,
            Duration::from_millis(200),
            Duration::from_secs(2),
            "/",
        );
        let stats = target.stats();
        let want = model.throughput(users as f64);
        let took = model.service.as_secs_f64() * model.slowdown(users as f64);
        eprintln!(
            "{users} users: {:.1} req/s (want {want:.1}), mean {:?} (want {took:.4} s), {stats:?}",
            load.per_second(),
            load.mean()
        );
        assert_eq!(load.total_refused, 0);
        assert!(
            within(load.per_second(), want, 0.05),
            "{users} users: {:.1} req/s, want {want:.1} ± 5%",
            load.per_second()
        );
        assert!(
            within(load.mean().as_secs_f64(), took, 0.05),
            "{users} users: mean {:?}, want {took} s ± 5%",
            load.mean()
        );
        // What the server saw: every request it counted was served, never more than N at
        // once, and all N were in service together.
        assert_eq!(stats.contention_served, load.total_ok);
        assert_eq!(stats.requests, load.total_ok);
        assert_eq!(stats.contention_peak, users as u64);
        assert_eq!(stats.contention_busy, 0);
    }
}

/// Past the peak throughput falls: 20 users get less than 10 do (the retrograde region a
/// capacity search must name), by more than the tolerances above.
#[test]
fn past_the_peak_throughput_falls() {
    let _turn = one_at_a_time();
    let model = reference();
    let peak = model.peak_users().expect("a peak");
    assert!((peak - 10.0).abs() < 1e-9);
    assert!(model.throughput(20.0) < 0.85 * model.throughput(peak));
    assert!(model.throughput(4.0) < 0.70 * model.throughput(peak));
}

/// open_loop sends `rate` requests a second for `span`, each on a new connection that is kept
/// open and never read (the clients of an open model do not wait), and returns the streams.
fn open_loop(target: &Target, rate: f64, span: Duration) -> Vec<TcpStream> {
    let gap = Duration::from_secs_f64(1.0 / rate);
    let start = Instant::now();
    let mut streams = Vec::new();
    let mut next = start;
    while next < start + span {
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let mut stream = TcpStream::connect(target.local_addr()).expect("connect");
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            .expect("send");
        streams.push(stream);
        next += gap;
    }
    streams
}

/// The metastable failure: 900 req/s (past the 526 req/s peak) for 1 s piles requests up
/// until nearly nothing completes; dropping to 300 req/s (sustainable from empty: the stable
/// balance is n ≈ 3.2) does not recover it: more arrive than depart, so the crowd keeps
/// growing. A healthy server at 300 req/s, for contrast, keeps up.
#[test]
fn open_loop_collapses_past_the_peak_and_stays_collapsed() {
    let _turn = one_at_a_time();
    let model = reference();
    let healthy = start(model);
    let calm = open_loop(&healthy, 300.0, Duration::from_secs(1));
    // Answers are due S·f(n) after the last send; allow 0.5 s for a loaded machine.
    let caught_up = common::wait_until(Duration::from_millis(500), || {
        healthy.stats().contention_busy == 0
    });
    let calm_stats = healthy.stats();
    eprintln!("healthy at 300 req/s: {calm_stats:?}");
    assert!(caught_up, "a healthy server keeps up at 300 req/s");
    assert_eq!(calm_stats.contention_served, calm.len() as u64);
    // The stable balance is n ≈ 3.2; a sender descheduled for tens of ms catches up in a burst
    // (peak 27 seen on a fresh-clone CI run, all 301 served, none waiting): the collapse below
    // holds over 300 in service, so 60 still tells the two apart.
    assert!(calm_stats.contention_peak < 60, "{calm_stats:?}");
    drop(calm);
    healthy.stop();

    let target = start(model);
    let storm = open_loop(&target, 900.0, Duration::from_secs(1));
    let after_storm = target.stats();
    let after = open_loop(&target, 300.0, Duration::from_secs(1));
    let later = target.stats();
    eprintln!("after 1 s at 900 req/s: {after_storm:?}\nthen 1 s at 300 req/s: {later:?}");
    let served = later.contention_served - after_storm.contention_served;
    // Collapsed: hundreds in service, each slowed by f(n) > 1000; fewer than a third of the
    // 300 req/s offered completed in the second after, and the crowd grew.
    assert!(after_storm.contention_busy > 300, "{after_storm:?}");
    assert!(
        served < 100,
        "{served} completed in 1 s at 300 req/s offered"
    );
    assert!(later.contention_busy > after_storm.contention_busy);
    let sent = (storm.len() + after.len()) as u64;
    assert!(
        common::wait_until(Duration::from_secs(2), || target.stats().requests == sent),
        "the server saw every request sent: {} of {sent}",
        target.stats().requests
    );
    drop((storm, after));
    target.stop();
}

#[test]
fn bad_contention_is_a_one_line_error() {
    let cases: &[(TargetConfig, &str)] = &[
        (
            TargetConfig {
                contention: Some(Contention {
                    crosstalk: -1.0,
                    ..reference()
                }),
                ..TargetConfig::default()
            },
            "contention: crosstalk must be between 0 and 1, got -1",
        ),
        (
            TargetConfig {
                contention: Some(reference()),
                capacity: Some(redline_target::Capacity {
                    slots: 4,
                    service: Duration::from_millis(10),
                }),
                ..TargetConfig::default()
            },
            "contention: choose capacity mode or contention, not both",
        ),
    ];
    for (cfg, want) in cases {
        let err = Target::start(cfg.clone()).expect_err("refused");
        assert!(matches!(err, TargetError::Contention(_)));
        assert_eq!(err.to_string(), *want);
    }
}
