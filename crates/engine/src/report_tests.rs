use std::time::Duration;

use super::*;
use crate::config::RunConfig;
use crate::totals::Totals;

fn checked(json: &str) -> Checked {
    RunConfig::from_json(json)
        .and_then(|c| c.check())
        .expect("valid config")
}

fn facts<'a>(
    cfg: &'a Checked,
    names: &'a [String],
    sends: u64,
    worker_cpu_s: f64,
    peak: u64,
) -> RunFacts<'a> {
    let mut totals = Totals::new(0, 1, cfg.model == Model::Open);
    totals.sends = sends;
    totals.requests = sends;
    totals.peak_connections = peak;
    RunFacts {
        cfg,
        names,
        totals,
        process_cpu: CpuTimes {
            user: Duration::from_millis(100),
            sys: Duration::from_millis(300),
        },
        worker_cpu: CpuTimes {
            user: Duration::ZERO,
            sys: Duration::from_secs_f64(worker_cpu_s),
        },
        wall_s: 10.0,
        measured_s: 10.0,
        after_end_s: 0.0,
        intended_hits: (cfg.model == Model::Open).then_some(10_000.0),
        interrupted: false,
        timeseries: Vec::new(),
        outages: Vec::new(),
    }
}

#[test]
// long: a table of cases, one run's facts and verdict each.
fn generator_verdict_says_who_the_numbers_describe() {
    let open = checked(
        r#"{"url":"http://h/","rate":1000,"duration_s":10,"threads":2,"max_connections":50}"#,
    );
    let closed = checked(r#"{"url":"http://h/","connections":10,"duration_s":10,"threads":2}"#);
    let names = vec!["GET /".to_string()];
    use Limit::{Generator as Gen, Pool, Server};
    // label, config, sends, worker cpu s (of 2 threads x 10 s), hits waited at the pool cap,
    // limit, verdict has
    let cases = [
        (
            "open, on schedule",
            &open,
            9_990,
            2.0,
            false,
            Server,
            "kept up",
        ),
        (
            "open, 94% sent, pool full",
            &open,
            9_400,
            2.0,
            true,
            Pool,
            "limited by the connection pool, not the generator: all 50 connections were busy",
        ),
        (
            "open, behind on CPU",
            &open,
            8_000,
            19.0,
            false,
            Gen,
            "fell behind",
        ),
        (
            "open, behind on CPU with the pool full",
            &open,
            8_000,
            19.0,
            true,
            Gen,
            "95% busy",
        ),
        (
            "open, behind with idle CPU and a free pool",
            &open,
            8_000,
            2.0,
            false,
            Gen,
            "not run in time",
        ),
        (
            "closed, idle generator",
            &closed,
            50_000,
            4.0,
            false,
            Server,
            "kept up",
        ),
        (
            "closed, busy generator",
            &closed,
            50_000,
            18.5,
            false,
            Gen,
            "92% busy",
        ),
    ];
    for (label, cfg, sends, cpu, capped, limit, says) in cases {
        let mut f = facts(cfg, &names, sends, cpu, 50);
        f.totals.cap_reached = capped;
        f.totals.late_at_cap = if capped { 100 } else { 0 };
        let r = build_report(f);
        let g = &r.generator;
        assert_eq!(g.limit, limit, "{label}: {}", g.verdict);
        assert_eq!(g.saturated, limit == Gen, "{label}: {}", g.verdict);
        assert!(
            g.verdict.contains(says),
            "{label}: {:?} lacks {says:?}",
            g.verdict
        );
        assert_eq!(
            g.verdict.contains("send lag"),
            cfg.model == Model::Open && limit == Server,
            "{label}: send lag only where there is an intended send: {}",
            g.verdict
        );
        // The figures are computed from the facts, each from its own source: busy from the
        // workers' CPU over threads x wall (2 x 10 s), cost per request from the process's.
        assert!(
            (g.busy_ratio - cpu / 20.0).abs() < 1e-9,
            "{label}: {}",
            g.busy_ratio
        );
        assert!((g.worker_cpu_s - cpu).abs() < 1e-9, "{label}");
        let per_req = g.cpu_us_per_request.expect("requests were answered");
        assert!(
            (per_req - 0.4e6 / sends as f64).abs() < 1e-6,
            "{label}: {per_req}"
        );
        let open = cfg.model == Model::Open;
        assert_eq!(g.intended_rate.is_some(), open, "{label}");
        assert_eq!(g.max_send_lag_ms.is_some(), open, "{label}");
        assert_eq!(g.timer, open.then_some("timerfd"), "{label}");
    }
}

#[test]
fn verdict_counts_what_never_went_out_or_never_came_back() {
    let open = checked(r#"{"url":"http://h/","rate":1000,"duration_s":10,"max_connections":50}"#);
    let names = vec!["GET /".to_string()];
    // label, edit, limit, verdict has
    type Edit = fn(&mut Totals);
    let cases: [(&str, Edit, Limit, &str); 5] = [
        (
            "unsent under a kept schedule",
            |t| t.unsent = 12,
            Limit::Generator,
            "12 hits due before the end were never sent",
        ),
        (
            "unsent at the cap",
            |t| {
                t.unsent = 12;
                t.cap_reached = true;
            },
            Limit::Pool,
            "12 hits due before the end were never sent",
        ),
        (
            "unfinished",
            |t| t.unfinished = 7,
            Limit::Server,
            "7 requests were unfinished at the cut-off (in the latency figures at their age then: the tail is a lower bound)",
        ),
        (
            "clamped",
            |t| t.clamped = 2,
            Limit::Server,
            "2 latencies exceeded the histogram's",
        ),
        (
            "coarse timer",
            |t| t.coarse_timer = true,
            Limit::Server,
            "no timerfd: sends were timed by the runtime's 1 ms timer",
        ),
    ];
    for (label, edit, limit, says) in cases {
        let mut f = facts(&open, &names, 9_990, 1.0, 10);
        edit(&mut f.totals);
        let coarse = f.totals.coarse_timer;
        let r = build_report(f);
        assert_eq!(r.generator.limit, limit, "{label}: {}", r.generator.verdict);
        assert!(
            r.generator.verdict.contains(says),
            "{label}: {:?} lacks {says:?}",
            r.generator.verdict
        );
        let timer = if coarse { "runtime_ms" } else { "timerfd" };
        assert_eq!(r.generator.timer, Some(timer), "{label}");
    }
}

#[test]
fn report_books_add_up_to_what_was_intended() {
    let open = checked(r#"{"url":"http://h/","rate":1000,"duration_s":10}"#);
    let names = vec!["GET /".to_string()];
    let mut f = facts(&open, &names, 9_990, 1.0, 10);
    let t = &mut f.totals;
    t.requests = 9_000; // 20 of them answered 500
    t.errors.status = 20;
    t.errors.timeout = 30;
    t.errors.reset = 10;
    t.unfinished = 5;
    t.unsent = 955;
    t.started = 9_045;
    t.retries = 3;
    t.clamped = 1;
    let r = build_report(f);
    assert_eq!(
        (r.intended, r.unfinished, r.unsent, r.retries, r.clamped),
        (10_000, 5, 955, 3, 1)
    );
    let transport = r.errors_total - r.errors.status;
    assert_eq!(r.requests + transport + r.unfinished + r.unsent, r.intended);
}

#[test]
fn report_json_has_the_contract_keys() {
    let cfg = checked(r#"{"url":"http://h/x","rate":5,"duration_s":1}"#);
    let names = vec!["GET /x".to_string()];
    let r = build_report(facts(&cfg, &names, 5, 0.1, 1));
    let v = serde_json::to_value(&r).expect("serialises");
    for key in [
        "version",
        "url",
        "method",
        "model",
        "threads",
        "connections",
        "interrupted",
        "duration_s",
        "requests",
        "intended",
        "unfinished",
        "unsent",
        "retries",
        "clamped",
        "rps",
        "bytes_in",
        "bytes_out",
        "transfer_in_per_s",
        "status_codes",
        "non_2xx",
        "errors",
        "errors_total",
        "connects",
        "latency_ms",
        "uncorrected_latency_ms",
        "lag_ms",
        "per_name",
        "timeseries",
        "generator",
        "histograms",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    for key in [
        "connect", "timeout", "read", "write", "reset", "protocol", "status",
    ] {
        assert!(v["errors"].get(key).is_some(), "missing errors.{key}");
    }
    for key in [
        "min", "mean", "stdev", "p50", "p75", "p90", "p99", "p99_9", "p99_99", "max",
    ] {
        assert!(
            v["latency_ms"].get(key).is_some(),
            "missing latency_ms.{key}"
        );
    }
    assert_eq!(v["model"], "open");
    assert!(v["per_name"].get("GET /x").is_some());
}

#[test]
fn verdict_mentions_late_sends_even_when_the_rate_was_met() {
    let open = checked(r#"{"url":"http://h/","rate":1000,"duration_s":10,"max_connections":50}"#);
    let names = vec!["GET /".to_string()];
    let mut f = facts(&open, &names, 9_990, 1.0, 50);
    f.totals.late_sends = 500;
    f.totals.late_at_cap = 500;
    f.totals.max_send_lag_us = 250_000;
    let g = build_report(f).generator;
    assert!(!g.saturated, "{}", g.verdict);
    assert!(
        g.verdict
            .contains("5% of requests left late (worst 250 ms, all connections busy)"),
        "{}",
        g.verdict
    );
}
