use std::time::Duration;

use super::*;
use crate::config::RunConfig;
use crate::metrics::Totals;

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
        intended_hits: (cfg.model == Model::Open).then_some(10_000.0),
        interrupted: false,
        timeseries: Vec::new(),
    }
}

#[test]
fn generator_verdict_says_who_the_numbers_describe() {
    let open = checked(
        r#"{"url":"http://h/","rate":1000,"duration_s":10,"threads":2,"max_connections":50}"#,
    );
    let closed = checked(r#"{"url":"http://h/","connections":10,"duration_s":10,"threads":2}"#);
    let names = vec!["GET /".to_string()];
    // label, config, sends, worker cpu s (of 2 threads x 10 s), peak pool, saturated, verdict has
    let cases = [
        ("open, on schedule", &open, 9_990, 2.0, 10, false, "kept up"),
        (
            "open, 94% sent, pool full",
            &open,
            9_400,
            2.0,
            50,
            true,
            "all 50 connections were busy",
        ),
        (
            "open, behind on CPU",
            &open,
            8_000,
            19.0,
            20,
            true,
            "fell behind",
        ),
        (
            "closed, idle generator",
            &closed,
            50_000,
            4.0,
            10,
            false,
            "kept up",
        ),
        (
            "closed, busy generator",
            &closed,
            50_000,
            18.5,
            10,
            true,
            "92% busy",
        ),
    ];
    for (label, cfg, sends, cpu, peak, saturated, says) in cases {
        let r = build_report(facts(cfg, &names, sends, cpu, peak));
        let g = &r.generator;
        assert_eq!(g.saturated, saturated, "{label}: {}", g.verdict);
        assert!(
            g.verdict.contains(says),
            "{label}: {:?} lacks {says:?}",
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
        assert_eq!(
            g.intended_rate.is_some(),
            cfg.model == Model::Open,
            "{label}"
        );
    }
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
