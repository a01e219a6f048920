//! WebSocket load: N sockets each sending its next message when the last one's reply came
//! (the closed model), or messages a second across the sockets (the open model), every reply
//! matched to its message and its round trip timed into an HdrHistogram, messages counted both
//! ways, and each socket that ends early (dropped, closed by the server, timed out) counted
//! by class with the messages it lost, then opened again.
//!
//! The sockets are tokio-websockets' (`ClientBuilder::connect_on` over a tokio `TcpStream`):
//! frames carry `Bytes` payloads (an echo is read without a copy), masking is SIMD, and its
//! dependencies are the engine's own (http, httparse, base64, ring for the handshake's SHA-1);
//! tokio-tungstenite would have brought tungstenite's own stack and a `Vec` per message.
//! The sockets are spread over threads, each a current-thread runtime whose tasks share one
//! [`tally::Tally`], merged at the end. Every socket is opened before the run's clock starts
//! ([`Gate`]). `wss://` is tokio-rustls over the engine's own TLS settings (`crate::tls`:
//! `--insecure`, `--cacert`), with a preflight handshake that says in words why it fails.
//! This is not the HTTP engine's lane: nothing here touches the HTTP hot path.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant};

use crate::control::RunControl;
use crate::error::EngineError;
use crate::hdr;

pub mod books;
pub mod config;
pub(crate) mod matcher;
pub mod report;
pub(crate) mod session;
pub(crate) mod tally;

pub use config::SocketConfig;
pub use report::SocketReport;

use session::{Clock, Slot};
use tally::Tally;

/// run runs the WebSocket load `config` describes until its duration or count is done (or
/// `control` stops it) and reports what it measured; Err only when it cannot start.
pub fn run(config: &SocketConfig, control: Arc<RunControl>) -> Result<SocketReport, EngineError> {
    let plan = Arc::new(config.check()?);
    preflight(&plan)?;
    let gate = Arc::new(Gate {
        opened: Barrier::new(plan.threads),
        start: OnceLock::new(),
        control: Arc::clone(&control),
        budget: plan.messages.map(|n| Arc::new(AtomicU64::new(n))),
    });
    // A round trip cannot outlast the timeout by more than a reply's read.
    let highest_us = hdr::micros(plan.timeout + Duration::from_secs(1));
    let mut workers = Vec::with_capacity(plan.threads);
    for thread in 0..plan.threads {
        let (plan, gate) = (Arc::clone(&plan), Arc::clone(&gate));
        let worker = std::thread::Builder::new()
            .name(format!("redline-ws-{thread}"))
            .spawn(move || serve_thread(thread, &plan, &gate, highest_us))
            .map_err(|e| EngineError::Io(format!("cannot start a socket thread: {e}")))?;
        workers.push(worker);
    }
    let mut total = Tally::new(highest_us);
    for worker in workers {
        let tally = worker
            .join()
            .map_err(|_| EngineError::Internal("a socket thread panicked".into()))??;
        total.merge(&tally);
    }
    let interrupted = control.is_stopped();
    let start = gate.start.get().copied().unwrap_or_else(Instant::now);
    let counted_out = gate
        .budget
        .as_ref()
        .is_some_and(|b| b.load(Ordering::Relaxed) == 0);
    // The rates' window: the duration asked for, or up to the last send when a count or a
    // stop ended the sending first.
    let sent_over = total
        .last_send
        .map_or(0.0, |at| at.saturating_duration_since(start).as_secs_f64());
    let duration_s = match plan.duration {
        Some(d) if !interrupted && !counted_out => d.as_secs_f64(),
        _ => sent_over,
    };
    Ok(SocketReport::new(&plan, &total, duration_s, interrupted))
}

/// PREFLIGHT_WAIT bounds the `wss://` preflight's connect and handshake.
const PREFLIGHT_WAIT: Duration = Duration::from_secs(5);

/// preflight makes one TLS handshake with a `wss://` target before the run, so that a
/// certificate redline cannot trust (or a server that does not speak TLS) is one line in
/// words, as for https, not a run of `connect` errors. A server that cannot be reached at all
/// is left to the run, which counts its connect errors as for `ws://`.
fn preflight(plan: &config::Plan) -> Result<(), EngineError> {
    let Some(tls) = &plan.tls else {
        return Ok(());
    };
    let wait = plan.timeout.min(PREFLIGHT_WAIT);
    let Ok(stream) = std::net::TcpStream::connect_timeout(&plan.addr, wait) else {
        return Ok(());
    };
    tls.preflight(stream, wait, crate::tls::Alpn::Http1)
        .map(|_| ())
        .map_err(|why| {
            let at = plan.uri.authority().map_or("", |a| a.as_str());
            EngineError::Unreachable(format!(
                "TLS handshake with {at} failed: {why}{}",
                crate::tls::hint(&why)
            ))
        })
}

/// Gate starts the run's clock once every thread has opened its sockets: the handshakes of
/// a thousand sockets are not timed as the first messages' round trips, and the open model's
/// schedule starts with its sockets there to send.
struct Gate {
    opened: Barrier,
    start: OnceLock<Instant>,
    control: Arc<RunControl>,
    budget: Option<Arc<AtomicU64>>,
}

/// serve_thread opens socket `thread`, `thread + threads`, ... on one current-thread runtime,
/// waits at the gate for the other threads, runs them and gives their tally.
fn serve_thread(
    thread: usize,
    plan: &Arc<config::Plan>,
    gate: &Gate,
    highest_us: u64,
) -> Result<Tally, EngineError> {
    let built = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let runtime = match built {
        Ok(runtime) => runtime,
        Err(e) => {
            // The other threads wait at the gate for this one: let them through first.
            gate.opened.wait();
            return Err(EngineError::Io(format!(
                "cannot build a socket runtime: {e}"
            )));
        }
    };
    let tally = Rc::new(RefCell::new(Tally::new(highest_us)));
    let local = tokio::task::LocalSet::new();
    let plan_rc = Rc::new((**plan).clone());
    let indexes: Vec<u64> = (thread as u64..plan.sockets)
        .step_by(plan.threads)
        .collect();
    let opened = local.block_on(&runtime, async {
        let opening: Vec<_> = indexes
            .iter()
            .map(|_| {
                let plan = Rc::clone(&plan_rc);
                tokio::task::spawn_local(async move { session::open(&plan).await })
            })
            .collect();
        let mut opened = Vec::with_capacity(opening.len());
        for task in opening {
            opened.push(task.await.unwrap_or(Err(tally::End::Connect)));
        }
        opened
    });
    gate.opened.wait();
    let start = *gate.start.get_or_init(Instant::now);
    let clock_rc = Rc::new(Clock {
        start,
        end: plan.duration.map(|d| start + d),
        control: Arc::clone(&gate.control),
        budget: gate.budget.clone(),
    });
    local.block_on(&runtime, async {
        let mut tasks = Vec::new();
        for (index, first) in indexes.into_iter().zip(opened) {
            let slot = Slot {
                index,
                plan: Rc::clone(&plan_rc),
                tally: Rc::clone(&tally),
                clock: Rc::clone(&clock_rc),
            };
            tasks.push(tokio::task::spawn_local(slot.run(first)));
        }
        for task in tasks {
            // A socket task only ends by returning; a panic in one is reported below.
            if task.await.is_err() {
                return Err(EngineError::Internal("a socket task panicked".into()));
            }
        }
        Ok(())
    })?;
    let tally = tally.replace(Tally::new(1));
    Ok(tally)
}
