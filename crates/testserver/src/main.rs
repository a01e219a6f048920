//! `redline-target`: run the target server until SIGINT or SIGTERM.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use redline_target::{Capacity, Target, TargetConfig, TlsFiles};

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
    /// Serve at most N requests at once (the rest wait, first come first served); with
    /// --service-time S the server completes at most N / S requests a second.
    #[arg(long, requires = "service_time", value_name = "N")]
    capacity: Option<usize>,
    /// How long each request holds its --capacity slot, e.g. 10ms.
    #[arg(long, requires = "capacity", value_name = "DURATION")]
    service_time: Option<String>,
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
    let capacity = match (args.capacity, args.service_time) {
        (Some(slots), Some(service)) => match Capacity::parse_service(&service) {
            Ok(service) => Some(Capacity { slots, service }),
            Err(err) => {
                eprintln!("redline-target: {err}");
                return ExitCode::from(2);
            }
        },
        _ => None,
    };
    let cfg = TargetConfig {
        host: args.host,
        port: args.port,
        threads: args.threads,
        tls: args
            .tls_cert
            .zip(args.tls_key)
            .map(|(cert, key)| TlsFiles { cert, key }),
        capacity,
    };
    let target = match Target::start(cfg) {
        Ok(target) => target,
        Err(err) => {
            eprintln!("redline-target: {err}");
            return ExitCode::from(2);
        }
    };
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "listening on {}", target.url());
    let _ = stdout.flush();
    if let Err(err) = wait_for_signal() {
        eprintln!("redline-target: cannot wait for signals: {err}");
        return ExitCode::FAILURE;
    }
    target.stop();
    ExitCode::SUCCESS
}

/// wait_for_signal blocks until SIGINT or SIGTERM (Ctrl-C elsewhere).
fn wait_for_signal() -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let mut term = signal(SignalKind::terminate())?;
            tokio::select! {
                r = tokio::signal::ctrl_c() => r,
                _ = term.recv() => Ok(()),
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await
        }
    })
}
