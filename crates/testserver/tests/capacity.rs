//! Capacity mode against a real server: N slots of service time S make a server that completes
//! N / S requests a second however many clients push, C / S with C < N clients, and whose
//! queued requests wait as Little's law says (mean latency = clients / throughput); with a
//! queue limit Q it sheds the surplus at once (503) and still completes N / S.

mod common;

use std::time::{Duration, Instant};

use common::{wait_until, within, Client, Load};
use redline_target::{Capacity, Target, TargetConfig, TargetError, TargetStats};

fn start_queue(threads: usize, slots: usize, service: Duration) -> Target {
    Target::start(TargetConfig {
        threads: Some(threads),
        capacity: Some(Capacity { slots, service }),
        ..TargetConfig::default()
    })
    .expect("target starts")
}

/// drive runs closed-loop clients against `/` and checks that nothing was refused.
fn drive(target: &Target, clients: usize, warm: Duration, run: Duration) -> Load {
    let load = common::closed_loop(target, clients, warm, run, "/");
    assert_eq!(load.total_refused, 0, "refused: {:?}", load.refusal);
    load
}

/// Throughput is N / S with more clients than slots, C / S with fewer; latency is S when nobody
/// waits and clients / throughput (Little's law) when they queue. Table-driven over loads.
#[test]
fn throughput_and_latency_follow_the_queue() {
    let (slots, service) = (8, Duration::from_millis(10));
    let capacity = slots as f64 / service.as_secs_f64(); // 800 req/s
    let cases: &[(&str, usize, f64)] = &[
        ("fewer clients than slots", 4, 4.0 / service.as_secs_f64()),
        ("as many clients as slots", 8, capacity),
        ("four times the slots", 32, capacity),
    ];
    for (label, clients, want) in cases {
        let target = start_queue(2, slots, service);
        let load = drive(
            &target,
            *clients,
            Duration::from_millis(200),
            Duration::from_millis(1500),
        );
        eprintln!(
            "{label}: {clients} clients, {:.0} req/s (want {want:.0}), mean {:?}, server {:?}",
            load.per_second(),
            load.mean(),
            target.stats()
        );
        assert!(
            within(load.per_second(), *want, 0.10),
            "{label}: {:.0} req/s, want {want:.0} ± 10%",
            load.per_second()
        );
        // Little's law: clients in the system = throughput × time in the system.
        let little = Duration::from_secs_f64(*clients as f64 / want);
        let mean = load.mean().as_secs_f64();
        assert!(
            within(mean, little.as_secs_f64(), 0.15),
            "{label}: mean latency {:?}, want {little:?} ± 15%",
            load.mean()
        );
        assert!(load.mean() >= service, "{label}: served faster than S");
        let stats = target.stats();
        assert!(
            stats.queue_served >= load.ok,
            "{label}: the server served every counted request"
        );
        assert!(stats.queue_busy <= slots as u64, "{label}: never over N");
        if *clients > slots {
            // The surplus clients waited: the server saw them queued.
            assert!(
                stats.queue_peak >= (*clients - slots) as u64 / 2,
                "{label}: peak queue {}",
                stats.queue_peak
            );
        } else {
            assert_eq!(
                stats.queue_peak, 0,
                "{label}: nobody waited, nothing queued"
            );
        }
    }
}

/// Without capacity mode the same 32 clients get far more than 800 req/s (the limit is the
/// mode's, not the machine's) and the queue counters stay at zero.
#[test]
fn without_capacity_nothing_queues() {
    let target = common::start(2);
    let load = drive(&target, 32, Duration::ZERO, Duration::from_millis(500));
    assert!(load.per_second() > 2000.0, "{:.0} req/s", load.per_second());
    let stats = target.stats();
    assert_eq!(
        (stats.queue_served, stats.queue_peak, stats.queue_waiting),
        (0, 0, 0)
    );
}

/// Waiting is first come, first served: with one slot, requests complete in the order they
/// arrived, each one service time after the previous. Client `i` sends only once the server
/// has taken in request `i - 1` (its queue says so), so the arrival order is an event, not a
/// race between threads started a few milliseconds apart.
#[test]
fn one_slot_serves_in_arrival_order() {
    let service = Duration::from_millis(30);
    let target = start_queue(2, 1, service);
    let addr = target.local_addr();
    let start = Instant::now();
    let mut handles = Vec::new();
    for i in 0..4u32 {
        let arrived = |s: TargetStats| s.queue_busy + s.queue_waiting + s.queue_served;
        assert!(
            wait_until(Duration::from_secs(10), || arrived(target.stats())
                == u64::from(i)),
            "request {i} not taken in: {:?}",
            target.stats()
        );
        handles.push(std::thread::spawn(move || {
            let mut client = Client::connect(addr);
            assert_eq!(client.get("/").status, 200);
            (i, start.elapsed())
        }));
    }
    let mut finished: Vec<(u32, Duration)> = handles
        .into_iter()
        .map(|h| h.join().expect("client"))
        .collect();
    finished.sort_by_key(|(_, at)| *at);
    let order: Vec<u32> = finished.iter().map(|(i, _)| *i).collect();
    assert_eq!(order, vec![0, 1, 2, 3], "FIFO: {finished:?}");
    let last = finished[3].1;
    assert!(last >= service * 4, "four services back to back: {last:?}");
    assert_eq!(target.stats().queue_served, 4);
}

