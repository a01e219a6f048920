//! `redline-target`: run the target server until SIGINT or SIGTERM.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use redline_target::{
    Capacity, Contention, Pause, RateLimit, Target, TargetConfig, TargetError, TlsFiles,
};

/// Args are the command line: where to listen and with how many threads.
#[derive(Debug, Parser)]
#[command(
    name = "redline-target",
    version,
    about = "redline's target HTTP server (behaviour by query: size, latency, status, stall, ...)"
)]
struct Args {
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to bind (0 = any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Serving threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Serve https with this certificate chain (PEM); needs --tls-key.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// Offer HTTP/2 over https by ALPN (h2c with prior knowledge is always answered).
    #[arg(long, requires = "tls_cert")]
    http2: bool,
    /// Serve at most N requests at once (the rest wait, first come first served); with
    /// --service-time S the server completes at most N / S requests a second.
    #[arg(long, requires = "service_time", value_name = "N")]
    capacity: Option<usize>,
    /// How long each request is served alone, e.g. 10ms (with --capacity or --contention).
    #[arg(long, value_name = "DURATION")]
    service_time: Option<String>,
    /// With --capacity: a request that would wait when Q already wait gets 503 at once
    /// (Retry-After: 1); accepted throughput stays N / S.
    #[arg(long, requires = "capacity", value_name = "Q")]
    queue_limit: Option<usize>,
    /// With --capacity: stop serving for D out of every P, e.g. 50ms/1s; capacity becomes
    /// N / S x (1 - D/P).
    #[arg(long, requires = "capacity", value_name = "D/P")]
    pause: Option<String>,
    /// Requests in service slow each other (USL crosstalk KAPPA): with n in service each takes
    /// S x (1 + SIGMA(n-1) + KAPPA n(n-1)); N users get N / (S f(N)), peaking at
    /// sqrt((1-SIGMA)/KAPPA). Needs --service-time.
    #[arg(
        long,
        requires = "service_time",
        conflicts_with = "capacity",
        value_name = "KAPPA"
    )]
    contention: Option<f64>,
    /// With --contention: the serialised share SIGMA (default 0).
    #[arg(long, requires = "contention", value_name = "SIGMA")]
    serial: Option<f64>,
    /// A token bucket in front: R requests a second pass, the rest get 503 with Retry-After.
    #[arg(long, value_name = "R")]
    rate_limit: Option<f64>,
    /// With --rate-limit: the bucket's size B (default 1).
    #[arg(long, requires = "rate_limit", value_name = "B")]
    burst: Option<u32>,
    /// With --rate-limit: the status of refused requests (default 503; 429 is common).
    #[arg(long, requires = "rate_limit", value_name = "STATUS")]
    refuse_status: Option<u16>,
    /// The task app runs every N-th fresh submission as a failing task (FAILED); a
    /// submission with `X-Retry-Of: ID` of a failed task is counted as a resubmission.
    #[arg(long, value_name = "N")]
    fail_every: Option<u64>,
    /// Close an HTTP/1.1 connection that waits this long for its next request, e.g. 5s
    /// (uvicorn's keep-alive timeout); counted in /__stats as idle_closed.
    #[arg(long, value_name = "DURATION")]
    idle_timeout: Option<String>,
}

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(err) if !err.use_stderr() => {
            let _ = err.print();
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            let text = err.to_string();
            let mut lines = text.lines();
            let mut line = lines.next().unwrap_or("bad arguments").to_string();
            // "required arguments were not provided:" names them on the next line.
            if line.ends_with(':') {
                if let Some(next) = lines.next() {
                    line = format!("{line} {}", next.trim());
                }
            }
            eprintln!("redline-target: {}", line.trim_start_matches("error: "));
            return ExitCode::from(2);
        }
    };
    let cfg = match config(args) {
        Ok(cfg) => cfg,
        Err(err) => {
            eprintln!("redline-target: {err}");
            return ExitCode::from(2);
        }
    };
    let target = match Target::start(cfg) {
        Ok(target) => target,
        Err(err) => {
            eprintln!("redline-target: {err}");
            return ExitCode::from(2);
        }
    };
    // The handlers are in place before the line that says we listen: a SIGTERM sent as soon
    // as a caller reads it must stop us cleanly, not kill us with the default action.
    let signals = match Signals::install() {
        Ok(signals) => signals,
        Err(err) => {
            eprintln!("redline-target: cannot wait for signals: {err}");
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "listening on {}", target.url());
    let _ = stdout.flush();
    if let Err(err) = signals.wait() {
        eprintln!("redline-target: cannot wait for signals: {err}");
        return ExitCode::FAILURE;
    }
    target.stop();
    ExitCode::SUCCESS
}

/// config turns the command line into the server's configuration (values are checked by
/// `Target::start`).
fn config(args: Args) -> Result<TargetConfig, TargetError> {
    let service = args
        .service_time
        .as_deref()
        .map(Capacity::parse_service)
        .transpose()?;
    let capacity = args
        .capacity
        .zip(service)
        .map(|(slots, service)| Capacity { slots, service });
    let contention = match (args.contention, service) {
        (Some(crosstalk), Some(service)) => Some(Contention {
            service,
            crosstalk,
            serial: args.serial.unwrap_or(0.0),
        }),
        _ => None,
    };
    if service.is_some() && capacity.is_none() && contention.is_none() {
        return Err(TargetError::Capacity(
            "--service-time needs --capacity or --contention".to_string(),
        ));
    }
    let rate_limit = args.rate_limit.map(|rate| RateLimit {
        rate,
        burst: args.burst.unwrap_or(1),
        status: args.refuse_status.unwrap_or(503),
    });
    Ok(TargetConfig {
        host: args.host,
        port: args.port,
        threads: args.threads,
        tls: args
            .tls_cert
            .zip(args.tls_key)
            .map(|(cert, key)| TlsFiles { cert, key }),
        capacity,
        queue_limit: args.queue_limit,
        pause: args.pause.as_deref().map(Pause::parse).transpose()?,
        contention,
        rate_limit,
        http2: args.http2,
        h2_faults: Default::default(),
        fail_every: args.fail_every,
        idle_timeout: args
            .idle_timeout
            .as_deref()
            .map(TargetConfig::parse_idle_timeout)
            .transpose()?,
    })
}

/// Signals is SIGINT and SIGTERM (Ctrl-C elsewhere), registered on a runtime of their own.
struct Signals {
    runtime: tokio::runtime::Runtime,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    /// install registers the handlers; from then on neither signal kills the process.
    fn install() -> std::io::Result<Signals> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        #[cfg(unix)]
        let (term, int) = {
            use tokio::signal::unix::{signal, SignalKind};
            let _guard = runtime.enter();
            (
                signal(SignalKind::terminate())?,
                signal(SignalKind::interrupt())?,
            )
        };
        Ok(Signals {
            runtime,
            #[cfg(unix)]
            term,
            #[cfg(unix)]
            int,
        })
    }

    /// wait blocks until SIGINT or SIGTERM.
    fn wait(self) -> std::io::Result<()> {
        let Signals {
            runtime,
            #[cfg(unix)]
            mut term,
            #[cfg(unix)]
            mut int,
        } = self;
        runtime.block_on(async {
            #[cfg(unix)]
            {
                tokio::select! {
                    _ = int.recv() => Ok(()),
                    _ = term.recv() => Ok(()),
                }
            }
            #[cfg(not(unix))]
            {
                tokio::signal::ctrl_c().await
            }
        })
    }
}
