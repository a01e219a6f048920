//! redline_engine: the load engine behind redline.
//!
//! Thread-per-core HTTP/1.1 (and HTTPS, over rustls) load generation with a closed (VUs) and an open (arrival rate)
//! model driven by one paced loop, latency measured from the intended send time, and
//! HdrHistogram metrics merged per interval. No Python here: `crates/py` binds [`run()`].

#![warn(missing_docs)]

// Linux only. Under cargo, build.rs stops a build for another OS before rustc starts, with one
// line (rustc itself would go on to report each missing libc item after this compile_error!,
// eleven of them for macOS); this covers builds that bypass the build script.
#[cfg(not(target_os = "linux"))]
compile_error!(
    "the redline engine builds on Linux only: it uses timerfd, SO_TIMESTAMPNS and per-thread rusage \
     (RUSAGE_THREAD); build and run redline on Linux, or in a Linux container or VM"
);

pub(crate) mod backoff;
pub mod completion;
pub mod config;
pub(crate) mod conn;
pub mod control;
pub mod error;
pub mod failure;
pub mod flight;
pub mod grpc;
pub mod h2c;
pub(crate) mod handover;
pub mod hdr;
pub mod hosts;
pub mod http;
pub(crate) mod http2;
pub(crate) mod http2_body;
pub(crate) mod http2_message;
pub(crate) mod http2_stamp;
pub mod interval;
pub(crate) mod job;
pub(crate) mod lane;
pub mod message;
pub mod metrics;
pub(crate) mod metronome;
pub mod nofile;
pub mod outage;
pub mod pacer;
pub(crate) mod parts;
pub mod plan;
pub(crate) mod prepared;
pub(crate) mod proxy;
pub mod report;
pub mod run;
pub mod scenario;
pub(crate) mod sendstamp;
pub(crate) mod shared;
pub mod snapshot;
pub mod socket;
pub(crate) mod stamp;
pub mod statuses;
pub mod stream;
pub mod stream_series;
pub(crate) mod strict;
pub mod target;
pub mod tls;
pub mod totals;
pub mod usage;
pub(crate) mod wire;
pub(crate) mod worker;

pub use config::RunConfig;
pub use control::RunControl;
pub use error::EngineError;
pub use pacer::Stage;
pub use report::Report;
pub use run::run;
pub use snapshot::IntervalSnapshot;
