//! run: drive the engine without Python, for benchmarks and debugging.
//!
//! `cargo run --release --example run -- URL [-c N] [-d SECS] [-n N] [--rate R] [-t THREADS]
//! [--max-connections N] [--timeout SECS] [--warmup SECS] [--stages 5:100,10:100 [--open]]
//! [--json] [--quiet]`

use std::sync::Arc;

use redline_engine::{run, RunConfig, RunControl, Stage};

/// out prints to stdout, ignoring a closed pipe (`| head`).
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

fn parse_args() -> Result<(RunConfig, bool, bool), String> {
    let mut cfg = RunConfig::default();
    let (mut json, mut quiet) = (false, false);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        let num = |s: String| {
            s.parse::<f64>()
                .map_err(|e| format!("bad number {s:?}: {e}"))
        };
        match a.as_str() {
            "-c" => cfg.connections = num(val("-c")?)? as i64,
            "-d" => cfg.duration_s = Some(num(val("-d")?)?),
            "-n" => cfg.requests = Some(num(val("-n")?)? as i64),
            "--rate" => cfg.rate = Some(num(val("--rate")?)?),
            "-t" => cfg.threads = Some(num(val("-t")?)? as i64),
            "--max-connections" => {
                cfg.max_connections = Some(num(val("--max-connections")?)? as i64)
            }
            "--timeout" => cfg.timeout_s = num(val("--timeout")?)?,
            "--warmup" => cfg.warmup_s = num(val("--warmup")?)?,
            "--stages" => cfg.stages = Some(parse_stages(&val("--stages")?)?),
            "--open" => cfg.open = true,
            "--json" => json = true,
            "--quiet" => quiet = true,
            u if !u.starts_with('-') => cfg.url = u.to_string(),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if cfg.duration_s.is_none() && cfg.requests.is_none() && cfg.stages.is_none() {
        cfg.duration_s = Some(10.0);
    }
    Ok((cfg, json, quiet))
}

/// parse_stages reads `SECS:TARGET,SECS:TARGET,...`.
fn parse_stages(s: &str) -> Result<Vec<Stage>, String> {
    s.split(',')
        .map(|leg| {
            let (d, t) = leg
                .split_once(':')
                .ok_or(format!("bad stage {leg:?}, want SECS:TARGET"))?;
            let n = |x: &str| {
                x.trim()
                    .parse::<f64>()
                    .map_err(|e| format!("bad stage {leg:?}: {e}"))
            };
            Ok(Stage {
                duration_s: n(d)?,
                target: n(t)?,
            })
        })
        .collect()
}

fn main() {
    let (cfg, json, quiet) = match parse_args() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let control = Arc::new(RunControl::new());
    let mut show = |s: &redline_engine::IntervalSnapshot| {
        if !quiet {
            eprintln!(
                "t={:6.1}s req={:7} err={:4} p50={:7.2}ms p99={:7.2}ms conns={}",
                s.t_s,
                s.requests,
                s.errors,
                s.latency.p50_ms,
                s.latency.p99_ms,
                s.active_connections
            );
        }
    };
    match run(cfg, control, &mut show) {
        Ok(r) if json => out!("{}", serde_json::to_string_pretty(&r).unwrap_or_default()),
        Ok(r) => {
            let l = r.latency_ms;
            out!(
                "{} requests in {:.2}s, {:.0} req/s, errors {}",
                r.requests,
                r.duration_s,
                r.rps,
                r.errors_total
            );
            out!(
                "latency ms: mean {:.3} p50 {:.3} p90 {:.3} p99 {:.3} max {:.3}",
                l.mean,
                l.p50,
                l.p90,
                l.p99,
                l.max
            );
            if let Some(u) = r.uncorrected_latency_ms {
                out!(
                    "uncorrected ms: p50 {:.3} p99 {:.3} max {:.3}",
                    u.p50,
                    u.p99,
                    u.max
                );
            }
            let g = &r.generator;
            out!(
                "cpu {:.3}s (user {:.3} sys {:.3}) = {:.2} us/req; {}",
                g.cpu_s,
                g.user_s,
                g.sys_s,
                g.cpu_us_per_request.unwrap_or(0.0),
                g.verdict
            );
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
