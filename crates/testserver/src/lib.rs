//! redline-target: the small HTTP server bundled with redline for its tests, benchmarks and
//! demos. Behaviour is chosen per request by query parameters on any path:
//!
//! - `size=N` body of N bytes; `chunked=1` chunked framing;
//! - `latency=20ms`, `latency=uniform:10ms..50ms`, `latency=exp:20ms`,
//!   `latency=lognormal:20ms:0.5`;
//! - `status=500&p=0.1` (or `p500=0.1`, several allowed) status injection;
//! - `stall=1s/5s` holds every response during the first 1 s of every 5 s;
//! - `close=1`, `reset=P` (abort with RST), `hang=1` (never answer);
//!
//! plus `/api/work` (a flaky upstream), `/__stats` (the server's own counters, as JSON) and a
//! survey form app: `GET /form` (a form and a `session` cookie), `POST /form` (302 to `/thanks`
//! with the cookie and fields `name` and `rating`, else 403 or 400), `GET /thanks` (see
//! `form.rs`), and a task app with seed 000's task-queue API: `POST /tasks/submissions`,
//! `GET /tasks/submissions/ID` (RUNNING for 2 ms, then SUCCEEDED, or FAILED for
//! `{"type":"fail"}`), `GET /tasks/ID` (see `task.rs`); `/redirect?to=URL` (a 302 to URL:
//! another server, for flows across hosts); and streamed answers (see
//! `stream.rs`): `/sse?first=200ms&every=20ms&events=50` (server-sent events, the first after
//! `first`, then one every `every`) and OpenAI-compatible `POST /v1/chat/completions` and
//! `/v1/completions` (`"stream": true`: one token an event at `first=`/`every=`, `tokens=`
//! or the body's `max_tokens` of them, then `data: [DONE]`); and a WebSocket echo
//! (`socket.rs`): `/ws?delay=50ms` sends each message back 50 ms after it arrived (`drop=N`,
//! `close_after=N&code=C` end the socket after N echoes); and a gRPC probe over HTTP/2
//! (`grpc.rs`, `examples/grpc/probe.proto`): `redline.probe.Probe/Unary` answers `delay_ms`
//! after the call, `/Stream` sends `count` messages, the first at `first_ms`, then one every
//! `gap_ms`, each call ending with the status code `status`, or DEADLINE_EXCEEDED at the
//! deadline its `grpc-timeout` gives.
//!
//! Server-wide, [`TargetConfig::capacity`] (`--capacity N --service-time S`) makes the server a
//! queue of known throughput: at most N requests in service at once, each for exactly S, the
//! rest waiting in arrival order, so it completes at most N / S requests a second. A request's
//! own `latency=`/`stall=` delays come first and hold no slot; `/__stats` never queues. The
//! other probes, each with its truth derived in its module:
//!
//! - [`TargetConfig::queue_limit`] (`--queue-limit Q`, load shedding): beyond Q waiting, 503
//!   with `Retry-After: 1` at once; accepted throughput stays N / S.
//! - [`TargetConfig::pause`] (`--pause D/P`, noise): the slots stop for D of every P, capacity
//!   (N / S)·(1 − D / P).
//! - [`TargetConfig::contention`] (`--contention KAPPA [--serial SIGMA] --service-time S`):
//!   requests slow each other (USL), so N closed-loop users get N / (S·(1 + σ(N − 1) +
//!   κN(N − 1))), peaking at N* = √((1 − σ)/κ); the open model collapses past the peak.
//! - [`TargetConfig::rate_limit`] (`--rate-limit R --burst B`): a token bucket in front of
//!   everything; beyond it 503 (or `--refuse-status`) with `Retry-After`; accepted rate R.
//! - [`TargetConfig::idle_timeout`] (`--idle-timeout T`): an HTTP/1.1 connection waiting T
//!   for its next request is closed, as a keep-alive timeout does (`idle_closed`).
//!
//! ```no_run
//! use redline_target::{Target, TargetConfig};
//! let target = Target::start(TargetConfig::default())?;
//! println!("{}/anything?latency=20ms", target.url());
//! target.stop();
//! # Ok::<(), redline_target::TargetError>(())
//! ```

#![warn(missing_docs)]

// Linux only, like the engine it is built beside (one wheel): off Linux its delays would fall
// back to tokio's 1 ms timer (sleep.rs) and the tests that time the engine against them would
// fail for the wrong reason. Under cargo, build.rs stops such a build first with one line; this
// covers builds that bypass the build script.
#[cfg(not(target_os = "linux"))]
compile_error!(
    "redline's test server builds on Linux only, like the engine: its sub-millisecond delays \
     use timerfd; build and run redline on Linux, or in a Linux container or VM"
);

mod bucket;
mod capacity;
mod config;
mod conn;
mod contention;
mod error;
mod form;
mod grpc;
mod http2;
mod latency;
mod pause;
mod request;
mod response;
mod route;
mod server;
mod shared;
mod sleep;
mod socket;
mod stats;
mod stream;
mod task;
mod tls;

pub use bucket::{RateLimit, MAX_BURST, MAX_RATE};
pub use capacity::{Capacity, MAX_SLOTS};
pub use config::H2Faults;
pub use config::{TargetConfig, TlsFiles, MAX_QUEUE_LIMIT};
pub use contention::{Contention, MAX_COEFFICIENT};
pub use error::TargetError;
pub use pause::Pause;
pub use server::Target;
pub use stats::TargetStats;
