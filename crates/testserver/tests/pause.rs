//! Pauses against a real server: a capacity server that stops for D out of every P completes
//! (N / S)·(1 − D / P) requests a second, and a request that meets a pause waits it out.

mod common;

use std::time::Duration;

use common::within;
use redline_target::{Capacity, Pause, Target, TargetConfig, TargetError};

/// 4 slots of 10 ms (400 req/s) pausing 50 ms of every 200 ms: 300 req/s. The 2 s window is
/// ten whole periods, so the only error is at its edges (at most N answers either side, 0.7 %)
/// plus the clients' turnaround, which the queue hides (16 clients for 4 slots).
#[test]
fn pauses_lower_capacity_by_their_share() {
    let capacity = Capacity {
        slots: 4,
        service: Duration::from_millis(10),
    };
    let pause = Pause::parse("50ms/200ms").expect("valid");
    let target = Target::start(TargetConfig {
        threads: Some(2),
        capacity: Some(capacity),
        pause: Some(pause),
        ..TargetConfig::default()
    })
    .expect("target starts");
    let load = common::closed_loop(
        &target,
        16,
        Duration::from_millis(300),
        Duration::from_secs(2),
        "/",
    );
    let stats = target.stats();
    let want = capacity.per_second() * pause.serving_share();
    eprintln!(
        "paused: {:.1} req/s (want {want:.1}), max {:?}, {stats:?}",
        load.per_second(),
        load.max_latency
    );
    assert_eq!(load.total_refused, 0);
    assert!(
        within(load.per_second(), want, 0.03),
        "{:.1} req/s, want {want:.1} ± 3%",
        load.per_second()
    );
    // Some request waited through a whole pause on top of its queue: 16 clients over 4 slots
    // is 4 services of queue (40 ms), and a pause adds 50 ms to whoever meets it.
    assert!(
        load.max_latency >= pause.hold + capacity.service * 4,
        "max latency {:?}",
        load.max_latency
    );
    assert_eq!(stats.queue_served, load.total_ok);
    assert_eq!(stats.requests, load.total_ok);
}

#[test]
fn bad_pauses_are_one_line_errors() {
    let capacity = Capacity {
        slots: 1,
        service: Duration::from_millis(1),
    };
    let pause = |hold: u64, every: u64| Pause {
        hold: Duration::from_millis(hold),
        every: Duration::from_millis(every),
    };
    let cases: &[(Option<Capacity>, Pause, &str)] = &[
        (
            None,
            pause(50, 1000),
            "pause: pauses need capacity mode (slots and a service time)",
        ),
        (
            Some(capacity),
            pause(1000, 1000),
            "pause: need 0 < HOLD < EVERY <= 1h, got 1s/1s",
        ),
        (
            Some(capacity),
            pause(0, 1000),
            "pause: need 0 < HOLD < EVERY <= 1h, got 0ns/1s",
        ),
    ];
    for (capacity, pause, want) in cases {
        let err = Target::start(TargetConfig {
            capacity: *capacity,
            pause: Some(*pause),
            ..TargetConfig::default()
        })
        .expect_err("refused");
        assert!(matches!(err, TargetError::Pause(_)));
        assert_eq!(err.to_string(), *want);
    }
}
