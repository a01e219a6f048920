//! The rate limit against a real server: a token bucket of R a second and B deep lets exactly
//! R a second through under any overload (after its first B), refuses the rest at once with
//! 503 (or the status asked for) and `Retry-After`, and counts both as the clients saw them.

mod common;

use std::time::Duration;

use common::{within, Client};
use redline_target::{Capacity, RateLimit, Target, TargetConfig, TargetError};

fn start(limit: RateLimit, capacity: Option<Capacity>) -> Target {
    Target::start(TargetConfig {
        threads: Some(2),
        rate_limit: Some(limit),
        capacity,
        ..TargetConfig::default()
    })
    .expect("target starts")
}

/// Hammered by closed-loop clients (refusals come back at once, so they retry at once), the
/// bucket passes R = 500 a second. The 0.3 s warm-up spends the burst, so over the 2 s window
/// at most R·W + 1 pass and, the clients never pausing for long, at least R·W − 1: the window's
/// edges are ±0.1 %; 2 % allows for a client answered just outside it. The server's counts
/// equal the clients', exactly.
#[test]
fn bucket_passes_r_a_second_under_overload() {
    let cases: &[(&str, RateLimit, Option<Capacity>, usize)] = &[
        ("immediate answer", RateLimit::new(500.0, 50), None, 4),
        (
            "in front of capacity",
            RateLimit::new(100.0, 10),
            Some(Capacity {
                slots: 4,
                service: Duration::from_millis(10),
            }),
            8,
        ),
    ];
    for (label, limit, capacity, clients) in cases {
        let target = start(*limit, *capacity);
        let load = common::closed_loop(
            &target,
            *clients,
            Duration::from_millis(300),
            Duration::from_secs(2),
            "/",
        );
        let stats = target.stats();
        eprintln!(
            "{label}: {:.1} req/s accepted (want {}), {} refused, {stats:?}",
            load.per_second(),
            limit.rate,
            load.refused
        );
        assert!(
            within(load.per_second(), limit.rate, 0.02),
            "{label}: {:.1} req/s, want {} ± 2%",
            load.per_second(),
            limit.rate
        );
        assert!(load.refused > load.ok, "{label}: overloaded");
        assert_eq!(stats.rate_accepted, load.total_ok, "{label}");
        assert_eq!(stats.rate_refused, load.total_refused, "{label}");
        assert_eq!(stats.requests, load.total_ok + load.total_refused);
        let refusal = load.refusal.as_ref().expect("refused");
        assert_eq!(
            (refusal.status, refusal.header("retry-after")),
            (503, Some("1"))
        );
        if capacity.is_some() {
            // Accepted requests went on to the queue; refused ones never reached it.
            assert_eq!(stats.queue_served, stats.rate_accepted);
        }
    }
}

/// The burst passes at once, the next request is refused with the status asked for and the
/// seconds until the next token, rounded up (R = 0.25: 4 s).
#[test]
fn refusals_say_when_to_retry() {
    let cases: &[(RateLimit, u16, &str)] = &[
        (RateLimit::new(0.25, 2), 503, "4"),
        (
            RateLimit {
                status: 429,
                ..RateLimit::new(1.0, 3)
            },
            429,
            "1",
        ),
    ];
    for (limit, status, retry) in cases {
        let target = start(*limit, None);
        let mut client = Client::connect(target.local_addr());
        for i in 0..limit.burst {
            assert_eq!(client.get("/").status, 200, "burst request {i}");
        }
        let refused = client.get("/");
        assert_eq!(refused.status, *status);
        assert_eq!(refused.header("retry-after"), Some(*retry));
        assert_eq!(refused.text(), "rate limited\n");
        // /__stats is never limited.
        assert_eq!(client.get("/__stats").status, 200);
        let stats = target.stats();
        assert_eq!(
            (stats.rate_accepted, stats.rate_refused),
            (u64::from(limit.burst), 1)
        );
    }
}

/// Without a rate limit nothing is counted as accepted or refused.
#[test]
fn without_a_limit_nothing_is_counted() {
    let target = common::start(1);
    assert_eq!(Client::connect(target.local_addr()).get("/").status, 200);
    let stats = target.stats();
    assert_eq!((stats.rate_accepted, stats.rate_refused), (0, 0));
}

#[test]
fn bad_limits_are_one_line_errors() {
    let cases: &[(RateLimit, &str)] = &[
        (
            RateLimit::new(0.0, 1),
            "rate limit: rate must be more than 0 and at most 1e9 a second, got 0",
        ),
        (
            RateLimit::new(10.0, 0),
            "rate limit: burst must be between 1 and 1000000, got 0",
        ),
        (
            RateLimit {
                status: 302,
                ..RateLimit::new(10.0, 1)
            },
            "rate limit: refuse status must be a 4xx or 5xx code, got 302",
        ),
    ];
    for (limit, want) in cases {
        let err = Target::start(TargetConfig {
            rate_limit: Some(*limit),
            ..TargetConfig::default()
        })
        .expect_err("refused");
        assert!(matches!(err, TargetError::RateLimit(_)));
        assert_eq!(err.to_string(), *want);
    }
}