/// /__stats reports the queue and never queues itself, even when every slot is taken.
#[test]
fn stats_route_reports_and_skips_the_queue() {
    let target = start_queue(1, 1, Duration::from_millis(300));
    let addr = target.local_addr();
    let busy = std::thread::spawn(move || Client::connect(addr).get("/").status);
    assert!(common::wait_until(Duration::from_secs(5), || {
        target.stats().queue_busy == 1
    }));
    let sent = Instant::now();
    let resp = Client::connect(addr).get("/__stats");
    assert!(sent.elapsed() < Duration::from_millis(200), "stats queued");
    let text = resp.text();
    for field in [
        "\"queue_busy\": 1",
        "\"queue_waiting\": 0",
        "\"queue_served\": 0",
        "\"requests\": 1",
    ] {
        assert!(text.contains(field), "{field} in {text}");
    }
    assert_eq!(busy.join().expect("client"), 200);
    assert_eq!(target.stats().queue_served, 1);
}

#[test]
fn bad_capacities_are_one_line_errors() {
    let no_capacity = Target::start(TargetConfig {
        queue_limit: Some(4),
        ..TargetConfig::default()
    })
    .expect_err("refused");
    assert_eq!(
        no_capacity.to_string(),
        "capacity: a queue limit needs capacity mode (slots and a service time)"
    );
    let cases: &[(usize, Duration, &str)] = &[
        (0, Duration::from_millis(10), "slots must be between 1"),
        (4, Duration::ZERO, "service time must be more than 0"),
    ];
    for (slots, service, want) in cases {
        let err = Target::start(TargetConfig {
            capacity: Some(Capacity {
                slots: *slots,
                service: *service,
            }),
            ..TargetConfig::default()
        })
        .expect_err("refused");
        assert!(matches!(err, TargetError::Capacity(_)));
        let text = err.to_string();
        assert!(
            text.starts_with("capacity: ") && text.contains(want),
            "{text}"
        );
    }
}

/// Load shedding: 16 clients against 4 slots of 20 ms (200 req/s) with Q = 4. The accepted
/// throughput stays N / S; every refusal is an immediate 503 with `Retry-After: 1`; the
/// accepted requests wait as Little's law says for a queue held full (N in service, Q
/// waiting: S·(1 + Q/N) = 40 ms); and the server counted every answer the clients saw.
#[test]
fn queue_limit_sheds_and_keeps_n_over_s() {
    let (slots, service, limit) = (4, Duration::from_millis(20), 4);
    let target = Target::start(TargetConfig {
        threads: Some(2),
        capacity: Some(Capacity { slots, service }),
        queue_limit: Some(limit),
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
    let capacity = slots as f64 / service.as_secs_f64();
    eprintln!(
        "shedding: {:.1} req/s accepted (want {capacity}), {} refused, mean {:?}, {stats:?}",
        load.per_second(),
        load.refused,
        load.mean()
    );
    // Throughput is counted over 2 s: ±1 service per slot at either edge is 2 %; 5 % allows
    // for the clients' own turnaround on a loaded machine.
    assert!(
        within(load.per_second(), capacity, 0.05),
        "{:.1} req/s accepted, want {capacity} ± 5%",
        load.per_second()
    );
    let little = service.as_secs_f64() * (1.0 + limit as f64 / slots as f64);
    assert!(
        within(load.mean().as_secs_f64(), little, 0.15),
        "accepted mean {:?}, want {little} s ± 15%",
        load.mean()
    );
    let refusal = load.refusal.as_ref().expect("some requests were shed");
    assert_eq!(refusal.status, 503);
    assert_eq!(refusal.header("retry-after"), Some("1"));
    // Refusals are immediate: far less than one service time on average.
    let refused_mean = load.refused_latency / u32::try_from(load.refused.max(1)).expect("fits");
    assert!(refused_mean < service / 2, "refused mean {refused_mean:?}");
    // The server's counts are the clients' counts, and nothing is left in the queue.
    assert_eq!(stats.queue_served, load.total_ok);
    assert_eq!(stats.queue_refused, load.total_refused);
    assert_eq!(stats.requests, load.total_ok + load.total_refused);
    assert_eq!((stats.queue_waiting, stats.queue_busy), (0, 0));
}

/// A queue limit below the clients' surplus never refuses when the queue has room: with as
/// many clients as slots plus Q, nobody is shed.
#[test]
fn queue_limit_refuses_nothing_within_q() {
    let (slots, service, limit) = (2, Duration::from_millis(10), 2);
    let target = Target::start(TargetConfig {
        threads: Some(2),
        capacity: Some(Capacity { slots, service }),
        queue_limit: Some(limit),
        ..TargetConfig::default()
    })
    .expect("target starts");
    let load = drive(
        &target,
        slots + limit,
        Duration::ZERO,
        Duration::from_millis(500),
    );
    assert!(load.ok > 0);
    assert_eq!(target.stats().queue_refused, 0);
}
